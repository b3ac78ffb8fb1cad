/**
 * Tool Service manifest v1 (docs/contracts/tool-service-manifest-v1.md): its
 * schema and the validation that turns one raw manifest into
 * {@link CatalogTool}s. Everything here comes from outside the gateway, so
 * nothing is trusted before `Check` passes.
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { normaliseOrigin } from '../config/load.js';
import type { ServiceEntry } from '../config/schema.js';
import { deeperThan, shortPointer } from './json-depth.js';
import { jsonSchemaProblems } from './json-schema-check.js';
import type { CatalogTool } from './types.js';

/** MCP tool-name rule: 1–128 of A-Z a-z 0-9 _ - . */
export const TOOL_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,128}$';

const JsonObject = Type.Record(Type.String(), Type.Unknown());

const ToolSchema = Type.Object({
  name: Type.String({ pattern: TOOL_NAME_PATTERN }),
  version: Type.String({ minLength: 1, maxLength: 64 }),
  active: Type.Optional(Type.Boolean()),
  title: Type.Optional(Type.String({ maxLength: 512 })),
  description: Type.Optional(Type.String({ maxLength: 65_536 })),
  inputSchema: JsonObject,
  outputSchema: Type.Optional(JsonObject),
  annotations: Type.Optional(JsonObject),
  timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400_000 })),
  execution: Type.Union([
    Type.Object({ path: Type.String({ pattern: '^/', maxLength: 2048 }) }, { additionalProperties: false }),
    Type.Object({ url: Type.String({ minLength: 1, maxLength: 2048 }) }, { additionalProperties: false }),
  ]),
});

/** Manifest v1. Unknown fields are allowed (compatible extension) and ignored. */
export const ManifestSchema = Type.Object({
  service: Type.String({ minLength: 1, maxLength: 128 }),
  tools: Type.Array(ToolSchema, { maxItems: 10_000 }),
});

const manifestValidator = Compile(ManifestSchema);

/**
 * Deepest nesting accepted anywhere in one tool definition. A schema may nest
 * 64 schema levels (json-schema-check), about two JSON levels each; past a few
 * thousand levels encoding the snapshot would overflow the stack.
 */
export const MAX_TOOL_NESTING = 256;

/** Limits and policy the validation needs from the config. */
export interface ManifestPolicy {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  allowedExecutionOrigins: readonly string[];
}

/** Validation outcome: the tools, or every problem found (each naming its place). */
export type ManifestResult = { ok: true; tools: CatalogTool[] } | { ok: false; problems: string[] };

/** Validates one raw manifest of `entry` and resolves its execution addresses. */
export function validateManifest(raw: unknown, entry: ServiceEntry, policy: ManifestPolicy): ManifestResult {
  if (!manifestValidator.Check(raw)) {
    const problems = manifestValidator
      .Errors(raw)
      .filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'boolean')
      .slice(0, 20)
      .map((e) => `${e.instancePath || '/'}: ${e.message}`);
    return { ok: false, problems: problems.length > 0 ? problems : ['manifest does not match the v1 schema'] };
  }
  const problems: string[] = [];
  const serviceOrigin = normaliseOrigin(entry.baseUrl);
  const allowed = new Set(policy.allowedExecutionOrigins.map((o) => normaliseOrigin(o)));
  const seen = new Set<string>();
  const tools: CatalogTool[] = [];
  raw.tools.forEach((t, i) => {
    const at = `/tools/${i} (${t.name}@${t.version})`;
    const deep = deeperThan(t, MAX_TOOL_NESTING);
    if (deep !== null) {
      problems.push(`${at}: nests deeper than ${MAX_TOOL_NESTING} levels at ${shortPointer(deep)}`);
      return;
    }
    const key = `${t.name}\u0000${t.version}`;
    if (seen.has(key)) problems.push(`${at}: duplicate name and version`);
    seen.add(key);
    if (t.inputSchema['type'] !== 'object') problems.push(`${at}/inputSchema: must be a JSON Schema object with "type": "object"`);
    else problems.push(...jsonSchemaProblems(t.inputSchema, { validatesArguments: true }).map((p) => `${at}/inputSchema${p}`));
    if (t.outputSchema !== undefined && t.outputSchema['type'] !== 'object') {
      problems.push(`${at}/outputSchema: must be a JSON Schema object with "type": "object"`);
    } else if (t.outputSchema !== undefined) problems.push(...jsonSchemaProblems(t.outputSchema).map((p) => `${at}/outputSchema${p}`));
    const executionUrl = resolveExecution(t.execution, entry.baseUrl, serviceOrigin, allowed);
    if (typeof executionUrl !== 'string') {
      problems.push(`${at}/execution: ${executionUrl.problem}`);
      return;
    }
    tools.push({
      name: t.name,
      version: t.version,
      active: t.active ?? true,
      serviceId: entry.id,
      ...(t.title !== undefined ? { title: t.title } : {}),
      ...(t.description !== undefined ? { description: t.description } : {}),
      inputSchema: t.inputSchema,
      ...(t.outputSchema !== undefined ? { outputSchema: t.outputSchema } : {}),
      ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
      timeoutMs: Math.min(t.timeoutMs ?? policy.defaultTimeoutMs, policy.maxTimeoutMs),
      executionUrl,
    });
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tools };
}

/**
 * An execution address must stay on its Tool Service's origin unless the
 * allow-list names the other origin: a manifest must not turn the gateway
 * into an SSRF proxy.
 */
function resolveExecution(
  execution: { path: string } | { url: string },
  baseUrl: string,
  serviceOrigin: string | null,
  allowed: ReadonlySet<string | null>,
): string | { problem: string } {
  if ('path' in execution) {
    if (execution.path.startsWith('//')) return { problem: 'path must not start with "//"' };
    const base = new URL(baseUrl);
    const basePath = base.pathname.endsWith('/') ? base.pathname.slice(0, -1) : base.pathname;
    const url = new URL(basePath + execution.path, base.origin);
    if (url.origin !== serviceOrigin) return { problem: 'path leaves the Tool Service origin' };
    return url.href;
  }
  const origin = normaliseOrigin(execution.url);
  if (origin === null) return { problem: 'url must be an absolute http(s) URL' };
  if (origin !== serviceOrigin && !allowed.has(origin)) {
    return { problem: `url origin ${origin} is neither the Tool Service origin nor in tools.allowedExecutionOrigins` };
  }
  return new URL(execution.url).href;
}
