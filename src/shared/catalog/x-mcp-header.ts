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
/** Subschema positions that are not a `properties` chain (an annotation below them is invalid), by shape. */
const SUBSCHEMA: ReadonlyMap<string, 'single' | 'list' | 'map'> = new Map([
  ...['items', 'contains', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'propertyNames', 'not', 'if', 'then', 'else', 'additionalItems'].map((k) => [k, 'single'] as const),
  ...['prefixItems', 'allOf', 'anyOf', 'oneOf'].map((k) => [k, 'list'] as const),
  ...['patternProperties', 'dependentSchemas', '$defs', 'definitions'].map((k) => [k, 'map'] as const),
]);
/** Bounds the walk (the manifest check already bounds nesting; this keeps the scan linear on its own). */
const MAX_DEPTH = 64;

/** Lowercase header-name prefix of mirrored arguments. */
export const MCP_PARAM_PREFIX = 'mcp-param-';

/** Scans `inputSchema` for `x-mcp-header` annotations. */
export function scanHeaderParams(inputSchema: Record<string, unknown>): HeaderParamScan {
  const params: HeaderParam[] = [];
  const seen = new Map<string, string>();
  // One path array for the whole walk (pushed and popped around each child): the walk allocates only for
  // what it reports, not per schema node and keyword (a catalog build scans every tool's schema twice).
  const path: string[] = [];
  const child = (node: unknown, key: string, reachable: boolean, depth: number): string | null => {
    if (typeof node !== 'object' || node === null) return null;
    path.push(key);
    const problem = visit(node, reachable, depth);
    path.pop();
    return problem;
  };
  const visit = (node: unknown, reachable: boolean, depth: number): string | null => {
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
    // One pass over the node's own keywords (a handful), not a lookup of each of the ~20 subschema keywords.
    for (const k in schema) {
      if (!Object.hasOwn(schema, k)) continue;
      const kind = k === 'properties' ? 'properties' : SUBSCHEMA.get(k);
      if (kind === undefined) continue;
      const value = schema[k];
      if (kind === 'single') {
        const problem = child(value, k, false, depth + 1);
        if (problem !== null) return problem;
        continue;
      }
      if (kind === 'list') {
        if (!Array.isArray(value)) continue;
        path.push(k);
        for (let i = 0; i < value.length; i++) {
          const problem = child(value[i], String(i), false, depth + 1);
          if (problem !== null) return problem;
        }
        path.pop();
        continue;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
      // `properties` keeps reachability; a map keyword (`$defs`, …) ends it.
      if (kind === 'map') path.push(k);
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        const problem = child((value as Record<string, unknown>)[key], key, kind === 'properties' && reachable, depth + 1);
        if (problem !== null) return problem;
      }
      if (kind === 'map') path.pop();
    }
    return null;
  };
  const problem = visit(inputSchema, true, 0);
  return problem === null ? { ok: true, params } : { ok: false, problem };
}
