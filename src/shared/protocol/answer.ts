/**
 * The MCP JSON-RPC core for everything the acceptor answers itself:
 * `initialize`, `ping`, `tools/list` (from the route snapshot's bytes),
 * `logging/setLevel`, notifications and every envelope error. `tools/call`
 * comes back as a `forward` decision for the owning shard. Bytes in,
 * decision out: no HTTP server, no threads.
 */
import assert from 'node:assert';
import { DEFAULTS } from '../config/defaults.js';
import { JsonRpcErrorCode } from '../errors.js';
import { forwardCall, mayDeferArguments, parseRequestBody, readCallArguments, readCallMeta, type ForwardCall } from './call-params.js';
import { exactId } from './id-text.js';
import { clientResponseValidator, encodeId, envelopeValidator, resultReply, rpcErrorReply, type ExactId, type RequestId } from './jsonrpc.js';
import { INITIALIZE_PROTOCOL_VERSIONS, isNegotiableProtocolVersion, LATEST_LEGACY_PROTOCOL_VERSION, LEGACY_SERVER_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from './mcp.js';
import { isMcpLogLevel, MCP_LOG_LEVELS } from './mcp-logging.js';
import type { Reply } from './reply.js';

/** What the acceptor does with a parsed request. */
export type Decision = { kind: 'reply'; reply: Reply; method: string; outcome: 'ok' | 'rpc_error' | 'accepted'; cancels?: RequestId } | ForwardCall;

/** The part of a route snapshot the acceptor needs: the `tools/list` template. */
export interface ListSource {
  readonly listTemplate: Uint8Array;
}

const decoder = new TextDecoder();

/** `initialize` result text per negotiated revision, built once. */
const INITIALIZE_RESULTS = new Map<string, string>(
  INITIALIZE_PROTOCOL_VERSIONS.map((v) => [v, JSON.stringify({ protocolVersion: v, capabilities: LEGACY_SERVER_CAPABILITIES, serverInfo: SERVER_INFO, instructions: SERVER_INSTRUCTIONS })]),
);

const ACCEPTED: Reply = { status: 202, body: '' };

function error(id: RequestId | ExactId | null, code: number, message: string, method = 'invalid'): Decision {
  return { kind: 'reply', reply: rpcErrorReply(id, code, message), method, outcome: 'rpc_error' };
}

function ok(method: string, reply: Reply): Decision {
  return { kind: 'reply', reply, method, outcome: 'ok' };
}

/** Limits the decision enforces (from the configuration). */
export interface AnswerLimits {
  /** `tools.maxArgumentsDepth`: deepest nesting of objects/arrays in `tools/call` arguments. */
  maxArgumentsDepth: number;
}

/** The configuration's default limits (tests and callers without a config). */
export const DEFAULT_LIMITS: AnswerLimits = { maxArgumentsDepth: DEFAULTS.tools.maxArgumentsDepth };

/** Decides the answer to one request body for a route whose snapshot is `route`. */
export function answerRequest(body: Uint8Array, route: ListSource, limits: AnswerLimits = DEFAULT_LIMITS): Decision {
  let message: unknown;
  try {
    message = parseRequestBody(body, mayDeferArguments(body, null));
  } catch {
    return error(null, JsonRpcErrorCode.ParseError, 'Parse error: the body is not valid JSON');
  }
  if (Array.isArray(message)) {
    return error(null, JsonRpcErrorCode.InvalidRequest, 'Invalid Request: JSON-RPC batches are not supported');
  }
  if (!envelopeValidator.Check(message)) {
    // A client's answer to a server request: the gateway sends none, so it only acknowledges.
    if (clientResponseValidator.Check(message) && !('method' in message) && ('result' in message || 'error' in message)) {
      return { kind: 'reply', reply: ACCEPTED, method: 'response', outcome: 'accepted' };
    }
    return error(exactId(idOf(message), body), JsonRpcErrorCode.InvalidRequest, 'Invalid Request: expected {"jsonrpc":"2.0","method":string,"id"?:string|number,"params"?:object}');
  }
  const { method, params } = message;
  if (message.id === undefined) {
    // notifications/cancelled names an in-flight request this process may be running (stateless: same route + session).
    const target = method === 'notifications/cancelled' ? (params as { requestId?: unknown } | undefined)?.requestId : undefined;
    if (typeof target === 'string' || (typeof target === 'number' && Number.isFinite(target))) {
      return { kind: 'reply', reply: ACCEPTED, method, outcome: 'accepted', cancels: target };
    }
    return { kind: 'reply', reply: ACCEPTED, method, outcome: 'accepted' };
  }
  // Answers carry the request's own id text when JSON.parse could not hold it exactly (ids above 2^53).
  const id = exactId(message.id, body);
  if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
    return error(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params must be an object', method);
  }
  const p = params as Record<string, unknown> | undefined;
  switch (method) {
    case 'tools/list':
      // One page holds the whole catalog; a cursor is accepted and ignored (there is no second page).
      return ok(method, { status: 200, contentType: 'application/json', body: route.listTemplate, bodyTail: encodeId(id) + '}' });
    case 'tools/call':
      return toolsCall(message.id, id, p, body, limits);
    case 'initialize': {
      const requested = p?.['protocolVersion'];
      if (typeof requested !== 'string') {
        return error(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: initialize needs params.protocolVersion (string)', method);
      }
      const version = isNegotiableProtocolVersion(requested) ? requested : LATEST_LEGACY_PROTOCOL_VERSION;
      const result = INITIALIZE_RESULTS.get(version);
      assert(result !== undefined, 'INITIALIZE_RESULTS holds every negotiable revision');
      return ok(method, resultReply(id, result));
    }
    case 'ping':
      return ok(method, resultReply(id, '{}'));
    case 'logging/setLevel': {
      const level = p?.['level'];
      if (!isMcpLogLevel(level)) {
        return error(id, JsonRpcErrorCode.InvalidParams, `Invalid params: level must be one of ${MCP_LOG_LEVELS.join(', ')}`, method);
      }
      // Stateless: nothing is remembered; a level applies per request through its own _meta (docs/contracts/mcp-endpoint.md).
      return ok(method, resultReply(id, '{}'));
    }
    default:
      return error(id, JsonRpcErrorCode.MethodNotFound, `Method not found: ${JSON.stringify(method.slice(0, 100))}`, method);
  }
}

/** Checks `tools/call` params on the acceptor, so that no malformed call costs a hop to a shard. */
function toolsCall(rawId: RequestId, id: RequestId | ExactId, params: Record<string, unknown> | undefined, body: Uint8Array, limits: AnswerLimits): Decision {
  const method = 'tools/call';
  if (params === undefined) return error(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: tools/call needs params {name, arguments}', method);
  const name = params['name'];
  if (typeof name !== 'string') return error(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.name must be a string', method);
  const args = params['arguments'] === undefined ? {} : params['arguments'];
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return error(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments must be an object', method);
  }
  const call = forwardCall(rawId, encodeId(id), name, false);
  const unusable = readCallArguments(call, params, args, body, limits.maxArgumentsDepth);
  if (unusable !== null) return error(id, JsonRpcErrorCode.InvalidParams, unusable, method);
  const meta = params['_meta'];
  readCallMeta(call, typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : null);
  return call;
}

/**
 * The id a refusal decided before the body was parsed (a header, the route)
 * can still echo once the body has been read: the request's id when the body
 * is one JSON-RPC request, else null (streamable-http.mdx: error responses
 * carry the request id whenever it could be read).
 */
export function refusalId(body: Uint8Array): RequestId | ExactId | null {
  let message: unknown;
  try {
    message = JSON.parse(decoder.decode(body));
  } catch {
    return null;
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message) || typeof (message as { method?: unknown }).method !== 'string') return null;
  const id = idOf(message);
  return id === null ? null : exactId(id, body);
}

/** The id of an invalid message when it has a usable one, so the client can correlate the error. */
function idOf(message: unknown): RequestId | null {
  if (typeof message !== 'object' || message === null) return null;
  const id = (message as { id?: unknown }).id;
  // Same bounds as a valid id (a 1 KiB string at most), so an invalid request cannot make the answer echo a huge id.
  return (typeof id === 'string' && id.length <= 1024) || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}
