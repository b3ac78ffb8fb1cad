/**
 * The MCP JSON-RPC core for requests of the 2026-07-28 revision
 * (`MCP-Protocol-Version: 2026-07-28`; docs/decisions/0014-protocol-eras.md).
 * Bytes and headers in, decision out — no HTTP server, no threads — like its
 * legacy sibling `answer.ts`, whose decision types it shares.
 *
 * The validation ladder, first failure answers (every error carries the
 * request's id once the body named one):
 *
 *   parse / envelope ............ 400 -32700 / -32600
 *   params._meta ................ 400 -32602  protocolVersion + clientCapabilities required,
 *                                             clientInfo / logLevel well-formed when present
 *   _meta version ≠ header ...... 400 -32020  HeaderMismatch
 *   Mcp-Method missing / ≠ ...... 400 -32020
 *   Mcp-Name missing / ≠ / bad .. 400 -32020  (tools/call, prompts/get, resources/read)
 *   method ...................... server/discover, tools/list, tools/call, subscriptions/listen;
 *                                 anything else (initialize, ping, logging/setLevel, …) 404 -32601
 *   tools/call params ........... 200 -32602  name, arguments, inputResponses, requestState
 *   Mcp-Param-* ................. 400 -32020  against the tool's x-mcp-header declarations
 *
 * Spec files: basic/index.mdx (`_meta`, error codes), basic/versioning.mdx,
 * basic/transports/streamable-http.mdx (headers, 404 for unknown methods),
 * server/discover.mdx, server/tools.mdx, server/utilities/caching.mdx,
 * server/utilities/logging.mdx, basic/patterns/mrtr.mdx,
 * basic/patterns/subscriptions.mdx.
 */
import { ARGUMENTS_NOT_JSON } from '../calls.js';
import type { HeaderParam } from '../catalog/x-mcp-header.js';
import { JsonRpcErrorCode } from '../errors.js';
import { DEFAULT_LIMITS, type AnswerLimits, type Decision } from './answer.js';
import { callArgumentsValue, forwardCall, mayDeferArguments, parseRequestBody, readCallArguments, readCallMeta } from './call-params.js';
import { decodeHeaderValue, mcpNameField, paramHeaderMismatch, type ParamHeader } from './header-values.js';
import { exactId } from './id-text.js';
import { encodeId, envelopeValidator, resultReply, rpcErrorReply, type ExactId, type RequestId } from './jsonrpc.js';
import { MODERN_PROTOCOL_VERSION, MODERN_SERVER_CAPABILITIES, SERVER_INSTRUCTIONS, SUPPORTED_PROTOCOL_VERSIONS } from './mcp.js';
import { isMcpLogLevel, MCP_LOG_LEVELS } from './mcp-logging.js';
import { CACHE_SCOPE, completeResultJson, META, stripOws } from './modern.js';

/** What a modern request needs of its route's snapshot (the acceptor's copy). */
export interface ModernListSource {
  /** `{"jsonrpc":"2.0","result":{…,"ttlMs":` — append `<ttl>},"id":<id>}`. */
  readonly modernListTemplate: Uint8Array;
  /** When the snapshot was built (ms since the epoch): the age that `ttlMs` counts down from. */
  readonly builtAt: number;
  /** Listed tools with `x-mcp-header` declarations; null when none has any. */
  readonly headerParams: ReadonlyMap<string, readonly HeaderParam[]> | null;
}

/** The mirrored headers of a modern request, copied out of the HTTP request ('' = absent). */
export interface ModernHead {
  mcpMethod: string;
  mcpName: string;
  /** `mcp-param-*` headers (lowercase names); collected only when `Mcp-Method` says `tools/call`. */
  paramHeaders: readonly ParamHeader[];
}

/** How `ttlMs` is derived (ADR-0014): the refresh schedule and the snapshot's age. */
export interface FreshnessPolicy {
  readonly refreshIntervalMs: number;
  readonly refreshJitterRatio: number;
  now(): number;
}

/** `subscriptions/listen`: the acceptor opens the stream (src/main/subscriptions.ts). */
export interface ListenDecision {
  kind: 'listen';
  method: 'subscriptions/listen';
  /** The id as JSON text: the subscription id of every message on the stream. */
  idText: string;
  /** The client asked for `notifications/tools/list_changed` (the only list this gateway has). */
  toolsListChanged: boolean;
}

/** A modern decision: a reply, a call for the shard, or a subscription to open. */
export type ModernDecision = Decision | ListenDecision;

/** `server/discover` does not depend on the route's catalog: identity and capabilities change only with a deployment. */
export const DISCOVER_TTL_MS = 3_600_000;

/** `server/discover` result (server/discover.mdx), built once. */
const DISCOVER_RESULT = completeResultJson(
  JSON.stringify({
    supportedVersions: SUPPORTED_PROTOCOL_VERSIONS,
    capabilities: MODERN_SERVER_CAPABILITIES,
    instructions: SERVER_INSTRUCTIONS,
    ttlMs: DISCOVER_TTL_MS,
    cacheScope: CACHE_SCOPE,
  }).slice(1, -1),
);

