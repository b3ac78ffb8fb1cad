/**
 * Route snapshot binary layout. A snapshot is one SharedArrayBuffer, written
 * once by {@link encodeSnapshot} and never mutated after it is published, so
 * any thread may read it without locks: a reader holds one reference for the
 * whole request and sees either the old snapshot or the new one, never a mix.
 *
 * Format 2 (ADR-0003, ADR-0014) carries a `tools/list` template per protocol
 * era and the route's `x-mcp-header` declarations:
 * ```
 *  byte 0        4        8        12       16       20       24       28       32
 *       +--------+--------+--------+--------+--------+--------+--------+--------+
 *     0 | magic  | format | total  | crc32  | metaOff| metaLen| listOff| listLen|
 *       | "MCPS" | = 2    | bytes  | of 64..| (JSON) |        | legacy tmpl     |
 *       +--------+--------+--------+--------+--------+--------+--------+--------+
 *    32 | catOff | catLen | listed | mlstOff| mlstLen| hdrOff | hdrLen | 0      |
 *       |(JSON)  |        | count  | modern tmpl     | x-mcp-header JSON |        |
 *       +--------+--------+--------+--------+--------+--------+--------+--------+
 *    64 | meta JSON   {routeKey, revision, source, builtAt, toolCount}          |
 *       | legacy list  {"jsonrpc":"2.0","result":{"tools":[…]},"id":            |
 *       | catalog JSON CatalogTool[] (every version; the shard compiles these)   |
 *       | modern list  {"jsonrpc":"2.0","result":{"resultType":"complete",…,     |
 *       |              "tools":[…],"cacheScope":"public","ttlMs":               |
 *       | header JSON  {toolName: HeaderParam[]} of listed tools that have any  |
 *       +----------------------------------------------------------------------+
 * ```
 * All integers are little-endian u32. Each template is a complete
 * `tools/list` response missing only its tail: the legacy one `<id>}`, the
 * modern one `<ttlMs>},"id":<id>}` (the freshness hint depends on the
 * snapshot's age, so it is spliced like the id). `tools/list` therefore costs
 * no JSON serialisation per request in either era (JSON member order is free).
 *
 * Format 1 (one template, no modern or header sections) is still read
 * ({@link decodeSnapshot} → {@link upgradeSnapshot}): a Redis copy written by
 * an older replica is re-encoded, never served as is.
 *
 * One file (~360 lines) on purpose: the byte layout, its encoder and its
 * decoder change together, and the diagram above is their single source.
 */
import { Buffer } from 'node:buffer';
import { crc32 } from 'node:zlib';
import { Type, Compile } from '../vendor/typebox.js';
import { GatewayError, GatewayErrorCode } from '../errors.js';
import { listedTools } from '../catalog/merge.js';
import type { CatalogSource, CatalogTool, RouteCatalog } from '../catalog/types.js';
import { scanHeaderParams, type HeaderParam } from '../catalog/x-mcp-header.js';
import { CACHE_SCOPE, COMPLETE_RESULT_HEAD } from '../protocol/modern.js';

export const SNAPSHOT_MAGIC = 0x5350434d; // "MCPS" read as little-endian u32
export const SNAPSHOT_FORMAT = 2;
/** The previous format, still readable (upgraded on read). */
export const SNAPSHOT_FORMAT_1 = 1;
export const HEADER_BYTES = 64;

const enum Field {
  Magic = 0,
  Format = 1,
  Total = 2,
  Crc = 3,
  MetaOff = 4,
  MetaLen = 5,
  ListOff = 6,
  ListLen = 7,
  CatOff = 8,
  CatLen = 9,
  Listed = 10,
  ModernListOff = 11,
  ModernListLen = 12,
  HeaderOff = 13,
  HeaderLen = 14,
}

/** The small descriptive section of a snapshot. */
export interface SnapshotMeta {
  routeKey: string;
  revision: string;
  source: CatalogSource;
  builtAt: number;
  toolCount: number;
}

