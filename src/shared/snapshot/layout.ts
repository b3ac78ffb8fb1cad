/**
 * Route snapshot binary layout. A snapshot is one SharedArrayBuffer, written
 * once by {@link encodeSnapshot} and never mutated after it is published, so
 * any thread may read it without locks: a reader holds one reference for the
 * whole request and sees either the old snapshot or the new one, never a mix.
 *
 * ```
 *  byte 0        4        8        12       16       20       24       28       32
 *       +--------+--------+--------+--------+--------+--------+--------+--------+
 *     0 | magic  | format | total  | crc32  | metaOff| metaLen| listOff| listLen|
 *       | "MCPS" | = 1    | bytes  | of 64..| (JSON) |        | (tmpl) |        |
 *       +--------+--------+--------+--------+--------+--------+--------+--------+
 *    32 | catOff | catLen | listed | reserved (0)                               |
 *       |(JSON)  |        | count  |                                            |
 *       +--------+--------+--------+--------------------------------------------+
 *    64 | meta JSON   {routeKey, revision, source, builtAt, toolCount}          |
 *       | list template  {"jsonrpc":"2.0","result":{"tools":[…]},"id":         |
 *       | catalog JSON   CatalogTool[] (every version; the shard compiles these) |
 *       +----------------------------------------------------------------------+
 * ```
 * All integers are little-endian u32. The list template is a complete
 * `tools/list` response missing only its id: a reader appends `<id>}` and
 * sends it, so `tools/list` costs no JSON serialisation per request (JSON
 * object member order is free, which is why `id` can come last).
 */
import { crc32 } from 'node:zlib';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { GatewayError, GatewayErrorCode } from '../errors.js';
import { listedTools } from '../catalog/merge.js';
import type { CatalogSource, CatalogTool, RouteCatalog } from '../catalog/types.js';

export const SNAPSHOT_MAGIC = 0x5350434d; // "MCPS" read as little-endian u32
export const SNAPSHOT_FORMAT = 1;
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
    version: Type.String(),
    active: Type.Boolean(),
    serviceId: Type.String(),
    title: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    inputSchema: JsonObject,
    outputSchema: Type.Optional(JsonObject),
    annotations: Type.Optional(JsonObject),
    timeoutMs: Type.Integer({ minimum: 1 }),
    executionUrl: Type.String(),
  }),
);
const metaValidator = Compile(MetaSchema);
const catalogValidator = Compile(CatalogToolsSchema);

const LIST_PREFIX = '{"jsonrpc":"2.0","result":';
const LIST_SUFFIX = ',"id":';

/** The MCP `Tool` object exposed by `tools/list`: the manifest's fields exactly as given. */
function exposedTool(t: CatalogTool): Record<string, unknown> {
  const out: Record<string, unknown> = { name: t.name };
  if (t.title !== undefined) out['title'] = t.title;
  if (t.description !== undefined) out['description'] = t.description;
  out['inputSchema'] = t.inputSchema;
  if (t.outputSchema !== undefined) out['outputSchema'] = t.outputSchema;
  if (t.annotations !== undefined) out['annotations'] = t.annotations;
  return out;
}

/** The `tools/list` result JSON of a catalog (also used by tests as the expected answer). */
export function toolsListResultJson(tools: readonly CatalogTool[]): string {
  return JSON.stringify({ tools: listedTools(tools).map(exposedTool) });
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
  const listed = meta.toolCount;
  const enc = new TextEncoder();
  const metaBytes = enc.encode(JSON.stringify(meta));
  const listBytes = enc.encode(LIST_PREFIX + toolsListResultJson(catalog.tools) + LIST_SUFFIX);
  const catBytes = enc.encode(JSON.stringify(catalog.tools));
  const total = HEADER_BYTES + metaBytes.length + listBytes.length + catBytes.length;
  const sab = new SharedArrayBuffer(total);
  const bytes = new Uint8Array(sab);
  let off = HEADER_BYTES;
  const put = (b: Uint8Array): [number, number] => {
    bytes.set(b, off);
    const at: [number, number] = [off, b.length];
    off += b.length;
    return at;
  };
  const [metaOff, metaLen] = put(metaBytes);
  const [listOff, listLen] = put(listBytes);
  const [catOff, catLen] = put(catBytes);
  const header = new DataView(sab, 0, HEADER_BYTES);
  const fields: Array<[Field, number]> = [
    [Field.Magic, SNAPSHOT_MAGIC],
    [Field.Format, SNAPSHOT_FORMAT],
    [Field.Total, total],
    [Field.MetaOff, metaOff],
    [Field.MetaLen, metaLen],
    [Field.ListOff, listOff],
    [Field.ListLen, listLen],
    [Field.CatOff, catOff],
    [Field.CatLen, catLen],
    [Field.Listed, listed],
  ];
  for (const [f, v] of fields) header.setUint32(f * 4, v, true);
  header.setUint32(Field.Crc * 4, crc32(bytes.subarray(HEADER_BYTES)), true);
  return sab;
}

