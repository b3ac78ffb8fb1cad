/**
 * Everything about an MCP request that is decided from its request line and
 * headers, before the body is read or parsed (docs/contracts/mcp-endpoint.md): DNS-rebinding
 * checks, path and route key, HTTP method, media types, protocol version,
 * declared body size, and whether the route has a usable snapshot.
 */
import { ROUTE_KEY_PATTERN } from '../config/schema.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../errors.js';
import type { RouteUnavailable } from '../threads/messages.js';
import { isJsonContentType, parseAccept, protocolVersionHeaderOk, type HttpPolicy } from './http-policy.js';
import { rpcErrorReply } from './jsonrpc.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from './mcp.js';
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

/** Gate outcome: an early reply, or the route to serve with its snapshot (one reference for the whole request). */
export type GateResult<S> = { kind: 'reply'; reply: Reply; label: string } | { kind: 'accept'; routeKey: string; route: RouteEntry<S>; snapshot: S; wantsSse: boolean };

function reject(status: number, message: string, label: string, headers?: Reply['headers'], data?: unknown): { kind: 'reply'; reply: Reply; label: string } {
  return {
    kind: 'reply',
    reply: rpcErrorReply(null, JsonRpcErrorCode.TransportError, message, { status, ...(headers ? { headers } : {}), ...(data !== undefined ? { data } : {}) }),
    label,
  };
}

/** Decides the early answer, if any, for an MCP request (`path` starts with `/mcp`). */
export function gateMcpRequest<S>(head: RequestHead, policy: HttpPolicy, lookup: (routeKey: string) => RouteEntry<S> | undefined): GateResult<S> {
  // DNS-rebinding protection comes first: a foreign page learns nothing, not even whether a route exists.
  if (head.origin !== '' && !policy.originAllowed(head.origin)) return reject(403, 'Forbidden: Origin is not allowed', 'forbidden');
  if (head.host !== '' && !policy.hostAllowed(head.host)) return reject(403, 'Forbidden: Host is not allowed', 'forbidden');
  if (head.path === '/mcp' || head.path === '/mcp/') return reject(400, 'route key is required: POST /mcp/{routeKey}', 'no_route_key');
  const routeKey = head.path.slice('/mcp/'.length);
  if (!routeKeyRe.test(routeKey)) {
    // Never echo an invalid key: it may carry markup or control characters.
    return reject(400, `invalid route key: must be a lowercase DNS label (${ROUTE_KEY_PATTERN})`, 'bad_route_key');
  }
  const route = lookup(routeKey);
  if (route === undefined) return reject(404, `Unknown route "${routeKey}"`, 'unknown_route');
  if (head.method !== 'post') {
    return reject(405, `Method Not Allowed: ${head.method.toUpperCase()} is not served on this endpoint (stateless, no SSE stream); use POST`, 'method_not_allowed', [['allow', 'POST']]);
  }
  if (!isJsonContentType(head.contentType)) return reject(415, 'Unsupported Media Type: Content-Type must be application/json', 'unsupported_media_type');
  const accept = parseAccept(head.accept);
  if (!accept.json) return reject(406, 'Not Acceptable: Accept must allow application/json', 'not_acceptable');
  if (!protocolVersionHeaderOk(head.protocolVersion)) {
    return reject(400, `Bad Request: unsupported MCP-Protocol-Version (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`, 'bad_protocol_version');
  }
  if (head.contentLength > policy.maxBodyBytes) return reject(413, `Content Too Large: the body limit is ${policy.maxBodyBytes} bytes`, 'too_large');
  const snapshot = route.snapshot;
  if (snapshot === null) return unavailableReply(routeKey, route.unavailable, policy);
  return { kind: 'accept', routeKey, route, snapshot, wantsSse: accept.sse };
}

/**
 * The 503 of a route without a usable snapshot. Clients get a stable reason
 * code (`error.data.reason`) and a generic message; the detail (manifest
 * URLs, connection errors) stays in readiness and the logs unless
 * `server.exposeErrorDetails` is set for development.
 */
function unavailableReply(routeKey: string, unavailable: RouteUnavailable | null, policy: HttpPolicy): { kind: 'reply'; reply: Reply; label: string } {
  const reason = unavailable?.code ?? GatewayErrorCode.CatalogPending;
  const detail = policy.exposeErrorDetails && unavailable !== null ? `: ${unavailable.message}` : '';
  const what = unavailable === null ? 'its catalog is still loading' : `its catalog was refused or could not be loaded (${reason})`;
  return reject(503, `route "${routeKey}" has no usable catalog: ${what}${detail}`, 'unavailable', [['retry-after', String(policy.retryAfterSeconds)]], { reason });
}

/** The 413 answered when a body without (or with a lying) Content-Length passes the limit while being read. */
export function bodyTooLargeReply(policy: HttpPolicy): Reply {
  return reject(413, `Content Too Large: the body limit is ${policy.maxBodyBytes} bytes`, 'too_large').reply;
}
