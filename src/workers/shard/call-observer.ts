/**
 * What a shard records about each `tools/call`, kept out of the executor's
 * control flow: the executor tells it four moments of a call — received,
 * handed to the Tool Service client, upstream outcome, answered — and it
 * keeps the in-flight count, the per-(route, Tool Service) latency histogram,
 * the sampled access log line and, with tracing on, two spans:
 *
 * ```
 *   acceptor span (SERVER, acceptor thread) ── traceparent in the call frame ──┐
 *     shard span "shard tools/call" (INTERNAL): received → answered  ◄────────┘
 *       upstream span "POST" (CLIENT): client.call → outcome; its traceparent goes to the Tool Service
 * ```
 *
 * Per call it allocates nothing unless a line is logged or tracing is on:
 * its state lives in the pooled call object ({@link Observation}).
 */
import { performance } from 'node:perf_hooks';
import { callOutcomeLabel } from '../../shared/calls.js';
import type { CatalogTool } from '../../shared/catalog/types.js';
import type { Logger } from '../../shared/log.js';
import type { ShardMetrics } from '../../shared/metrics.js';
import { TraceSpanKind, type Tracer, type TraceSpan } from '../../shared/tracing/tracer.js';
import type { UpstreamResult } from './upstream.js';

/** Per-call state, one per pooled call object (reset by {@link CallObserver.received}). */
export class Observation {
  receivedAt = 0;
  upstreamAt = 0;
  /** The upstream cause once the Tool Service call ended; '' when it was never called. */
  cause = '';
  service = '';
  shardSpan: TraceSpan | null = null;
  upstreamSpan: TraceSpan | null = null;
}

/** What the observer reads from a call (the executor's pooled call object). */
export interface ObservedCall {
  routeKey: string;
  toolName: string;
  requestId: string;
  /** The incoming traceparent; replaced by the upstream span's when tracing is on (what the Tool Service receives). */
  traceparent: string;
  readonly observation: Observation;
}

/** Causes that are the Tool Service's or the client's doing, not a failure of the call path. */
const NOT_FAILED = new Set(['ok', 'tool_error', 'cancelled']);

/** Records calls of one shard. */
export class CallObserver {
  private inFlightCalls = 0;
  private readonly accessOn: boolean;

  constructor(
    private readonly shard: number,
    private readonly metrics: ShardMetrics,
    private readonly log: Logger,
    private readonly tracer: Tracer | null,
    private readonly accessSampleRatio: number,
  ) {
    // Decided once: an access line is `info`, so a quieter log level turns the sampling off entirely.
    this.accessOn = accessSampleRatio > 0 && log.isLevelEnabled('info');
  }

  /** Calls received and not answered yet. */
  get inFlight(): number {
    return this.inFlightCalls;
  }

  /** A call frame arrived. */
  received(call: ObservedCall): void {
    this.inFlightCalls++;
    const o = call.observation;
    // Only the access line reads it.
    o.receivedAt = this.accessOn ? performance.now() : 0;
    o.cause = '';
    o.service = '';
    o.upstreamSpan = null;
    if (this.tracer === null) {
      o.shardSpan = null;
      return;
    }
    const span = this.tracer.start('shard tools/call', TraceSpanKind.Internal, call.traceparent);
    if (span.recording) {
      span.setAttributes({ 'mcp_gateway.route': call.routeKey, 'gen_ai.tool.name': call.toolName, 'mcp_gateway.shard': this.shard, 'mcp_gateway.request_id': call.requestId });
    }
    o.shardSpan = span;
  }

  /** The call goes to the Tool Service now (`call.traceparent` becomes the upstream span's when tracing). */
  upstreamStart(call: ObservedCall, tool: CatalogTool): void {
    const o = call.observation;
    o.upstreamAt = performance.now();
    o.service = tool.serviceId;
    if (this.tracer === null || o.shardSpan === null) return;
    const span = this.tracer.start('POST', TraceSpanKind.Client, o.shardSpan.traceparent);
    if (span.recording) {
      const url = new URL(tool.executionUrl);
      span.setAttributes({
        'http.request.method': 'POST',
        'url.full': tool.executionUrl,
        'server.address': url.hostname,
        'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
        'mcp_gateway.service': tool.serviceId,
      });
    }
    o.upstreamSpan = span;
    call.traceparent = span.traceparent;
  }

  /** The call's Tool Service guard turned it away (`circuit_open`, `bulkhead_full`, `busy`): it was never sent. */
  refused(call: ObservedCall, service: string, reason: string): void {
    const o = call.observation;
    o.service = service;
    o.cause = reason;
    this.metrics.recordCall(call.routeKey, service, reason);
  }

  /** The Tool Service call ended (answer, failure, timeout or cancel). */
  upstreamDone(call: ObservedCall, result: UpstreamResult): void {
    const o = call.observation;
    o.cause = result.cause;
    this.metrics.recordCall(call.routeKey, o.service, result.cause);
    this.metrics.observeCall(call.routeKey, o.service, (performance.now() - o.upstreamAt) / 1000);
    if (o.upstreamSpan !== null) {
      if (o.upstreamSpan.recording) o.upstreamSpan.setAttribute('mcp_gateway.cause', result.cause);
      o.upstreamSpan.end(NOT_FAILED.has(result.cause) ? undefined : result.cause);
      o.upstreamSpan = null;
    }
  }

  /**
   * The final frame was written (or suppressed: cancelled). `outcome` is the
   * frame's outcome number; the access line says the upstream cause when
   * there was an upstream call.
   */
  answered(call: ObservedCall, outcome: number, cancelled: boolean): void {
    this.inFlightCalls--;
    const o = call.observation;
    const label = cancelled ? 'cancelled' : o.cause !== '' ? o.cause : callOutcomeLabel(outcome);
    if (this.accessOn && (this.accessSampleRatio >= 1 || Math.random() < this.accessSampleRatio)) {
      this.log.info(
        {
          requestId: call.requestId,
          route: call.routeKey,
          tool: call.toolName,
          service: o.service === '' ? null : o.service,
          outcome: label,
          durationMs: Math.round((performance.now() - o.receivedAt) * 1000) / 1000,
          shard: this.shard,
        },
        'tool call',
      );
    }
    if (o.shardSpan !== null) {
      if (o.shardSpan.recording) o.shardSpan.setAttribute('mcp_gateway.outcome', label);
      o.shardSpan.end(label === 'internal' || label === 'rejected' ? label : undefined);
      o.shardSpan = null;
    }
  }
}
