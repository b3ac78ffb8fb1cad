/**
 * The acceptor's intake of a checked `tools/call`, between the MCP endpoint
 * (which parsed and checked it) and the dispatcher (which owns the shard
 * rings): auth admission and the call's span, then the hand-off — held until
 * uWS has parsed the rest of the read the call came in (read-end.ts), so a
 * request pipelined behind it, which makes uWS close the connection, leaves
 * a call that never ran (ADR-0001, issue 11 #3) — and the accounting of
 * every call's end (metrics outcome, span, auth concurrency slots).
 */
import type { HttpResponse } from 'uWebSockets.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { ForwardCall } from '../shared/protocol/call-params.js';
import { errorResponseForIdText } from '../shared/protocol/jsonrpc.js';
import type { Reply } from '../shared/protocol/reply.js';
import type { CallChannelEnd } from '../shared/threads/messages.js';
import { TraceSpanKind, type Tracer } from '../shared/tracing/tracer.js';
import type { AuthStep } from './auth/auth-step.js';
import { CallDispatcher, type DispatchRefusal } from './call-dispatcher.js';
import type { McpRequest, RequestPool } from './mcp-request.js';
import { ReadEndQueue } from './read-end.js';
import { writeReply } from './reply-writer.js';

/** What the intake needs from its endpoint. */
export interface CallIntakeDeps {
  /** Index = shard index. */
  channels: readonly CallChannelEnd[];
  config: GatewayConfig;
  auth: AuthStep;
  tracer: Tracer | null;
  log: Logger;
  /** The endpoint's pool: calls go back to it when over. */
  requests: RequestPool;
  /** Counts one answered request (`mcp_gateway_requests_total`, duration from `startedAt`). */
  record(route: string, method: string, outcome: string, startedAt: number): void;
  /** Whether the gateway is draining (every answer closes its connection). */
  draining(): boolean;
}

const REFUSAL: Record<DispatchRefusal, { code: GatewayErrorCode; message: string; outcome: string }> = {
  full: {
    code: GatewayErrorCode.ShardQueueFull,
    message: 'Service Unavailable: the shard serving this route has workers.maxPendingCallsPerShard calls in flight; retry later',
    outcome: 'queue_full',
  },
  down: {
    code: GatewayErrorCode.ShardUnavailable,
    message: 'Service Unavailable: the shard serving this route is restarting; retry later',
    outcome: 'shard_unavailable',
  },
};

/** Call outcomes that are not the gateway's failure (a span ends without error status). */
const CALL_NOT_FAILED = new Set(['ok', 'tool_error', 'cancelled', 'aborted']);

/** The span attributes of a request past the gate (the endpoint's and the call's spans). */
export function requestSpanAttributes(r: McpRequest, method: string): Record<string, string | number | boolean> {
  return {
    'mcp.method.name': method,
    'http.request.method': 'POST',
    'url.path': `/mcp/${r.routeKey}`,
    'mcp_gateway.route': r.routeKey,
    'mcp_gateway.request_id': r.requestId,
  };
}

/** `tools/call` from a checked request to its shard, on one acceptor thread. */
export class CallIntake {
  /** The hand-off to shards (the acceptor forwards shard lifecycle events to it). */
  readonly calls: CallDispatcher;
  /** Checked calls waiting for the end of their read (read-end.ts). */
  private readonly dispatchQueue = new ReadEndQueue<McpRequest>((r) => this.dispatchQueued(r));

  constructor(private readonly deps: CallIntakeDeps) {
    const { config } = deps;
    this.calls = new CallDispatcher(
      deps.channels,
      config.workers.maxPendingCallsPerShard,
      config.streaming.heartbeatMs,
      config.server.retryAfterSeconds,
      config.workers.maxChannelBacklogBytes,
      config.server.maxBufferedBytesPerConnection,
      (req, outcome) => this.callDone(req, outcome),
    );
  }

