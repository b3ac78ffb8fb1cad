/**
 * Everything about an MCP request that is decided from its request line and
 * headers, before the body is parsed (docs/contracts/mcp-endpoint.md): DNS-rebinding
 * checks, path and route key, HTTP method, media types, the protocol era
 * (`MCP-Protocol-Version`, modern.ts), declared body size, and whether the
 * route has a usable snapshot.
 *
 * Legacy requests are refused at once with `id: null`, exactly as before the
 * 2026-07-28 era existed. A 2026-07-28 request (or one naming a version the
 * gateway does not serve) is refused only after its body has been read, so
 * the error can carry the request's id (streamable-http.mdx: errors echo the
 * id whenever it could be read) — except where reading it would be wrong:
 * a forbidden Origin/Host (nothing is read for a foreign page), a method
 * other than POST (no body) and a declared size over the limit.
 */
import { Buffer } from 'node:buffer';
import { ROUTE_KEY_PATTERN } from '../config/schema.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../errors.js';
import type { RouteUnavailable } from '../threads/messages.js';
import { isJsonContentType, parseAccept, type HttpPolicy } from './http-policy.js';
import { rpcErrorReply, type ExactId, type RequestId } from './jsonrpc.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from './mcp.js';
import { protocolEra, stripOws, type ProtocolEra } from './modern.js';
import type { Reply } from './reply.js';

const routeKeyRe = new RegExp(ROUTE_KEY_PATTERN);

/** What the acceptor copied out of the request (uWS `req` is only valid synchronously). */
export interface RequestHead {
  /** Lowercase HTTP method. */
  method: string;
  /** Path without query string. */
  path: string;
  host: string;
  origin: string;
  contentType: string;
  accept: string;
  protocolVersion: string;
  /** -1 when the header is absent or not a number. */
  contentLength: number;
}

/** A route as an acceptor's directory knows it. */
export interface RouteEntry<S> {
  readonly shard: number;
  readonly snapshot: S | null;
  /** Why there is no snapshot (null while the first one is still loading). */
  readonly unavailable: RouteUnavailable | null;
}

/** A refusal decided from the request line and headers: its status, JSON-RPC error and metric label. */
export interface Refusal {
  status: number;
  code: number;
  message: string;
  label: string;
  headers?: Reply['headers'];
  data?: unknown;
  /** The route key for metrics when the route exists (unavailable routes), else null. */
  routeKey: string | null;
}

/**
 * Gate outcome: an early reply (`id: null`); a refusal to answer once the
 * body is read (with the request's id, {@link refusalReply}); or the route to
 * serve with its snapshot (one reference for the whole request) and the era.
 */
export type GateResult<S> =
  | { kind: 'reply'; reply: Reply; label: string }
  | { kind: 'refuse-after-body'; refusal: Refusal }
  | { kind: 'accept'; routeKey: string; route: RouteEntry<S>; snapshot: S; wantsSse: boolean; era: Exclude<ProtocolEra, 'unsupported'> };

/** The HTTP answer of a refusal, carrying `id` (null when the body named none). */
export function refusalReply(refusal: Refusal, id: RequestId | ExactId | null): Reply {
  const { status, code, message, headers, data } = refusal;
  return rpcErrorReply(id, code, message, { status, ...(headers ? { headers } : {}), ...(data !== undefined ? { data } : {}) });
}

/**
 * A refusal someone else decided from the headers (the auth step's
 * precomputed 401/403/429/503, `id: null`), as a {@link Refusal}, so that a
 * 2026-07-28 request gets it with its id once the body is read. Runs on the
 * refusal path only (one parse of a small JSON body).
 */
export function refusalOfReply(reply: Reply, label: string, routeKey: string | null): Refusal {
  const text = typeof reply.body === 'string' ? reply.body : Buffer.from(reply.body).toString('utf8');
  const { error } = JSON.parse(text) as { error: { code: number; message: string; data?: unknown } };
  return {
    status: reply.status,
    code: error.code,
    message: error.message,
    label,
    ...(reply.headers !== undefined ? { headers: reply.headers } : {}),
    ...(error.data !== undefined ? { data: error.data } : {}),
    routeKey,
  };
}

function refusal(status: number, message: string, label: string, extra: Partial<Refusal> = {}): Refusal {
  return { status, code: JsonRpcErrorCode.TransportError, message, label, routeKey: null, ...extra };
}

/** Refused now, with `id: null`: nothing is read of the body. */
function now(r: Refusal): { kind: 'reply'; reply: Reply; label: string } {
  return { kind: 'reply', reply: refusalReply(r, null), label: r.label };
}

/**
 * A legacy request is refused at once (id null), as it always was; a modern one once its id is known
 * (basic/index.mdx: error responses carry the request's id unless it could not be read).
 */