const ACCEPTED = { status: 202, body: '' } as const;
/** Bound on `requestState` (an opaque string the client echoes; the body limit bounds it too). */
export const MAX_REQUEST_STATE = 64 * 1024;

type Id = RequestId | ExactId | null;

function fail(id: Id, code: number, message: string, method: string, status: number, data?: unknown): Decision {
  return { kind: 'reply', reply: rpcErrorReply(id, code, message, { status, ...(data !== undefined ? { data } : {}) }), method, outcome: 'rpc_error' };
}

function mismatch(id: Id, method: string, what: string): Decision {
  return fail(id, JsonRpcErrorCode.HeaderMismatch, `Header mismatch: ${what}`, method, 400);
}

/** `ttlMs` of a snapshot built at `builtAt` (see {@link FreshnessPolicy}). */
export function freshnessMs(builtAt: number, policy: FreshnessPolicy): number {
  const period = policy.refreshIntervalMs;
  const fresh = Math.floor(period * (1 - policy.refreshJitterRatio));
  const age = Math.max(0, policy.now() - builtAt);
  return Math.max(0, fresh - (age % period));
}

/** Decides the answer to one 2026-07-28 request body for a route whose snapshot is `route`. */
export function answerModernRequest(body: Uint8Array, route: ModernListSource, head: ModernHead, freshness: FreshnessPolicy, limits: AnswerLimits = DEFAULT_LIMITS): ModernDecision {
  let message: unknown;
  try {
    message = parseRequestBody(body, mayDeferArguments(body, head.mcpMethod));
  } catch {
    return fail(null, JsonRpcErrorCode.ParseError, 'Parse error: the body is not valid JSON', 'invalid', 400);
  }
  if (Array.isArray(message)) return fail(null, JsonRpcErrorCode.InvalidRequest, 'Invalid Request: JSON-RPC batches are not supported', 'invalid', 400);
  if (!envelopeValidator.Check(message)) {
    const why =
      typeof message === 'object' && message !== null && !('method' in message) && ('result' in message || 'error' in message)
        ? 'Invalid Request: JSON-RPC responses cannot be posted (2026-07-28 servers send no requests)'
        : 'Invalid Request: expected {"jsonrpc":"2.0","method":string,"id"?:string|number,"params"?:object}';
    return fail(exactId(usableId(message), body), JsonRpcErrorCode.InvalidRequest, why, 'invalid', 400);
  }
  const { method, params } = message;
  // No client notification is defined over Streamable HTTP in 2026-07-28 (cancellation is closing the stream): accepted, nothing to do.
  if (message.id === undefined) return { kind: 'reply', reply: ACCEPTED, method, outcome: 'accepted' };
  const id = exactId(message.id, body);

  // _meta (basic/index.mdx "Per-request protocol fields"): malformed → -32602, HTTP 400.
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: 2026-07-28 requests carry params._meta with ${META.protocolVersion} and ${META.clientCapabilities}`, method, 400);
  }
  const p = params as Record<string, unknown>;
  const meta = p['_meta'];
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) {
    return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params._meta is required (${META.protocolVersion}, ${META.clientCapabilities})`, method, 400);
  }
  const m = meta as Record<string, unknown>;
  const version = m[META.protocolVersion];
  if (typeof version !== 'string') return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params._meta["${META.protocolVersion}"] must be a string`, method, 400);
  const capabilities = m[META.clientCapabilities];
  if (!isObject(capabilities)) return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params._meta["${META.clientCapabilities}"] must be an object`, method, 400);
  const clientInfo = m[META.clientInfo];
  if (clientInfo !== undefined && !(isObject(clientInfo) && typeof clientInfo['name'] === 'string' && typeof clientInfo['version'] === 'string')) {
    return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params._meta["${META.clientInfo}"] must be {name, version} when present`, method, 400);
  }
  const level = m[META.logLevel];
  if (level !== undefined && !isMcpLogLevel(level)) {
    return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params._meta["${META.logLevel}"] must be one of ${MCP_LOG_LEVELS.join(', ')}`, method, 400);
  }

  // Header ⇔ body (streamable-http.mdx "Server Validation"): -32020, HTTP 400.
  if (version !== MODERN_PROTOCOL_VERSION) {
    return mismatch(id, method, `MCP-Protocol-Version is ${MODERN_PROTOCOL_VERSION} but params._meta names ${JSON.stringify(version.slice(0, 64))}`);
  }
  if (head.mcpMethod === '') return mismatch(id, method, 'the Mcp-Method header is missing');
  const headerMethod = stripOws(head.mcpMethod);
  if (headerMethod !== method) return mismatch(id, method, `Mcp-Method ${JSON.stringify(headerMethod.slice(0, 100))} does not match the body method ${JSON.stringify(method.slice(0, 100))}`);
  const nameField = mcpNameField(method);
  const bodyName = nameField === null ? undefined : p[nameField];
  if (typeof bodyName === 'string') {
    if (head.mcpName === '') return mismatch(id, method, `the Mcp-Name header is missing (params.${nameField as string} is ${JSON.stringify(bodyName.slice(0, 128))})`);
    const headerName = decodeHeaderValue(head.mcpName);
    if (headerName === null) return mismatch(id, method, 'the Mcp-Name header value is malformed (invalid characters or Base64)');
    if (headerName !== bodyName)
      return mismatch(id, method, `Mcp-Name ${JSON.stringify(headerName.slice(0, 128))} does not match params.${nameField as string} ${JSON.stringify(bodyName.slice(0, 128))}`);
  }

  switch (method) {
    case 'server/discover':
      return { kind: 'reply', reply: resultReply(id, DISCOVER_RESULT), method, outcome: 'ok' };
    case 'tools/list':
      // One page holds the whole catalog; a cursor is accepted and ignored. ttlMs is spliced like the id (server/utilities/caching.mdx).
      return {
        kind: 'reply',
        reply: { status: 200, contentType: 'application/json', body: route.modernListTemplate, bodyTail: `${freshnessMs(route.builtAt, freshness)}},"id":${encodeId(id)}}` },
        method,
        outcome: 'ok',
      };
    case 'tools/call':
      return modernToolsCall(message.id, id, p, m, capabilities, route, head, body, limits);
    case 'subscriptions/listen': {
      const filter = p['notifications'];
      if (!isObject(filter)) return fail(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: subscriptions/listen needs params.notifications (an object)', method, 200);
      return { kind: 'listen', method, idText: encodeId(id), toolsListChanged: filter['toolsListChanged'] === true };
    }
    default:
      // Unknown and removed methods (initialize, ping, logging/setLevel, resources/subscribe, …): 404 + -32601.
      return fail(id, JsonRpcErrorCode.MethodNotFound, `Method not found: ${JSON.stringify(method.slice(0, 100))}`, method, 404);
  }
}