/** A read-only view of a published snapshot. */
export interface SnapshotView {
  readonly buffer: SharedArrayBuffer;
  readonly meta: SnapshotMeta;
  /** `{"jsonrpc":"2.0","result":{…},"id":` — append `<id>}` to answer `tools/list`. */
  readonly listTemplate: Uint8Array;
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

/**
 * Opens a snapshot, checking magic, format, bounds and (when `verifyChecksum`)
 * the CRC. Throws SNAPSHOT_CORRUPT rather than ever serving a damaged snapshot.
 */
export function decodeSnapshot(buffer: SharedArrayBuffer, options: { verifyChecksum?: boolean } = {}): SnapshotView {
  if (buffer.byteLength < HEADER_BYTES) throw corrupt('shorter than its header');
  const header = new DataView(buffer, 0, HEADER_BYTES);
  const get = (f: Field): number => header.getUint32(f * 4, true);
  if (get(Field.Magic) !== SNAPSHOT_MAGIC) throw corrupt('bad magic');
  if (get(Field.Format) !== SNAPSHOT_FORMAT) throw corrupt(`format ${get(Field.Format)} is not ${SNAPSHOT_FORMAT}`);
  if (get(Field.Total) !== buffer.byteLength) throw corrupt('length does not match its header');
  const bytes = new Uint8Array(buffer);
  if (options.verifyChecksum && crc32(bytes.subarray(HEADER_BYTES)) !== get(Field.Crc)) throw corrupt('checksum mismatch');
  const section = (off: Field, len: Field): Uint8Array => {
    const o = get(off);
    const l = get(len);
    if (o < HEADER_BYTES || o + l > buffer.byteLength) throw corrupt('section out of bounds');
    return new Uint8Array(buffer, o, l);
  };
  const dec = new TextDecoder();
  // TextDecoder refuses SharedArrayBuffer views, hence the copies (install time only).
  const text = (b: Uint8Array): string => dec.decode(b.slice());
  let meta: unknown;
  try {
    meta = JSON.parse(text(section(Field.MetaOff, Field.MetaLen)));
  } catch {
    throw corrupt('meta section is not JSON');
  }
  if (!metaValidator.Check(meta)) throw corrupt('meta section does not match its schema');
  const listTemplate = section(Field.ListOff, Field.ListLen);
  const catalog = section(Field.CatOff, Field.CatLen);
  return {
    buffer,
    meta,
    listTemplate,
    catalogTools(options?: { trusted?: boolean }): CatalogTool[] {
      let tools: unknown;
      try {
        tools = JSON.parse(text(catalog));
      } catch {
        throw corrupt('catalog section is not JSON');
      }
      if (options?.trusted !== true && !catalogValidator.Check(tools)) throw corrupt('catalog section does not match its schema');
      return tools as CatalogTool[];
    },
  };
}

/**
 * The `tools/list` template of a snapshot, read from the header only (no
 * meta parse, no catalog parse): what an acceptor needs when a route is
 * swapped. The snapshot was decoded and validated by its shard before any
 * acceptor sees it, so only the bounds are re-checked here.
 */
export function snapshotListTemplate(buffer: SharedArrayBuffer): Uint8Array {
  const header = new DataView(buffer, 0, HEADER_BYTES);
  const off = header.getUint32(Field.ListOff * 4, true);
  const len = header.getUint32(Field.ListLen * 4, true);
  if (off < HEADER_BYTES || off + len > buffer.byteLength) throw corrupt('section out of bounds');
  return new Uint8Array(buffer, off, len);
}