function refuse<S>(era: ProtocolEra, head: RequestHead, policy: HttpPolicy, r: Refusal): GateResult<S> {
  return era === 'legacy' || head.method !== 'post' || head.contentLength > policy.maxBodyBytes ? now(r) : { kind: 'refuse-after-body', refusal: r };
}

/** Decides the early answer, if any, for an MCP request (`path` starts with `/mcp`). */
export function gateMcpRequest<S>(head: RequestHead, policy: HttpPolicy, lookup: (routeKey: string) => RouteEntry<S> | undefined): GateResult<S> {
  const era = protocolEra(head.protocolVersion);
  // DNS-rebinding protection comes first: a foreign page learns nothing, not even whether a route exists
  // (a 2026-07-28 request gets its own id back, nothing it did not send).
  if (head.origin !== '' && !policy.originAllowed(head.origin)) return refuse(era, head, policy, refusal(403, 'Forbidden: Origin is not allowed', 'forbidden'));
  if (head.host !== '' && !policy.hostAllowed(head.host)) return refuse(era, head, policy, refusal(403, 'Forbidden: Host is not allowed', 'forbidden'));
  if (head.path === '/mcp' || head.path === '/mcp/') return refuse(era, head, policy, refusal(400, 'route key is required: POST /mcp/{routeKey}', 'no_route_key'));
  const routeKey = head.path.slice('/mcp/'.length);
  if (!routeKeyRe.test(routeKey)) {
    // Never echo an invalid key: it may carry markup or control characters.
    return refuse(era, head, policy, refusal(400, `invalid route key: must be a lowercase DNS label (${ROUTE_KEY_PATTERN})`, 'bad_route_key'));
  }
  const route = lookup(routeKey);
  if (route === undefined) return refuse(era, head, policy, refusal(404, `Unknown route "${routeKey}"`, 'unknown_route'));
  if (head.method !== 'post') {
    return now(
      refusal(405, `Method Not Allowed: ${head.method.toUpperCase()} is not served on this endpoint (stateless, no SSE stream); use POST`, 'method_not_allowed', { headers: [['allow', 'POST']] }),
    );
  }
  if (!isJsonContentType(head.contentType)) return refuse(era, head, policy, refusal(415, 'Unsupported Media Type: Content-Type must be application/json', 'unsupported_media_type'));
  const accept = parseAccept(head.accept);
  if (!accept.json) return refuse(era, head, policy, refusal(406, 'Not Acceptable: Accept must allow application/json', 'not_acceptable'));
  if (head.contentLength > policy.maxBodyBytes) return now(refusal(413, `Content Too Large: the body limit is ${policy.maxBodyBytes} bytes`, 'too_large'));
  if (era === 'unsupported') return { kind: 'refuse-after-body', refusal: unsupportedVersion(stripOws(head.protocolVersion)) };
  const snapshot = route.snapshot;
  if (snapshot === null) return refuse(era, head, policy, unavailable(routeKey, route.unavailable, policy));
  return { kind: 'accept', routeKey, route, snapshot, wantsSse: accept.sse, era };
}

/**
 * `MCP-Protocol-Version` names a revision the gateway does not serve:
 * `UnsupportedProtocolVersionError` (basic/versioning.mdx), HTTP 400, with
 * the versions it does serve and the one requested, so a client retries
 * with a mutually supported version. Legacy clients get the same answer a
 * 2026-07-28 server gives them (the code is a recognised modern error).
 */
function unsupportedVersion(requested: string): Refusal {
  return {
    status: 400,
    code: JsonRpcErrorCode.UnsupportedProtocolVersion,
    message: `Unsupported protocol version: ${JSON.stringify(requested.slice(0, 64))} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    label: 'bad_protocol_version',
    data: { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested: requested.slice(0, 64) },
    routeKey: null,
  };
}

/**
 * The 503 of a route without a usable snapshot. Clients get a stable reason
 * code (`error.data.reason`) and a generic message; the detail (manifest
 * URLs, connection errors) stays in readiness and the logs unless
 * `server.exposeErrorDetails` is set for development.
 */
function unavailable(routeKey: string, why: RouteUnavailable | null, policy: HttpPolicy): Refusal {
  const reason = why?.code ?? GatewayErrorCode.CatalogPending;
  const detail = policy.exposeErrorDetails && why !== null ? `: ${why.message}` : '';
  const what = why === null ? 'its catalog is still loading' : `its catalog was refused or could not be loaded (${reason})`;
  return refusal(503, `route "${routeKey}" has no usable catalog: ${what}${detail}`, 'unavailable', {
    headers: [['retry-after', String(policy.retryAfterSeconds)]],
    data: { reason },
    routeKey,
  });
}

/** The 413 answered when a body without (or with a lying) Content-Length passes the limit while being read. */
export function bodyTooLargeReply(policy: HttpPolicy): Reply {
  return refusalReply(refusal(413, `Content Too Large: the body limit is ${policy.maxBodyBytes} bytes`, 'too_large'), null);
}
