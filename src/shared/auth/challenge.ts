/**
 * The answers of an authentication or authorization refusal and the
 * protected resource metadata of a route — everything a client sees of the
 * auth step, as plain {@link Reply} values (bytes in, bytes out):
 *
 * | refusal | status | `WWW-Authenticate` (RFC 6750 §3, RFC 9728 §5.1) | `error.data.reason` |
 * |---|---|---|---|
 * | no credentials | 401 | `Bearer resource_metadata="…"[, scope="…"]` (no `error`: RFC 6750 §3.1) | `UNAUTHENTICATED` |
 * | bad/expired/foreign token or key | 401 | `Bearer error="invalid_token", error_description="…", resource_metadata="…"` | `UNAUTHENTICATED` |
 * | authenticated, no rule for this route | 403 | `Bearer error="insufficient_scope", resource_metadata="…"[, scope="…"]` | `FORBIDDEN` |
 * | rate limit | 429 + `Retry-After` | — | `RATE_LIMITED` |
 * | token cannot be checked now (JWKS down, too many checks in flight) | 503 + `Retry-After` | — | `AUTH_UNAVAILABLE` |
 *
 * Bodies are JSON-RPC errors `-32000` with `id: null` (decided before the
 * body is read, as every other transport refusal), except a forbidden tool,
 * which is `-32602 Unknown tool` with the request's id (decided after).
 */
import { GatewayErrorCode, JsonRpcErrorCode } from '../errors.js';
import { errorResponseForIdText, rpcErrorReply } from '../protocol/jsonrpc.js';
import type { Reply } from '../protocol/reply.js';

/** Path prefix of RFC 9728 metadata documents. */
export const WELL_KNOWN_PRM = '/.well-known/oauth-protected-resource';

/** A route's public identity: its resource URL (token audience) and where its metadata lives. */
export interface RouteResource {
  /** `{resourceBaseUrl}/mcp/{routeKey}`: the RFC 8707 resource and the default accepted `aud`. */
  readonly resource: string;
  /** `{origin}/.well-known/oauth-protected-resource{basePath}/mcp/{routeKey}` (RFC 9728 §3.1 path insertion). */
  readonly metadataUrl: string;
  /** The path part of {@link metadataUrl}, as the gateway receives it. */
  readonly metadataPath: string;
}

/** Resource URL and metadata URL of a route. `base` is `auth.resourceBaseUrl` (checked at config load). */
export function routeResource(base: string, routeKey: string): RouteResource {
  const u = new URL(base);
  const path = `${u.pathname === '/' ? '' : u.pathname}/mcp/${routeKey}`;
  const metadataPath = `${WELL_KNOWN_PRM}${path}`;
  return { resource: `${base}/mcp/${routeKey}`, metadataUrl: `${u.origin}${metadataPath}`, metadataPath };
}

/** The route key of a metadata path, or null when the path is not one (`base` as above). */
export function routeKeyOfMetadataPath(base: string, path: string): string | null {
  const u = new URL(base);
  const prefix = `${WELL_KNOWN_PRM}${u.pathname === '/' ? '' : u.pathname}/mcp/`;
  return path.startsWith(prefix) && path.length > prefix.length ? path.slice(prefix.length) : null;
}

/** RFC 9728 §2 metadata of a protected route. */
export function protectedResourceMetadata(r: RouteResource, authorizationServers: readonly string[], scopesSupported: readonly string[], routeKey: string): string {
  const doc: Record<string, unknown> = { resource: r.resource };
  if (authorizationServers.length > 0) doc['authorization_servers'] = authorizationServers;
  if (scopesSupported.length > 0) doc['scopes_supported'] = scopesSupported;
  doc['bearer_methods_supported'] = ['header'];
  doc['resource_name'] = `MCP route ${routeKey}`;
  return JSON.stringify(doc);
}

/** An RFC 7230 quoted-string: `"` and `\` escaped; control characters never occur (we build every value). */
function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Why a credential was refused; the text goes into `error_description` and the JSON-RPC message. */
export type InvalidCredential = 'expired' | 'not_yet_valid' | 'audience' | 'issuer' | 'signature' | 'malformed' | 'unknown_key' | 'algorithm' | 'claims' | 'unknown_api_key' | 'wrong_provider';

