/**
 * Executes the `tools/call` frames an acceptor hands this shard. Each call
 * lives in a pooled {@link ShardCall} (no per-call closure, promise or map
 * entry): it is found again through its acceptor link's slot table, indexed
 * by the low bits of the call id. Every outcome — result, tool error, JSON-RPC
 * error, crash — leaves as exactly one final frame on the same link, after
 * any streamed events of that call; a cancelled call sends nothing more.
 */
import type { Buffer } from 'node:buffer';
import type { Logger } from '../../shared/log.js';
import { CallOutcome, PooledCallRequest } from '../../shared/calls.js';
import type { CatalogTool } from '../../shared/catalog/types.js';
import { JsonRpcErrorCode } from '../../shared/errors.js';
import { MCP_LOG_LEVELS, type McpLogLevel } from '../../shared/protocol/mcp-logging.js';
import { CALL_SLOT_MASK, CallKind, callFrameId, callFrameKind, readCall, ResultKind, writeResult, type FrameSink } from '../../shared/threads/call-frames.js';
import { Observation, type CallObserver } from './call-observer.js';
import { finalAnswer, gatewayResult, type FinalAnswer } from './call-result.js';
import { logNotification, progressNotification, type StreamFrame } from './notification-forwarder.js';
import type { ResolvedTool } from './route-runtime.js';
import type { RouteTable } from './route-table.js';
import { prepareCall } from './tool-call.js';
import type { Handoff, Permit, Refusal as GuardRefusal } from './service-guard.js';
import type { ServiceGuards } from './service-guards.js';
import { toolError } from './tool-result.js';
import type { ToolServiceClient, UpstreamCall, UpstreamResult } from './upstream.js';

/** This shard's end of the channel pair with one acceptor thread. */
export class AcceptorLink {
  /** In-flight calls by acceptor slot index (dense: acceptors reuse low slots first). */
  readonly inflight: Array<ShardCall | undefined> = [];

  constructor(
    readonly index: number,
    public sink: FrameSink,
  ) {}
}

/** One call on this shard. Pooled: every field is reset when a call starts. */
export class ShardCall extends PooledCallRequest implements UpstreamCall {
  /** Set before the upstream call; a stale reference between calls is harmless (never read). */
  tool!: CatalogTool;
  /** The resolved tool (its output validator shapes the answer); set with `tool`. */
  resolved!: ResolvedTool;
  onFrame: ((frame: StreamFrame) => void) | null = null;
  onStreamStart: (() => void) | null = null;
  callId = 0;
  link: AcceptorLink | null = null;
  /** Set by a cancel frame: the acceptor already finished its side, nothing more is sent. */
  cancelled = false;
  /** Log frames at or above this level are forwarded; null: none (a 2026-07-28 request that named no level). */
  minLevel: McpLogLevel | null = 'info';
  lastProgress = Number.NEGATIVE_INFINITY;
  /** The bulkhead/breaker permit while the upstream call runs. */
  permit: Permit | null = null;
  /** Waiting for a slot of its Tool Service's bulkhead (bounded by the tool's timeout). */
  queueTimer: NodeJS.Timeout | null = null;
  /** Timings, upstream cause and spans of the current call (call-observer.ts). */
  readonly observation = new Observation();

  constructor(private readonly executor: CallExecutor) {
    super();
  }

  /** NDJSON progress/log frame → notification event (contract v0.3 rules), bound once per pooled object. */
  readonly forwardFrame = (frame: StreamFrame): void => this.executor.forward(this, frame);
  readonly startStream = (): void => this.executor.event(this, ResultKind.StreamStart, '');
  readonly queueTimedOut = (): void => this.executor.queueTimedOut(this);

  onDone(result: UpstreamResult): void {
    this.executor.finish(this, result);
  }
}

/** Runs calls for every acceptor link of this shard. */
export class CallExecutor {
  private readonly pool: ShardCall[] = [];

  constructor(
    private readonly routes: RouteTable,
    private readonly client: ToolServiceClient,
    private readonly guards: ServiceGuards<ShardCall>,
    private readonly observer: CallObserver,
    private readonly log: Logger,
    private readonly defaultLogLevel: McpLogLevel,
  ) {}

