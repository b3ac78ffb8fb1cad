/**
 * Tool Service manifest v1.1 (docs/contracts/tool-service-manifest-v1.md): its
 * schema and the validation that turns one raw manifest into
 * {@link CatalogTool}s. Everything here comes from outside the gateway, so
 * nothing is trusted before `Check` passes.
 *
 * Two kinds of problems: those that refuse the whole manifest (its shape, a
 * schema that is not a JSON Schema, an execution address off the service's
 * origin, …) and those that refuse one tool only, reported with the reason
 * ({@link RefusedTool}) while the others serve: a name outside SEP-986 (under
 * `catalog.toolNamePolicy: refuse-tool`), invalid `x-mcp-header` annotations,
 * an icon that is not `https:` or `data:` — MCP clients must exclude such a
 * tool themselves, so the gateway does it first and says why.
 */
import { Type, Compile } from '../vendor/typebox.js';
import { normaliseOrigin } from '../config/origin.js';
import type { ServiceEntry } from '../config/schema.js';
import { deeperThan, shortPointer } from './json-depth.js';
import { jsonSchemaProblems } from './json-schema-check.js';
import type { CatalogTool, ToolIcon } from './types.js';
import { scanHeaderParams } from './x-mcp-header.js';

/** MCP tool-name rule (SEP-986, server/tools.mdx "Tool Names"): 1–128 of A-Z a-z 0-9 _ - . */
export const TOOL_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,128}$';
const toolNameRe = new RegExp(TOOL_NAME_PATTERN);

const JsonObject = Type.Record(Type.String(), Type.Unknown());
const Path = Type.String({ pattern: '^/', maxLength: 2048 });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const TaskSupport = Type.Union([Type.Literal('forbidden'), Type.Literal('optional'), Type.Literal('required')]);

const ToolSchema = Type.Object({
  // Any string: a name outside SEP-986 refuses the tool (or the manifest), with its own message.
  name: Type.String({ maxLength: 1024 }),
  version: Type.String({ minLength: 1, maxLength: 64 }),
  active: Type.Optional(Type.Boolean()),
  title: Type.Optional(Type.String({ maxLength: 512 })),
  description: Type.Optional(Type.String({ maxLength: 65_536 })),
  icons: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 64 })),
  inputSchema: JsonObject,
  outputSchema: Type.Optional(JsonObject),
  annotations: Type.Optional(JsonObject),
  _meta: Type.Optional(JsonObject),
  timeoutMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400_000 })),
  /**
   * The execution address (`path` or `url`) — and/or MCP 2025-11-25's own
   * `taskSupport`, which a Tool Service copying its MCP tool definitions may
   * carry. Closed: anything else is a typo.
   */
  execution: Type.Optional(Type.Object({ path: Type.Optional(Path), url: Type.Optional(Url), taskSupport: Type.Optional(TaskSupport) }, { additionalProperties: false })),
  /** v1.1: the execution address under a name MCP does not use (for tools whose `execution` is MCP's object). */
  executionAddress: Type.Optional(Type.Union([Type.Object({ path: Path }, { additionalProperties: false }), Type.Object({ url: Url }, { additionalProperties: false })])),
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
  /** `catalog.toolNamePolicy` (default `refuse-tool`). */
  toolNamePolicy?: 'refuse-tool' | 'refuse-manifest';
}

/** One tool left out of a valid manifest, and why (readiness shows it). */
export interface RefusedTool {
  name: string;
  version: string;
  problem: string;
}

