/**
 * `x-mcp-header` annotations of a tool's `inputSchema` (2026-07-28,
 * basic/transports/streamable-http.mdx "Custom Headers from Tool
 * Parameters", server/tools.mdx "x-mcp-header"): which arguments a client
 * mirrors into `Mcp-Param-{Name}` headers, and whether the annotations keep
 * the spec's constraints. A tool whose annotations break them is refused at
 * catalog build (clients MUST exclude such a tool; the gateway says so first,
 * with the reason in readiness).
 *
 * Constraints checked: a non-empty RFC 9110 token; case-insensitively unique
 * per schema; only on `string` / `integer` / `boolean` properties (`number`
 * is not permitted); only on properties reachable from the root through a
 * chain of `properties` keys — an annotation under `items`, a combinator, a
 * conditional, `$defs`, … makes the definition invalid.
 */

/** One mirrored argument. */
export interface HeaderParam {
  /** Header name suffix as declared (`Region` → `Mcp-Param-Region`). */
  readonly name: string;
  /** Lowercase full header name, as uWS reports header names. */
  readonly header: string;
  /** The chain of `properties` keys from the argument root. */
  readonly path: readonly string[];
  readonly type: 'string' | 'integer' | 'boolean';
}

/** Scan outcome: the declarations, or the first broken constraint. */
export type HeaderParamScan = { ok: true; params: HeaderParam[] } | { ok: false; problem: string };

const KEY = 'x-mcp-header';
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TYPES = new Set(['string', 'integer', 'boolean']);
/** Subschema positions that are not a `properties` chain (an annotation below them is invalid). */
const SINGLE = ['items', 'contains', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'not', 'if', 'then', 'else', 'additionalItems'] as const;
const LISTS = ['prefixItems', 'allOf', 'anyOf', 'oneOf'] as const;
const MAPS = ['patternProperties', 'dependentSchemas', '$defs', 'definitions'] as const;
/** Bounds the walk (the manifest check already bounds nesting; this keeps the scan linear on its own). */
const MAX_DEPTH = 64;

/** Lowercase header-name prefix of mirrored arguments. */
export const MCP_PARAM_PREFIX = 'mcp-param-';

/** Scans `inputSchema` for `x-mcp-header` annotations. */
export function scanHeaderParams(inputSchema: Record<string, unknown>): HeaderParamScan {
  const params: HeaderParam[] = [];
  const seen = new Map<string, string>();
  const visit = (node: unknown, path: string[], reachable: boolean, depth: number): string | null => {
    if (typeof node !== 'object' || node === null || Array.isArray(node) || depth > MAX_DEPTH) return null;
    const schema = node as Record<string, unknown>;
    if (KEY in schema) {
      const where = path.length === 0 ? '/' : `/${path.join('/')}`;
      if (!reachable || path.length === 0) {
        return `${where}: ${KEY} is only allowed on properties reached from the root through "properties" (not under items, combinators, conditionals or $defs)`;
      }
      const name = schema[KEY];
      if (typeof name !== 'string' || !TOKEN.test(name)) return `${where}: ${KEY} must be a non-empty HTTP token, got ${JSON.stringify(name)}`;
      const type = schema['type'];
      if (typeof type !== 'string' || !TYPES.has(type)) {
        return `${where}: ${KEY} is only allowed on string, integer or boolean properties, got type ${JSON.stringify(type ?? null)}`;
      }
      const lower = name.toLowerCase();
      const prior = seen.get(lower);
      if (prior !== undefined) return `${where}: ${KEY} "${name}" is not unique (also declared as "${prior}")`;
      seen.set(lower, name);
      params.push({ name, header: MCP_PARAM_PREFIX + lower, path: [...path], type: type as HeaderParam['type'] });
    }
    const properties = schema['properties'];
    if (typeof properties === 'object' && properties !== null && !Array.isArray(properties)) {
      for (const [key, child] of Object.entries(properties)) {
        const problem = visit(child, [...path, key], reachable, depth + 1);
        if (problem !== null) return problem;
      }
    }
    for (const k of SINGLE) {
      const problem = visit(schema[k], [...path, k], false, depth + 1);
      if (problem !== null) return problem;
    }
    for (const k of LISTS) {
      const list = schema[k];
      if (!Array.isArray(list)) continue;
      for (const [i, child] of list.entries()) {
        const problem = visit(child, [...path, k, String(i)], false, depth + 1);
        if (problem !== null) return problem;
      }
    }
    for (const k of MAPS) {
      const map = schema[k];
      if (typeof map !== 'object' || map === null || Array.isArray(map)) continue;
      for (const [key, child] of Object.entries(map)) {
        const problem = visit(child, [...path, k, key], false, depth + 1);
        if (problem !== null) return problem;
      }
    }
    return null;
  };
  const problem = visit(inputSchema, [], true, 0);
  return problem === null ? { ok: true, params } : { ok: false, problem };
}