  /** Handles one frame that `link`'s acceptor sent (a view valid only during this call). */
  onFrame(link: AcceptorLink, buf: Buffer, offset: number, length: number): void {
    const callId = callFrameId(buf, offset);
    if (callFrameKind(buf, offset) === CallKind.Cancel) {
      const call = link.inflight[callId & CALL_SLOT_MASK];
      if (call !== undefined && call.callId === callId && !call.cancelled) this.cancel(call);
      return;
    }
    const call = this.pool.pop() ?? new ShardCall(this);
    readCall(buf, offset, length, call);
    call.callId = callId;
    call.link = link;
    call.cancelled = false;
    link.inflight[callId & CALL_SLOT_MASK] = call;
    this.observer.received(call);
    try {
      this.start(call);
    } catch (err) {
      this.log.error({ requestId: call.requestId, route: call.routeKey, err }, 'tool call crashed in the shard');
      this.answer(call, ResultKind.Error, CallOutcome.Internal, 200, INTERNAL_ERROR);
    }
  }

  /** Fails every call of a link whose acceptor thread is gone (its clients cannot be answered): aborts them upstream. */
  dropLink(link: AcceptorLink): void {
    for (const call of link.inflight) if (call !== undefined && !call.cancelled) this.cancel(call);
  }

  /** Nothing more is sent for a cancelled call; a queued one leaves its queue, a running one is aborted upstream. */
  private cancel(call: ShardCall): void {
    call.cancelled = true;
    if (call.queueTimer !== null) {
      clearTimeout(call.queueTimer);
      call.queueTimer = null;
      if (this.guards.cancel(call.tool.serviceId, call)) this.answer(call, ResultKind.Result, CallOutcome.ToolError, 200, '');
      return;
    }
    this.client.cancel(call);
  }

  /** A queued call's deadline passed before a slot freed. */
  queueTimedOut(call: ShardCall): void {
    call.queueTimer = null;
    if (!this.guards.cancel(call.tool.serviceId, call)) return;
    this.observer.refused(call, call.tool.serviceId, 'busy');
    const message = `Tool Service "${call.tool.serviceId}" is at capacity: no free slot within the tool's ${call.tool.timeoutMs} ms (tools.bulkhead.maxConcurrentPerService); the tool was not called`;
    this.answer(call, ResultKind.Result, CallOutcome.ToolError, 200, gatewayResult(toolError(message), call.modern).payload);
  }

  private start(call: ShardCall): void {
    const prepared = prepareCall(this.routes.get(call.routeKey), call);
    if (prepared.kind !== 'tool') {
      this.answer(call, prepared.kind, prepared.outcome, prepared.status, prepared.payload);
      return;
    }
    call.tool = prepared.tool;
    call.resolved = prepared;
    if (call.sse) {
      call.onFrame = call.forwardFrame;
      call.onStreamStart = call.startStream;
      // 2026-07-28 (server/utilities/logging.mdx): no notifications/message unless the request's _meta names a level.
      call.minLevel = MCP_LOG_LEVELS[call.logLevel] ?? (call.modern ? null : this.defaultLogLevel);
      call.lastProgress = Number.NEGATIVE_INFINITY;
    } else {
      call.onFrame = null;
      call.onStreamStart = null;
    }
    const admission = this.guards.admit(call.tool.serviceId, call);
    if (admission.kind === 'run') {
      call.permit = admission.permit;
      this.observer.upstreamStart(call, call.tool);
      this.client.call(call);
    } else if (admission.kind === 'queued') call.queueTimer = setTimeout(call.queueTimedOut, call.tool.timeoutMs);
    else this.refuse(call, admission);
  }

  /** The bulkhead is full or the circuit open: a tool error that says when to retry; the Tool Service is not called. */
  private refuse(call: ShardCall, refusal: GuardRefusal): void {
    const service = call.tool.serviceId;
    this.observer.refused(call, service, refusal.reason);
    const retry = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
    const message =
      refusal.reason === 'circuit_open'
        ? `Tool Service "${service}" is unavailable: its circuit is open after repeated failures; the tool was not called (retry in ${retry} s)`
        : `Tool Service "${service}" is at capacity (tools.bulkhead.maxConcurrentPerService calls running, tools.bulkhead.maxQueuedPerService waiting); the tool was not called (retry in ${retry} s)`;
    this.answer(call, ResultKind.Result, CallOutcome.ToolError, 200, gatewayResult(toolError(message), call.modern).payload);
  }

