/**
 * The request headers 2026-07-28 mirrors from the body (SEP-2243,
 * basic/transports/streamable-http.mdx "Request Metadata"): `Mcp-Method`,
 * `Mcp-Name` and `Mcp-Param-{Name}`, their value encoding (the
 * `=?base64?…?=` sentinel for values that are not plain ASCII) and the
 * header ⇔ body comparison. A disagreement is `-32020` HeaderMismatch
 * (HTTP 400): it stops a load balancer routing on the header while the
 * gateway executes what the body says. Pure functions, bounded input (header
 * values are bounded by the HTTP parser, bodies by `server.maxBodyBytes`).
 */
import { Buffer } from 'node:buffer';
import type { HeaderParam } from '../catalog/x-mcp-header.js';
import { stripOws } from './modern.js';

const PREFIX = '=?base64?';
const SUFFIX = '?=';
/** Canonical Base64: full quanta, `=` padding only at the end (SEP-2243 test-case table: bad padding is rejected). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
/** A literal (unencoded) value: visible ASCII, space and tab (RFC 9110 field-value). */
const LITERAL = /^[\x20-\x7e\t]*$/;
const DECIMAL = /^-?\d+(\.\d+)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A header value as the client meant it: OWS stripped, the Base64 sentinel
 * decoded (UTF-8), or `null` when the value is malformed (a sentinel that is
 * not canonical Base64 or not UTF-8, or a literal with characters a header
 * value may not carry).
 */
export function decodeHeaderValue(raw: string): string | null {
  const value = stripOws(raw);
  if (value.length >= PREFIX.length + SUFFIX.length && value.startsWith(PREFIX) && value.endsWith(SUFFIX)) {
    const b64 = value.slice(PREFIX.length, value.length - SUFFIX.length);
    if (!BASE64.test(b64)) return null;
    try {
      return utf8.decode(Buffer.from(b64, 'base64'));
    } catch {
      return null;
    }
  }
  return LITERAL.test(value) ? value : null;
}

/** The body field `Mcp-Name` mirrors for a method, or null when the method has none (streamable-http.mdx "Standard Request Headers"). */
export function mcpNameField(method: string): 'name' | 'uri' | null {
  if (method === 'tools/call' || method === 'prompts/get') return 'name';
  if (method === 'resources/read') return 'uri';
  return null;
}

/** One `Mcp-Param-*` header as received: lowercase name, raw value. */
export type ParamHeader = readonly [name: string, value: string];

/**
 * Checks the `Mcp-Param-*` headers of a `tools/call` against the tool's
 * `x-mcp-header` declarations and the call's arguments. Returns `null` when
 * they agree, else what disagrees (for the `-32020` message).
 *
 * Per declaration: a value in the body (not `null`) requires the header and
 * an equal decoded value (integers compared numerically, `42.0` = `42`); no
 * value in the body means no header is expected (one sent anyway is ignored,
 * as unknown `Mcp-Param-*` headers are).
 */
export function paramHeaderMismatch(declared: readonly HeaderParam[], args: unknown, headers: readonly ParamHeader[]): string | null {
  for (const param of declared) {
    const body = valueAt(args, param.path);
    if (body === undefined || body === null) continue;
    const expected = primitiveText(body);
    if (expected === null) continue; // not a primitive: the inputSchema check reports it
    const raw = headerValue(headers, param.header);
    const label = `Mcp-Param-${param.name}`;
    if (raw === null) return `the body carries ${param.path.join('.')}=${JSON.stringify(body)} but the ${label} header is absent`;
    const decoded = decodeHeaderValue(raw);
    if (decoded === null) return `the ${label} header value is malformed (invalid characters or Base64)`;
    const equal = typeof body === 'number' && DECIMAL.test(decoded) ? Number(decoded) === body : decoded === expected;
    if (!equal) return `the ${label} header is ${JSON.stringify(decoded)} but the body carries ${param.path.join('.')}=${JSON.stringify(body)}`;
  }
  return null;
}

function valueAt(root: unknown, path: readonly string[]): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return undefined;
    node = Object.hasOwn(node, key) ? (node as Record<string, unknown>)[key] : undefined;
  }
  return node;
}

function primitiveText(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

function headerValue(headers: readonly ParamHeader[], name: string): string | null {
  for (const [n, v] of headers) if (n === name) return v;
  return null;
}