const DESCRIPTIONS: Record<InvalidCredential, string> = {
  expired: 'the access token expired',
  not_yet_valid: 'the access token is not valid yet',
  audience: 'the access token was not issued for this resource',
  issuer: 'the access token was issued by an untrusted issuer',
  signature: 'the access token signature is invalid',
  malformed: 'the access token is malformed',
  unknown_key: 'the access token was signed with an unknown key',
  algorithm: 'the access token uses an algorithm that is not accepted',
  claims: 'the access token lacks a required claim',
  unknown_api_key: 'the API key is not valid',
  wrong_provider: 'the credential is not accepted on this route',
};

function refusal(status: number, reason: GatewayErrorCode, message: string, headers: Array<[string, string]>): Reply {
  return rpcErrorReply(null, JsonRpcErrorCode.TransportError, message, { status, headers, data: { reason } });
}

/** Precomputed refusals of one protected route (built once per route, not per request). */
export interface RouteChallenges {
  readonly missing: Reply;
  readonly invalid: Readonly<Record<InvalidCredential, Reply>>;
  readonly forbidden: Reply;
}

/** Builds a route's 401/403 answers. */
export function routeChallenges(r: RouteResource, scopesSupported: readonly string[]): RouteChallenges {
  const meta = `resource_metadata=${quoted(r.metadataUrl)}`;
  const scope = scopesSupported.length > 0 ? `, scope=${quoted(scopesSupported.join(' '))}` : '';
  const missing = refusal(401, GatewayErrorCode.Unauthenticated, 'Unauthorized: this route requires an access token (Authorization: Bearer)', [['www-authenticate', `Bearer ${meta}${scope}`]]);
  const invalid = Object.fromEntries(
    (Object.keys(DESCRIPTIONS) as InvalidCredential[]).map((why) => [
      why,
      refusal(401, GatewayErrorCode.Unauthenticated, `Unauthorized: ${DESCRIPTIONS[why]}`, [
        ['www-authenticate', `Bearer error="invalid_token", error_description=${quoted(DESCRIPTIONS[why])}, ${meta}`],
      ]),
    ]),
  ) as Record<InvalidCredential, Reply>;
  const forbidden = refusal(403, GatewayErrorCode.Forbidden, 'Forbidden: the caller is not allowed to use this route', [['www-authenticate', `Bearer error="insufficient_scope", ${meta}${scope}`]]);
  return { missing, invalid, forbidden };
}

/** 429 with the seconds until the bucket has a token again (at least 1). */
export function rateLimitedReply(retryAfterSeconds: number, what: 'caller' | 'route', limit: 'rate' | 'concurrency', idText: string | null): Reply {
  const message =
    limit === 'rate'
      ? `Too Many Requests: the ${what === 'caller' ? "caller's" : "route's"} request rate limit is reached; retry later`
      : `Too Many Requests: the ${what === 'caller' ? "caller's" : "route's"} limit of concurrent tool calls is reached; retry later`;
  const headers: Array<[string, string]> = [['retry-after', String(Math.max(1, Math.ceil(retryAfterSeconds)))]];
  const data = { reason: GatewayErrorCode.RateLimited };
  if (idText === null) return rpcErrorReply(null, JsonRpcErrorCode.TransportError, message, { status: 429, headers, data });
  return { status: 429, contentType: 'application/json', headers, body: errorResponseForIdText(idText, JsonRpcErrorCode.TransportError, message, data) };
}

/** 503: the credential cannot be checked right now (not a verdict on it). */
export function authUnavailableReply(retryAfterSeconds: number, why: string): Reply {
  return refusal(503, GatewayErrorCode.AuthUnavailable, `Service Unavailable: the access token cannot be checked right now (${why}); retry later`, [['retry-after', String(retryAfterSeconds)]]);
}

/**
 * The answer to `tools/call` of a tool the caller may not use: exactly what
 * an unknown tool gets from the shard (`tool-call.ts`), so the answer does
 * not reveal that the tool exists (it is not in the caller's `tools/list`).
 */
export function hiddenToolReply(idText: string, toolName: string): Reply {
  return {
    status: 200,
    contentType: 'application/json',
    body: errorResponseForIdText(idText, JsonRpcErrorCode.InvalidParams, `Unknown tool: ${JSON.stringify(toolName)}`),
  };
}
