/**
 * The 2026-07-28 revision's vocabulary that both threads need: era selection
 * from `MCP-Protocol-Version`, the reserved `_meta` keys, and the members
 * every modern result carries (`resultType`, `_meta` serverInfo), prebuilt
 * as JSON text so no answer serialises them per request.
 *
 * Spec: docs/specification/2026-07-28/basic/index.mdx (`_meta`, result
 * responses), basic/versioning.mdx (dual-era servers),
 * basic/transports/streamable-http.mdx (protocol version header).
 */
import { isLegacyProtocolVersion, MODERN_PROTOCOL_VERSION, SERVER_INFO } from './mcp.js';

/** Which protocol a request speaks, decided from its `MCP-Protocol-Version` header alone. */
export type ProtocolEra = 'legacy' | 'modern' | 'unsupported';

/**
 * Header → era. Absent or a legacy revision → `legacy` (today's path,
 * unchanged); `2026-07-28` → `modern`; anything else → `unsupported`
 * (answered `-32022` with the request's id once the body is read). RFC 9110
 * optional whitespace around the value is ignored.
 */
export function protocolEra(header: string): ProtocolEra {
  if (header === '') return 'legacy';
  const v = stripOws(header);
  if (v === MODERN_PROTOCOL_VERSION) return 'modern';
  return v === '' || isLegacyProtocolVersion(v) ? 'legacy' : 'unsupported';
}

/** Strips RFC 9110 optional whitespace (SP, HTAB) around a field value. */
export function stripOws(value: string): string {
  let a = 0;
  let b = value.length;
  while (a < b && (value.charCodeAt(a) === 0x20 || value.charCodeAt(a) === 0x09)) a++;
  while (b > a && (value.charCodeAt(b - 1) === 0x20 || value.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === value.length ? value : value.slice(a, b);
}

/** Reserved `_meta` keys (basic/index.mdx "Reserved keys"). */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** `"_meta":{"io.modelcontextprotocol/serverInfo":{name,version}}` — the identity every modern result carries. */
export const SERVER_INFO_META_MEMBER = `"_meta":${JSON.stringify({ [META.serverInfo]: SERVER_INFO })}`;

/** The leading members of every complete modern result: `"resultType":"complete",` + the serverInfo `_meta` + `,`. */
export const COMPLETE_RESULT_HEAD = `"resultType":"complete",${SERVER_INFO_META_MEMBER},`;

/**
 * `{"resultType":"complete","_meta":{…serverInfo},…rest}`: `rest` is JSON
 * members without braces (may be empty); `meta`, when given, is the whole
 * `_meta` object to send instead of the serverInfo-only one.
 */
export function completeResultJson(rest: string, meta?: Record<string, unknown>): string {
  const head = meta === undefined ? COMPLETE_RESULT_HEAD : `"resultType":"complete","_meta":${JSON.stringify(meta)},`;
  return rest === '' ? `{${head.slice(0, -1)}}` : `{${head}${rest}}`;
}

/**
 * `cacheScope` of cacheable results on an open route: its catalog is the same
 * for every caller. A protected route's `tools/list` says `"private"` instead
 * (per-caller variants, `AuthStep.modernListSource`; ADR-0014).
 */
export const CACHE_SCOPE = 'public';
