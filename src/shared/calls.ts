/**
 * The domain vocabulary of a `tools/call` as it crosses from an acceptor to a
 * shard and back: how a call ended (for metrics and the HTTP status), and the
 * context that travels with it. Transport-neutral: the byte layout lives in
 * `threads/call-frames.ts`.
 */

/** How a call ended; the numeric value travels in result frames, the label goes to metrics. */
export const CallOutcome = {
  /** The Tool Service answered a result. */
  Ok: 0,
  /** A result with `isError: true` (Tool Service failure, invalid arguments, …). */
  ToolError: 1,
  /** A JSON-RPC error (unknown tool, ambiguous tool, …). */
  RpcError: 2,
  /** The route has no runtime on the shard (removed or not installed yet). */
  Rejected: 3,
  /** A bug inside the shard: answered `-32603`, logged. */
  Internal: 4,
} as const;
export type CallOutcome = (typeof CallOutcome)[keyof typeof CallOutcome];

/** Metric label of each {@link CallOutcome}, indexed by its value. */
export const CALL_OUTCOME_LABEL: readonly string[] = ['ok', 'tool_error', 'rpc_error', 'rejected', 'internal'];

/** Label of an outcome number read from a frame (an unknown value is a bug, reported as such). */
export function callOutcomeLabel(outcome: number): string {
  return CALL_OUTCOME_LABEL[outcome] ?? 'internal';
}

/**
 * The `-32700` message for a split body (ADR-0022) whose only bytes that are
 * not JSON are its arguments object: the shard answers it when its parse
 * fails, the acceptor when a 2026-07-28 `Mcp-Param-*` check parses them first.
 */
export const ARGUMENTS_NOT_JSON = 'Parse error: the body is not valid JSON (params.arguments)';

/**
 * What the acceptor hands a shard for one `tools/call`, already checked:
 * the envelope and `params` were validated on the acceptor, the context
 * headers were validated at the edge (invalid ones dropped). `argumentsJson`
 * is what the client sent as the arguments object, parsed by nobody yet when
 * the acceptor split the body (ADR-0022): the shard's parse is its check.
 */
export interface CallRequest {
  routeKey: string;
  toolName: string;
  /** Text of the `params.arguments` object as the client sent it (`{}` when absent); may be not JSON (see {@link ARGUMENTS_NOT_JSON}). */
  argumentsJson: string;
  /** `x-request-id` sent to the Tool Service (the client's, when valid, else generated). */
  requestId: string;
  /** The client's `Mcp-Session-Id` (correlation only), `''` when absent. */
  sessionId: string;
  /** W3C `traceparent`, `''` when absent. */
  traceparent: string;
  /** JSON text of `params._meta.progressToken`, `''` when absent. */
  progressTokenJson: string;
  /** Index into `MCP_LOG_LEVELS` of `_meta["io.modelcontextprotocol/logLevel"]`, or -1 (use the default). */
  logLevel: number;
  /** The client accepts `text/event-stream`: progress and log frames may be streamed. */
  sse: boolean;
  /**
   * Who called, for Tool Services whose credential profile opts in to
   * `forwardIdentity`: JSON `{"sub":…,"claims":{…}}` (only claims some profile
   * forwards), `''`/absent on open routes or when no profile forwards identity.
   * Never a token.
   */
  identity?: string;
  /** The request speaks 2026-07-28: the shard shapes the result for that era (ADR-0014). */
  modern: boolean;
  /** W3C `tracestate` / `baggage` (SEP-414, from `_meta`), `''` when absent. */
  tracestate: string;
  baggage: string;
  /** Modern only, `''` otherwise: JSON text of the request's client capabilities (what input requests it may receive). */
  clientCapabilitiesJson: string;
  /** Modern only: JSON text of `params.inputResponses` (MRTR), `''` when absent. */
  inputResponsesJson: string;
  /** Modern only: `params.requestState` as JSON text (a JSON string), `''` when absent. */
  requestStateJson: string;
}

/**
 * A {@link CallRequest} with every field declared up front, for the objects
 * that pools reuse (the acceptor's requests, the shard's calls): one hidden
 * class for V8 from the first call on, and one place that lists the fields.
 */
export class PooledCallRequest implements CallRequest {
  routeKey = '';
  toolName = '';
  argumentsJson = '';
  requestId = '';
  sessionId = '';
  traceparent = '';
  progressTokenJson = '';
  logLevel = -1;
  sse = false;
  modern = false;
  tracestate = '';
  baggage = '';
  clientCapabilitiesJson = '';
  inputResponsesJson = '';
  requestStateJson = '';
  identity = '';
}
