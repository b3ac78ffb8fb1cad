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
import { validBaggage, validTraceparent, validTracestate } from './context-headers.js';
import { argumentsBytes as argumentsBytesIn, nestsDeeperThan } from './arguments-span.js';
import { exactId } from './id-text.js';
import { clientResponseValidator, encodeId, envelopeValidator, resultReply, rpcErrorReply, type ExactId, type RequestId } from './jsonrpc.js';
import { INITIALIZE_PROTOCOL_VERSIONS, isNegotiableProtocolVersion, LATEST_LEGACY_PROTOCOL_VERSION, LEGACY_SERVER_CAPABILITIES, SERVER_INFO, SERVER_INSTRUCTIONS } from './mcp.js';
import { isMcpLogLevel, LOG_LEVEL_META_KEY, MCP_LOG_LEVELS } from './mcp-logging.js';
import type { Reply } from './reply.js';

/**
 * A checked `tools/call` for the owning shard. The acceptor keeps `idText`
 * (it alone writes the JSON-RPC envelope of the answer); the shard receives
 * only what it needs to resolve, validate and call the tool.
 */
export interface ForwardCall {
  kind: 'forward';
  method: 'tools/call';
  /** The request id as the JSON text the answer echoes. */
  idText: string;
  /** The id as parsed (notifications/cancelled names it). */
  id: RequestId;
  toolName: string;
  /**
   * The client's own bytes of `params.arguments` (a view into the body), or
   * null — then `argumentsJson` holds them (`{}` when absent, or serialised
   * when the bytes could not be located).
   */
  argumentsBytes: Uint8Array | null;
  argumentsJson: string;
  /** JSON text of `params._meta.progressToken`, `''` when absent or not a string/number. */
  progressTokenJson: string;
  /** Index into `MCP_LOG_LEVELS` of the request's own log level, -1 when it names none. */
  logLevel: number;
  /** The request speaks 2026-07-28 (answer-modern.ts): the shard shapes the result for that era. */
  modern: boolean;
  /** W3C trace context from `params._meta` (SEP-414), validated; `''` when absent or malformed. */
  traceparent: string;
  tracestate: string;
  baggage: string;
  /** Modern only (`''` otherwise): JSON text of `_meta["io.modelcontextprotocol/clientCapabilities"]`. */
  clientCapabilitiesJson: string;
  /** Modern only: JSON text of `params.inputResponses` (MRTR), `''` when absent. */
  inputResponsesJson: string;
  /** Modern only: JSON text (a JSON string) of `params.requestState` (MRTR), `''` when absent. */
  requestStateJson: string;
}

/** What the acceptor does with a parsed request. */
export type Decision = { kind: 'reply'; reply: Reply; method: string; outcome: 'ok' | 'rpc_error' | 'accepted'; cancels?: RequestId } | ForwardCall;

/** The part of a route snapshot the acceptor needs: the `tools/list` template. */
export interface ListSource {
  readonly listTemplate: Uint8Array;
}

const decoder = new TextDecoder();


/** `initialize` result text per negotiated revision, built once. */
const INITIALIZE_RESULTS = new Map<string, string>(
  INITIALIZE_PROTOCOL_VERSIONS.map((v) => [
    v,
    JSON.stringify({ protocolVersion: v, capabilities: LEGACY_SERVER_CAPABILITIES, serverInfo: SERVER_INFO, instructions: SERVER_INSTRUCTIONS }),
  ]),
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
    message = JSON.parse(decoder.decode(body));
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
  // The client's bytes are spliced as they are; serialising the parsed object costs more than finding them.
  const argumentsBytes = params['arguments'] === undefined ? null : argumentsBytesIn(body);
  let argumentsJson = '{}';
  if (argumentsBytes === null && params['arguments'] !== undefined) {
    try {
      argumentsJson = JSON.stringify(args);
    } catch {
      // JSON.parse is iterative, JSON.stringify recursive: only pathological nesting gets here.
      return error(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments nests too deeply', method);
    }
  }
  // Tool Services are spared documents nested deeper than the configured bound (many parsers recurse).
  if (nestsDeeperThan(argumentsBytes ?? Buffer.from(argumentsJson), limits.maxArgumentsDepth)) {
    return error(id, JsonRpcErrorCode.InvalidParams, `Invalid params: params.arguments nests deeper than ${limits.maxArgumentsDepth} levels (tools.maxArgumentsDepth)`, method);
  }
  const meta = params['_meta'];
  let progressTokenJson = '';
  let logLevel = -1;
  let traceparent = '';
  let tracestate = '';
  let baggage = '';
  if (typeof meta === 'object' && meta !== null && !Array.isArray(meta)) {
    const m = meta as Record<string, unknown>;
    const token = m['progressToken'];
    if (typeof token === 'string' || (typeof token === 'number' && Number.isFinite(token))) progressTokenJson = JSON.stringify(token);
    const level = m[LOG_LEVEL_META_KEY];
    if (isMcpLogLevel(level)) logLevel = MCP_LOG_LEVELS.indexOf(level);
    // SEP-414 trace context travels in _meta in every revision; malformed values are dropped like the HTTP headers.
    const tp = m['traceparent'];
    if (typeof tp === 'string') traceparent = validTraceparent(tp) ?? '';
    const ts = m['tracestate'];
    if (traceparent !== '' && typeof ts === 'string') tracestate = validTracestate(ts) ?? '';
    const bg = m['baggage'];
    if (typeof bg === 'string') baggage = validBaggage(bg) ?? '';
  }
  return {
    kind: 'forward',
    method,
    id: rawId,
    idText: encodeId(id),
    toolName: name,
    argumentsBytes,
    argumentsJson,
    progressTokenJson,
    logLevel,
    modern: false,
    traceparent,
    tracestate,
    baggage,
    clientCapabilitiesJson: '',
    inputResponsesJson: '',
    requestStateJson: '',
  };
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