/** `tools/call` checks that need no catalog, the `Mcp-Param-*` check against the listed tool, then the call for the shard. */
function modernToolsCall(
  rawId: RequestId,
  id: RequestId | ExactId,
  p: Record<string, unknown>,
  meta: Record<string, unknown>,
  capabilities: Record<string, unknown>,
  route: ModernListSource,
  head: ModernHead,
  body: Uint8Array,
  limits: AnswerLimits,
): Decision {
  const method = 'tools/call';
  const name = p['name'];
  if (typeof name !== 'string') return fail(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.name must be a string', method, 200);
  const args = p['arguments'] === undefined ? {} : p['arguments'];
  if (!isObject(args)) return fail(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments must be an object', method, 200);
  // MRTR (basic/patterns/mrtr.mdx): the gateway keeps no state; it checks the shapes and forwards both to the Tool Service.
  const inputResponses = p['inputResponses'];
  let inputResponsesJson = '';
  if (inputResponses !== undefined) {
    if (!isObject(inputResponses) || !Object.values(inputResponses).every(isObject)) {
      return fail(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.inputResponses must map each input request key to a result object', method, 200);
    }
    inputResponsesJson = JSON.stringify(inputResponses);
  }
  const requestState = p['requestState'];
  if (requestState !== undefined && (typeof requestState !== 'string' || requestState.length > MAX_REQUEST_STATE)) {
    return fail(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params.requestState must be a string of at most ${MAX_REQUEST_STATE} characters`, method, 200);
  }
  const declared = route.headerParams?.get(name);
  if (declared !== undefined) {
    let values: unknown;
    try {
      values = callArgumentsValue(p, body);
    } catch {
      return fail(id, JsonRpcErrorCode.ParseError, ARGUMENTS_NOT_JSON, method, 400);
    }
    const wrong = paramHeaderMismatch(declared, values, head.paramHeaders);
    if (wrong !== null) return mismatch(id, method, wrong);
  }
  const call = forwardCall(rawId, encodeId(id), name, true);
  call.clientCapabilitiesJson = JSON.stringify(capabilities);
  call.inputResponsesJson = inputResponsesJson;
  call.requestStateJson = requestState === undefined ? '' : JSON.stringify(requestState);
  // As on the legacy path (answer.ts): the client's bytes are spliced, and nesting is bounded for the Tool Service.
  const unusable = readCallArguments(call, p, args, body, limits.maxArgumentsDepth);
  if (unusable !== null) return fail(id, JsonRpcErrorCode.InvalidParams, unusable, method, 200);
  readCallMeta(call, meta);
  return call;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The id of an invalid message when it has a usable one (the same bounds as a valid id). */
function usableId(message: unknown): RequestId | null {
  if (typeof message !== 'object' || message === null) return null;
  const id = (message as { id?: unknown }).id;
  return (typeof id === 'string' && id.length <= 1024) || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