  /** Starts the calls a freed slot admits, refuses those a closed circuit turns away. */
  private handoff(handoff: Handoff<ShardCall>): void {
    // Runs after every call; nearly always nobody waits (no iterators for two empty lists).
    if (handoff.start.length === 0 && handoff.refuse.length === 0) return;
    for (const { waiter, permit } of handoff.start) {
      if (waiter.queueTimer !== null) clearTimeout(waiter.queueTimer);
      waiter.queueTimer = null;
      waiter.permit = permit;
      this.observer.upstreamStart(waiter, waiter.tool);
      this.client.call(waiter);
    }
    for (const { waiter, ...refusal } of handoff.refuse) {
      if (waiter.queueTimer !== null) clearTimeout(waiter.queueTimer);
      waiter.queueTimer = null;
      this.refuse(waiter, refusal);
    }
  }

  /** The upstream call ended. */
  finish(call: ShardCall, result: UpstreamResult): void {
    const service = call.tool.serviceId;
    const permit = call.permit;
    call.permit = null;
    this.observer.upstreamDone(call, result);
    if (result.cause !== 'ok' && result.cause !== 'tool_error' && result.cause !== 'cancelled') {
      this.log.warn({ requestId: call.requestId, route: call.routeKey, service, cause: result.cause }, 'tool call failed upstream');
    }
    let final: FinalAnswer;
    try {
      final = finalAnswer(result, call, call.resolved.outputValidator);
    } catch (err) {
      this.log.error({ requestId: call.requestId, route: call.routeKey, err }, 'tool call result could not be shaped');
      final = { kind: ResultKind.Error, outcome: CallOutcome.Internal, status: 200, payload: INTERNAL_ERROR };
    }
    this.answer(call, final.kind, final.outcome, final.status, final.payload);
    if (permit !== null) this.handoff(this.guards.release(service, permit, result));
  }

  /** Sends one streamed event of a live call. */
  event(call: ShardCall, kind: ResultKind, payload: string): void {
    if (call.cancelled || call.link === null) return;
    writeResult(call.link.sink, kind, call.callId, 0, 0, payload);
  }

  /**
   * Contract v0.3 forwarding: progress only with a progress token and only
   * strictly increasing; log frames at or above the request's level.
   */
  forward(call: ShardCall, frame: StreamFrame): void {
    if (frame.type === 'progress') {
      if (call.progressTokenJson === '' || !(frame.progress > call.lastProgress)) return;
      call.lastProgress = frame.progress;
      this.event(call, ResultKind.Event, progressNotification(call.progressTokenJson, frame));
      return;
    }
    if (call.minLevel === null) return;
    const json = logNotification(frame, call.minLevel);
    if (json !== null) this.event(call, ResultKind.Event, json);
  }

  /** Writes the final frame (unless cancelled) and returns the call to the pool. */
  private answer(call: ShardCall, kind: ResultKind, outcome: CallOutcome, status: number, payload: string): void {
    const link = call.link;
    if (link !== null) {
      if (!call.cancelled) writeResult(link.sink, kind, call.callId, outcome, status, payload);
      const slot = call.callId & CALL_SLOT_MASK;
      if (link.inflight[slot] === call) link.inflight[slot] = undefined;
    }
    this.observer.answered(call, outcome, call.cancelled);
    call.link = null;
    call.onFrame = null;
    call.onStreamStart = null;
    call.argumentsJson = '';
    call.clientCapabilitiesJson = '';
    call.inputResponsesJson = '';
    call.requestStateJson = '';
    this.pool.push(call);
  }
}

const INTERNAL_ERROR = JSON.stringify({ code: JsonRpcErrorCode.InternalError, message: 'Internal error: the call failed inside the gateway; the Tool Service was not called' });
