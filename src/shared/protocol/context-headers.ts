/**
 * Validation of the context headers the gateway forwards to Tool Services
 * (issue 11 Low #12). A client-controlled value that breaks its grammar —
 * a DEL byte in `traceparent` made undici refuse the upstream request, which
 * was then reported as "Tool Service unreachable" and counted against the
 * service — is dropped at the edge: treated as absent, never forwarded.
 *
 * Pure functions, no regex backtracking beyond fixed, bounded classes; every
 * value is length-checked before it is scanned.
 *
 *   header           grammar                                                   bound
 *   traceparent      W3C Trace Context: 2HEXDIGLC "-" 32 "-" 16 "-" 2            55 chars (v00)
 *   tracestate       W3C Trace Context list of key=value (empty members ok)      32 members, 512 chars
 *   baggage          W3C Baggage list of key=value *(;property)                  64 members, 8192 chars
 *   mcp-session-id   visible ASCII 0x21–0x7E (MCP Streamable HTTP)               256 chars
 *   x-request-id     [A-Za-z0-9._:-]                                             128 chars
 */

/** Longest `traceparent` accepted; future versions may append fields (W3C: "only disallow prohibitively large headers"). */
export const MAX_TRACEPARENT = 512;
/** W3C: vendors SHOULD propagate at least 512 characters of a combined `tracestate`; the gateway propagates exactly that much. */
export const MAX_TRACESTATE = 512;
export const MAX_TRACESTATE_MEMBERS = 32;
/** W3C Baggage limits: 64 list-members, 8192 bytes. */
export const MAX_BAGGAGE = 8192;
export const MAX_BAGGAGE_MEMBERS = 64;
export const MAX_SESSION_ID = 256;
export const MAX_REQUEST_ID = 128;

const HEX_LC = /^[0-9a-f]+$/;
const ALL_ZERO = /^0+$/;

/**
 * A valid `traceparent`, as the version-00 form to forward, or null.
 * Version 00 must be exactly 55 characters; a higher version (not `ff`) is
 * read as the spec asks — its first three fields parsed like 00's, the 56th
 * character absent or `-` — and downgraded to 00 ("Vendors MUST use these
 * fields to construct the new traceparent … according to the highest
 * version … known to the implementation").
 */
export function validTraceparent(value: string): string | null {
  if (value.length < 55 || value.length > MAX_TRACEPARENT) return null;
  const version = value.slice(0, 2);
  if (!HEX_LC.test(version) || version === 'ff' || value[2] !== '-') return null;
  if (version === '00' && value.length !== 55) return null;
  if (value.length > 55 && value[55] !== '-') return null;
  const traceId = value.slice(3, 35);
  const parentId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (value[35] !== '-' || value[52] !== '-') return null;
  if (!HEX_LC.test(traceId) || ALL_ZERO.test(traceId) || !HEX_LC.test(parentId) || ALL_ZERO.test(parentId) || !HEX_LC.test(flags)) return null;
  return version === '00' ? value : `00-${traceId}-${parentId}-${flags}`;
}

// key = ( lcalpha / DIGIT ) 0*255( keychar ), keychar = lcalpha / DIGIT / "_" / "-" / "*" / "/" / "@"
const TRACESTATE_KEY = /^[a-z0-9][a-z0-9_\-*/@]{0,255}$/;
// value = 0*255( chr ) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E
const TRACESTATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * A valid `tracestate` or null: at most 32 list-members `key=value` (empty
 * and whitespace-only members allowed), unique keys, at most 512 characters.
 */
export function validTracestate(value: string): string | null {
  if (value.length > MAX_TRACESTATE) return null;
  const keys = new Set<string>();
  for (const raw of value.split(',')) {
    const member = trimOws(raw);
    if (member === '') continue;
    const eq = member.indexOf('=');
    if (eq <= 0) return null;
    const key = member.slice(0, eq);
    if (!TRACESTATE_KEY.test(key) || !TRACESTATE_VALUE.test(member.slice(eq + 1)) || keys.has(key)) return null;
    keys.add(key);
    if (keys.size > MAX_TRACESTATE_MEMBERS) return null;
  }
  return value;
}

// token (RFC 9110 tchar) and baggage-octet = %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAGGAGE_VALUE = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*$/;

/**
 * A valid `baggage` or null (W3C Baggage): `key OWS "=" OWS value *( OWS ";"
 * OWS property )` members, at most 64, at most 8192 characters.
 */
export function validBaggage(value: string): string | null {
  if (value.length > MAX_BAGGAGE) return null;
  const members = value.split(',');
  if (members.length > MAX_BAGGAGE_MEMBERS) return null;
  for (const member of members) {
    const [pair, ...properties] = member.split(';');
    const eq = (pair as string).indexOf('=');
    if (eq < 0 || !TOKEN.test(trimOws((pair as string).slice(0, eq))) || !BAGGAGE_VALUE.test(trimOws((pair as string).slice(eq + 1)))) return null;
    for (const property of properties) {
      const p = property.indexOf('=');
      const key = trimOws(p < 0 ? property : property.slice(0, p));
      if (!TOKEN.test(key) || (p >= 0 && !BAGGAGE_VALUE.test(trimOws(property.slice(p + 1))))) return null;
    }
  }
  return value;
}

/** A valid `Mcp-Session-Id` (visible ASCII 0x21–0x7E, 1–256 characters) or null. */
export function validSessionId(value: string): string | null {
  if (value.length === 0 || value.length > MAX_SESSION_ID) return null;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return null;
  }
  return value;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A valid `x-request-id` or null (the acceptor then generates one). */
export function validRequestId(value: string): string | null {
  return value.length <= MAX_REQUEST_ID && REQUEST_ID.test(value) ? value : null;
}

/** The context headers of one request as copied from it; `''` means absent. */
export interface ContextHeaders {
  traceparent: string;
  tracestate: string;
  baggage: string;
  sessionId: string;
  requestId: string;
}

/**
 * The headers to use and forward: each invalid one replaced by `''` (absent).
 * `tracestate` goes with a valid `traceparent` only (W3C: a vendor that failed
 * to parse `traceparent` MUST NOT parse `tracestate`); an empty `requestId`
 * tells the caller to generate one.
 */
export function sanitizeContextHeaders(h: ContextHeaders): ContextHeaders {
  const traceparent = h.traceparent === '' ? null : validTraceparent(h.traceparent);
  return {
    traceparent: traceparent ?? '',
    tracestate: traceparent === null || h.tracestate === '' ? '' : (validTracestate(h.tracestate) ?? ''),
    baggage: h.baggage === '' ? '' : (validBaggage(h.baggage) ?? ''),
    sessionId: h.sessionId === '' ? '' : (validSessionId(h.sessionId) ?? ''),
    requestId: h.requestId === '' ? '' : (validRequestId(h.requestId) ?? ''),
  };
}

/** Strips optional white space (space and horizontal tab, RFC 9110 OWS). */
function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return s.slice(a, b);
}