  /** A checked `tools/call` (auth admission, span), queued for its shard until its read is parsed. */
  forward(r: McpRequest, res: HttpResponse, call: ForwardCall): void {
    r.idText = call.idText;
    r.toolName = call.toolName;
    r.argumentsJson = call.argumentsJson;
    r.argumentsBytes = call.argumentsBytes;
    r.progressTokenJson = call.progressTokenJson;
    r.logLevel = call.logLevel;
    r.modern = call.modern;
    // SEP-414: the trace context in _meta is the MCP request's own; it wins over an HTTP header set by an intermediary.
    if (call.traceparent !== '') r.traceparent = call.traceparent;
    r.tracestate = call.tracestate;
    r.baggage = call.baggage;
    r.clientCapabilitiesJson = call.clientCapabilitiesJson;
    r.inputResponsesJson = call.inputResponsesJson;
    r.requestStateJson = call.requestStateJson;
    // Auth step: a tool outside the caller's rules is an unknown tool; concurrency limits (429).
    const auth = r.auth;
    if (auth !== null && auth.policy !== null) {
      const denied = this.deps.auth.admitCall(r.routeKey, auth, r.requestId, call.idText, call.toolName);
      if (denied !== null) {
        writeReply(res, denied, this.deps.draining(), r.requestId);
        this.deps.record(r.routeKey, 'tools/call', denied.status === 429 ? 'rate_limited' : 'forbidden', r.startedAt);
        this.deps.requests.release(r);
        return;
      }
    }
    r.identity = auth !== null && auth.principal !== null ? this.deps.auth.identityOf(auth.principal) : '';
    if (this.deps.tracer !== null) {
      const span = this.deps.tracer.start(`tools/call ${call.toolName}`, TraceSpanKind.Server, r.traceparent, r.startedAt);
      if (span.recording) {
        const attributes = requestSpanAttributes(r, 'tools/call');
        attributes['gen_ai.tool.name'] = call.toolName;
        span.setAttributes(attributes);
      }
      r.span = span;
      // The shard continues this span, and the Tool Service the shard's upstream span.
      r.traceparent = span.traceparent;
    }
    // Handed to the shard once uWS has parsed the rest of this read (read-end.ts): a request pipelined behind
    // this one makes uWS close the connection, and then the call must not have run.
    r.state = 'queued';
    this.dispatchQueue.push(r);
  }

  /** A checked `tools/call` whose read is fully parsed: to its shard, or refused (503), or dropped when uWS closed the connection meanwhile. */
  private dispatchQueued(r: McpRequest): void {
    const res = r.res;
    if (res === null || r.aborted) {
      // uWS closed the connection: a request followed this one in the same read (it answers no pipelined
      // request while an answer is pending). Nothing was sent to the Tool Service.
      r.state = 'answered';
      this.callDone(r, 'aborted');
      return;
    }
    const refusal = this.calls.dispatch(r.shard, r);
    if (refusal === null) return;
    r.state = 'answered';
    const auth = r.auth;
    if (auth !== null && auth.policy !== null) this.deps.auth.callEnded(r.routeKey, auth, r.requestId, r.toolName, REFUSAL[refusal].outcome);
    const why = REFUSAL[refusal];
    r.span?.end(why.code);
    r.span = null;
    const reply: Reply = {
      status: 503,
      contentType: 'application/json',
      headers: [['retry-after', String(this.deps.config.server.retryAfterSeconds)]],
      body: errorResponseForIdText(r.idText, JsonRpcErrorCode.TransportError, why.message, { reason: why.code }),
    };
    res.cork(() => writeReply(res, reply, this.deps.draining(), r.requestId));
    this.deps.log.warn({ requestId: r.requestId, route: r.routeKey, reason: why.code }, 'tool call refused');
    this.deps.record(r.routeKey, 'tools/call', why.outcome, r.startedAt);
    this.deps.requests.release(r);
  }

  /** A dispatched (or dropped) call is over: metrics, span, auth accounting, the pooled object back. */
  private callDone(r: McpRequest, outcome: string): void {
    this.deps.record(r.routeKey, 'tools/call', outcome, r.startedAt);
    if (r.span !== null) {
      if (r.span.recording) r.span.setAttribute('mcp_gateway.outcome', outcome);
      r.span.end(CALL_NOT_FAILED.has(outcome) ? undefined : outcome);
      r.span = null;
    }
    if (r.auth !== null && r.auth.policy !== null) this.deps.auth.callEnded(r.routeKey, r.auth, r.requestId, r.toolName, outcome);
    // A cancelled call's connection is being closed, and uWS may still report its abort to this object: not pooled again.
    if (outcome === 'cancelled') this.deps.requests.retire(r);
    else this.deps.requests.release(r);
  }
}