const MetaSchema = Type.Object({
  routeKey: Type.String(),
  revision: Type.String(),
  source: Type.Union([Type.Literal('static'), Type.Literal('portal'), Type.Literal('redis')]),
  builtAt: Type.Number(),
  toolCount: Type.Integer({ minimum: 0 }),
});
const JsonObject = Type.Record(Type.String(), Type.Unknown());
const CatalogToolsSchema = Type.Array(
  Type.Object({
    name: Type.String(),
    upstreamName: Type.Optional(Type.String()),
    version: Type.String(),
    active: Type.Boolean(),
    serviceId: Type.String(),
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    icons: Type.Optional(
      Type.Array(
        Type.Object({
          src: Type.String(),
          mimeType: Type.Optional(Type.String()),
          sizes: Type.Optional(Type.Array(Type.String())),
          theme: Type.Optional(Type.Union([Type.Literal('light'), Type.Literal('dark')])),
        }),
      ),
    ),
    inputSchema: JsonObject,
    outputSchema: Type.Optional(JsonObject),
    annotations: Type.Optional(JsonObject),
    meta: Type.Optional(JsonObject),
    taskSupport: Type.Optional(Type.Union([Type.Literal('forbidden'), Type.Literal('optional'), Type.Literal('required')])),
    timeoutMs: Type.Integer({ minimum: 1 }),
    executionUrl: Type.String(),
  }),
);
const HeaderParamsSchema = Type.Record(
  Type.String(),
  Type.Array(
    Type.Object({
      name: Type.String(),
      header: Type.String(),
      path: Type.Array(Type.String()),
      type: Type.Union([Type.Literal('string'), Type.Literal('integer'), Type.Literal('boolean')]),
    }),
  ),
);
const metaValidator = Compile(MetaSchema);
const catalogValidator = Compile(CatalogToolsSchema);
const headerParamsValidator = Compile(HeaderParamsSchema);

const LIST_PREFIX = '{"jsonrpc":"2.0","result":';
const LIST_SUFFIX = ',"id":';
/** The modern template ends inside the result, at the value of `ttlMs`. */
const MODERN_LIST_PREFIX = `{"jsonrpc":"2.0","result":{${COMPLETE_RESULT_HEAD}`;
const MODERN_LIST_SUFFIX = `,"cacheScope":"${CACHE_SCOPE}","ttlMs":`;

/**
 * A modern `tools/list` template whose `cacheScope` is `"private"`: for a
 * protected route, whose list is not to be shared across authorization
 * contexts (server/utilities/caching.mdx "Choosing a Cache Scope"; ADR-0014).
 * Built once per template (the auth step keeps it), never per request.
 */
export function privateModernTemplate(template: Uint8Array): Uint8Array {
  const pub = Buffer.from(MODERN_LIST_SUFFIX);
  const end = template.length - pub.length;
  if (end < 0 || !Buffer.from(template.buffer, template.byteOffset + end, pub.length).equals(pub)) throw new Error('not a 2026-07-28 tools/list template');
  const priv = Buffer.from(`,"cacheScope":"private","ttlMs":`);
  const out = new Uint8Array(end + priv.length);
  out.set(template.subarray(0, end), 0);
  out.set(priv, end);
  return out;
}

/** Which protocol era a `tools/list` presentation is for. */
export type ListEra = 'legacy' | 'modern';

/**
 * The MCP `Tool` object `tools/list` exposes: the manifest's fields exactly
 * as given, except that a legacy client (2025-11-25 requires an
 * `outputSchema` root of `type: "object"`) is not shown an `outputSchema`
 * of another shape (ADR-0014: adapted, not hidden). `version`, `active`,
 * `timeoutMs`, the execution address and `taskSupport` are never exposed.
 */
function exposedTool(t: CatalogTool, era: ListEra): Record<string, unknown> {
  const out: Record<string, unknown> = { name: t.name };
  if (t.title !== undefined) out['title'] = t.title;
  if (t.description !== undefined) out['description'] = t.description;
  if (t.icons !== undefined) out['icons'] = t.icons;
  out['inputSchema'] = t.inputSchema;
  if (t.outputSchema !== undefined && (era === 'modern' || t.outputSchema['type'] === 'object')) out['outputSchema'] = t.outputSchema;
  if (t.annotations !== undefined) out['annotations'] = t.annotations;
  if (t.meta !== undefined) out['_meta'] = t.meta;
  return out;
}

/** The legacy `tools/list` result JSON of a catalog (also used by tests as the expected answer). */
export function toolsListResultJson(tools: readonly CatalogTool[]): string {
  return JSON.stringify({ tools: listedTools(tools).map((t) => exposedTool(t, 'legacy')) });
}

/** The JSON text of the listed tools as the given era presents them (`[…]`). */
export function listedToolsJson(tools: readonly CatalogTool[], era: ListEra): string {
  return JSON.stringify(listedTools(tools).map((t) => exposedTool(t, era)));
}

/** The `x-mcp-header` declarations of the listed tools that have any (the catalog build refused tools with invalid ones). */
export function headerParamsOf(tools: readonly CatalogTool[]): Record<string, HeaderParam[]> {
  const out: Record<string, HeaderParam[]> = {};
  for (const t of listedTools(tools)) {
    const scan = scanHeaderParams(t.inputSchema);
    if (scan.ok && scan.params.length > 0) out[t.name] = scan.params;
  }
  return out;
}