/** Validation outcome: the tools (and the tools refused one by one), or every problem found (each naming its place). */
export type ManifestResult = { ok: true; tools: CatalogTool[]; refused: RefusedTool[] } | { ok: false; problems: string[] };

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
  const refused: RefusedTool[] = [];
  const serviceOrigin = normaliseOrigin(entry.baseUrl);
  const allowed = new Set(policy.allowedExecutionOrigins.map((o) => normaliseOrigin(o)));
  const seen = new Set<string>();
  const tools: CatalogTool[] = [];
  const refuseManifestForName = policy.toolNamePolicy === 'refuse-manifest';
  raw.tools.forEach((t, i) => {
    const at = `/tools/${i} (${t.name.slice(0, 128)}@${t.version})`;
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
    // Any JSON Schema 2020-12 (SEP-2106); the shard validates structuredContent with it, so its patterns run on the linear engine too.
    if (t.outputSchema !== undefined) problems.push(...jsonSchemaProblems(t.outputSchema, { validatesArguments: true }).map((p) => `${at}/outputSchema${p}`));
    const executionUrl = resolveExecution(t.execution, t.executionAddress, entry.baseUrl, serviceOrigin, allowed);
    if (typeof executionUrl !== 'string') {
      problems.push(`${at}/execution: ${executionUrl.problem}`);
      return;
    }
    // Refusals of this tool alone.
    if (!toolNameRe.test(t.name)) {
      const problem = `${at}/name: must match pattern "${TOOL_NAME_PATTERN}" (SEP-986: 1–128 of A-Z a-z 0-9 _ - .)`;
      if (refuseManifestForName) problems.push(problem);
      else refused.push({ name: t.name.slice(0, 128), version: t.version, problem });
      return;
    }
    const headers = scanHeaderParams(t.inputSchema);
    if (!headers.ok) {
      refused.push({ name: t.name, version: t.version, problem: `${at}/inputSchema${headers.problem}` });
      return;
    }
    const icons = iconsOf(t.icons);
    if (typeof icons === 'string') {
      refused.push({ name: t.name, version: t.version, problem: `${at}/icons${icons}` });
      return;
    }
    tools.push({
      name: t.name,
      version: t.version,
      active: t.active ?? true,
      serviceId: entry.id,
      ...(t.title !== undefined ? { title: t.title } : {}),
      ...(t.description !== undefined ? { description: t.description } : {}),
      ...(icons !== undefined ? { icons } : {}),
      inputSchema: t.inputSchema,
      ...(t.outputSchema !== undefined ? { outputSchema: t.outputSchema } : {}),
      ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
      ...(t._meta !== undefined ? { meta: t._meta } : {}),
      ...(t.execution?.taskSupport !== undefined ? { taskSupport: t.execution.taskSupport } : {}),
      timeoutMs: Math.min(t.timeoutMs ?? policy.defaultTimeoutMs, policy.maxTimeoutMs),
      executionUrl,
    });
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tools, refused };
}

/** Largest `data:` icon accepted (a manifest is bounded by catalog.maxManifestBytes anyway; an icon should be small). */
export const MAX_DATA_ICON_CHARS = 256 * 1024;

/**
 * MCP icons (basic/index.mdx "icons"): `src` must be an `https:` URL or a
 * `data:` URI (clients MUST reject other schemes); optional `mimeType`,
 * `sizes` (strings) and `theme` (`light` | `dark`). Returns the icons, or a
 * problem (pointer + reason).
 */
function iconsOf(raw: unknown[] | undefined): ToolIcon[] | undefined | string {
  if (raw === undefined) return undefined;
  const icons: ToolIcon[] = [];
  for (const [i, icon] of raw.entries()) {
    if (typeof icon !== 'object' || icon === null || Array.isArray(icon)) return `/${i}: an icon must be an object`;
    const { src, mimeType, sizes, theme } = icon as Record<string, unknown>;
    if (typeof src !== 'string') return `/${i}/src: must be a string`;
    if (!isSafeIconSource(src)) return `/${i}/src: must be an https: URL or a data: URI`;
    if (mimeType !== undefined && typeof mimeType !== 'string') return `/${i}/mimeType: must be a string`;
    if (sizes !== undefined && !(Array.isArray(sizes) && sizes.every((x) => typeof x === 'string'))) return `/${i}/sizes: must be an array of strings`;
    if (theme !== undefined && theme !== 'light' && theme !== 'dark') return `/${i}/theme: must be "light" or "dark"`;
    icons.push(icon as ToolIcon);
  }
  return icons;
}

function isSafeIconSource(src: string): boolean {
  if (src.startsWith('data:')) return src.length <= MAX_DATA_ICON_CHARS && /^data:[a-z]+\/[a-z0-9.+-]+(;[a-z0-9=.+-]+)*(;base64)?,/i.test(src);
  try {
    return new URL(src).protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * An execution address must stay on its Tool Service's origin unless the
 * allow-list names the other origin: a manifest must not turn the gateway
 * into an SSRF proxy.
 */
function resolveExecution(
  mcpExecution: { path?: string; url?: string } | undefined,
  address: { path: string } | { url: string } | undefined,
  baseUrl: string,
  serviceOrigin: string | null,
  allowed: ReadonlySet<string | null>,
): string | { problem: string } {
  const inExecution = mcpExecution?.path !== undefined || mcpExecution?.url !== undefined;
  if (inExecution && address !== undefined) return { problem: 'the execution address is given twice (execution and executionAddress); give one' };
  if (mcpExecution?.path !== undefined && mcpExecution.url !== undefined) return { problem: 'give either "path" or "url", not both' };
  const execution = address ?? (mcpExecution?.path !== undefined ? { path: mcpExecution.path } : mcpExecution?.url !== undefined ? { url: mcpExecution.url } : undefined);
  if (execution === undefined) return { problem: 'an execution address is required: execution.path, execution.url or executionAddress' };
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