/** The meta section {@link encodeSnapshot} writes for `catalog` (the refresh worker sends it with the snapshot). */
export function snapshotMeta(catalog: RouteCatalog): SnapshotMeta {
  return {
    routeKey: catalog.routeKey,
    revision: catalog.revision,
    source: catalog.source,
    builtAt: catalog.builtAt,
    toolCount: listedTools(catalog.tools).length,
  };
}

/** Encodes a catalog into a new, never-to-be-mutated SharedArrayBuffer. */
export function encodeSnapshot(catalog: RouteCatalog): SharedArrayBuffer {
  const meta = snapshotMeta(catalog);
  const enc = new TextEncoder();
  const sections = [
    enc.encode(JSON.stringify(meta)),
    enc.encode(LIST_PREFIX + toolsListResultJson(catalog.tools) + LIST_SUFFIX),
    enc.encode(JSON.stringify(catalog.tools)),
    enc.encode(`${MODERN_LIST_PREFIX}"tools":${listedToolsJson(catalog.tools, 'modern')}${MODERN_LIST_SUFFIX}`),
    enc.encode(JSON.stringify(headerParamsOf(catalog.tools))),
  ] as const;
  const total = HEADER_BYTES + sections.reduce((n, b) => n + b.length, 0);
  const sab = new SharedArrayBuffer(total);
  const bytes = new Uint8Array(sab);
  const at: Array<[number, number]> = [];
  let off = HEADER_BYTES;
  for (const b of sections) {
    bytes.set(b, off);
    at.push([off, b.length]);
    off += b.length;
  }
  const [metaAt, listAt, catAt, modernAt, headerAt] = at as [[number, number], [number, number], [number, number], [number, number], [number, number]];
  const header = new DataView(sab, 0, HEADER_BYTES);
  const fields: Array<[Field, number]> = [
    [Field.Magic, SNAPSHOT_MAGIC],
    [Field.Format, SNAPSHOT_FORMAT],
    [Field.Total, total],
    [Field.MetaOff, metaAt[0]],
    [Field.MetaLen, metaAt[1]],
    [Field.ListOff, listAt[0]],
    [Field.ListLen, listAt[1]],
    [Field.CatOff, catAt[0]],
    [Field.CatLen, catAt[1]],
    [Field.Listed, meta.toolCount],
    [Field.ModernListOff, modernAt[0]],
    [Field.ModernListLen, modernAt[1]],
    [Field.HeaderOff, headerAt[0]],
    [Field.HeaderLen, headerAt[1]],
  ];
  for (const [f, v] of fields) header.setUint32(f * 4, v, true);
  header.setUint32(Field.Crc * 4, crc32(bytes.subarray(HEADER_BYTES)), true);
  return sab;
}

/** A read-only view of a published snapshot. */
export interface SnapshotView {
  readonly buffer: SharedArrayBuffer;
  readonly meta: SnapshotMeta;
  /** Legacy: `{"jsonrpc":"2.0","result":{…},"id":` — append `<id>}` to answer `tools/list`. */
  readonly listTemplate: Uint8Array;
  /** 2026-07-28: `{"jsonrpc":"2.0","result":{…,"ttlMs":` — append `<ttl>},"id":<id>}`. */
  readonly modernListTemplate: Uint8Array;
  /**
   * Parses the catalog section (install time only, never per request) and
   * validates it unless `trusted`: a snapshot this process encoded, or one
   * the refresh worker already validated after reading it from Redis.
   */
  catalogTools(options?: { trusted?: boolean }): CatalogTool[];
}

function corrupt(reason: string): GatewayError {
  return new GatewayError(GatewayErrorCode.SnapshotCorrupt, `route snapshot rejected: ${reason}`);
}

// TextDecoder refuses SharedArrayBuffer views, hence the copies (install time only).
const text = (b: Uint8Array): string => new TextDecoder().decode(b.slice());

/**
 * Opens a snapshot, checking magic, format, bounds and (when `verifyChecksum`)
 * the CRC. Throws SNAPSHOT_CORRUPT rather than ever serving a damaged snapshot.
 * A format-1 snapshot (an older replica's Redis copy) is re-encoded in format
 * 2 from its own meta and catalog ({@link upgradeSnapshot}); any other format
 * is foreign.
 */
export function decodeSnapshot(buffer: SharedArrayBuffer, options: { verifyChecksum?: boolean } = {}): SnapshotView {
  if (buffer.byteLength < HEADER_BYTES) throw corrupt('shorter than its header');
  const header = new DataView(buffer, 0, HEADER_BYTES);
  const get = (f: Field): number => header.getUint32(f * 4, true);
  if (get(Field.Magic) !== SNAPSHOT_MAGIC) throw corrupt('bad magic');
  const format = get(Field.Format);
  if (format !== SNAPSHOT_FORMAT && format !== SNAPSHOT_FORMAT_1) throw corrupt(`format ${format} is not ${SNAPSHOT_FORMAT} (or ${SNAPSHOT_FORMAT_1}, upgraded on read)`);
  if (get(Field.Total) !== buffer.byteLength) throw corrupt('length does not match its header');
  const bytes = new Uint8Array(buffer);
  if (options.verifyChecksum && crc32(bytes.subarray(HEADER_BYTES)) !== get(Field.Crc)) throw corrupt('checksum mismatch');
  const section = (off: Field, len: Field): Uint8Array => {
    const o = get(off);
    const l = get(len);
    if (o < HEADER_BYTES || o + l > buffer.byteLength) throw corrupt('section out of bounds');
    return new Uint8Array(buffer, o, l);
  };
  let meta: unknown;
  try {
    meta = JSON.parse(text(section(Field.MetaOff, Field.MetaLen)));
  } catch {
    throw corrupt('meta section is not JSON');
  }
  if (!metaValidator.Check(meta)) throw corrupt('meta section does not match its schema');
  const catalog = section(Field.CatOff, Field.CatLen);
  const catalogTools = (opts?: { trusted?: boolean }): CatalogTool[] => {
    let tools: unknown;
    try {
      tools = JSON.parse(text(catalog));
    } catch {
      throw corrupt('catalog section is not JSON');
    }
    if (opts?.trusted !== true && !catalogValidator.Check(tools)) throw corrupt('catalog section does not match its schema');
    return tools as CatalogTool[];
  };
  if (format === SNAPSHOT_FORMAT_1) return upgradeSnapshot(meta, catalogTools());
  return { buffer, meta, listTemplate: section(Field.ListOff, Field.ListLen), modernListTemplate: section(Field.ModernListOff, Field.ModernListLen), catalogTools };
}

/**
 * A format-1 snapshot's meta and (validated) catalog re-encoded in the
 * current format: same revision, same `builtAt`, templates built by this
 * code. An older replica's Redis copy is thereby readable, and never served
 * with another version's presentation rules.
 */
function upgradeSnapshot(meta: SnapshotMeta, tools: CatalogTool[]): SnapshotView {
  return decodeSnapshot(encodeSnapshot({ routeKey: meta.routeKey, revision: meta.revision, source: meta.source, builtAt: meta.builtAt, tools }));
}

/** What an acceptor copies out of a snapshot when its route is swapped. */
export interface AcceptorSections {
  listTemplate: Uint8Array;
  modernListTemplate: Uint8Array;
  builtAt: number;
  /** Tool name → its `x-mcp-header` declarations; null when no listed tool has any. */
  headerParams: Map<string, HeaderParam[]> | null;
}

/**
 * The sections an acceptor serves from, read without parsing the catalog:
 * the two templates, `builtAt` from the meta section and the header
 * declarations. The snapshot was decoded and validated by its shard before
 * any acceptor sees it (format 2: a format-1 copy was upgraded by the
 * refresh worker), so only bounds and shapes are re-checked here.
 */
export function acceptorSections(buffer: SharedArrayBuffer): AcceptorSections {
  const header = new DataView(buffer, 0, HEADER_BYTES);
  const get = (f: Field): number => header.getUint32(f * 4, true);
  if (get(Field.Format) !== SNAPSHOT_FORMAT) throw corrupt(`format ${get(Field.Format)} is not ${SNAPSHOT_FORMAT}`);
  const section = (off: Field, len: Field): Uint8Array => {
    const o = get(off);
    const l = get(len);
    if (o < HEADER_BYTES || o + l > buffer.byteLength) throw corrupt('section out of bounds');
    return new Uint8Array(buffer, o, l);
  };
  const meta = JSON.parse(text(section(Field.MetaOff, Field.MetaLen))) as unknown;
  if (!metaValidator.Check(meta)) throw corrupt('meta section does not match its schema');
  const params = JSON.parse(text(section(Field.HeaderOff, Field.HeaderLen))) as unknown;
  if (!headerParamsValidator.Check(params)) throw corrupt('header section does not match its schema');
  const entries = Object.entries(params);
  return {
    listTemplate: section(Field.ListOff, Field.ListLen),
    modernListTemplate: section(Field.ModernListOff, Field.ModernListLen),
    builtAt: meta.builtAt,
    headerParams: entries.length === 0 ? null : new Map(entries),
  };
}
