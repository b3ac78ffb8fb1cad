/**
 * Tracing as the rest of the code sees it: a {@link Tracer} that starts
 * spans from a W3C `traceparent` and hands back the `traceparent` of the new
 * span, so context crosses threads and hosts as the same 55 characters the
 * call frame and the Tool Service request already carry.
 *
 * `tracing.otlp.endpoint: null` (the default) means no tracer at all:
 * {@link loadTracer} resolves `null` without loading anything, and every
 * caller's hot path is one `tracer !== null` test — no OpenTelemetry module
 * is imported (this file has no static import of one; a test walks the
 * static import graph from every thread's entry point to keep it so), no
 * span object is made, no context is propagated. With an endpoint, each
 * thread loads the SDK once (`otel-tracer.ts`) and exports its own spans.
 */
import type { GatewayConfig } from '../config/schema.js';

/** Span kinds used here; the numbers are OpenTelemetry's `SpanKind` values. */
export const TraceSpanKind = { Internal: 0, Server: 1, Client: 2 } as const;
export type TraceSpanKind = (typeof TraceSpanKind)[keyof typeof TraceSpanKind];

/** Attribute values a span takes. */
export type TraceAttributes = Record<string, string | number | boolean>;

/** One started span. */
export interface TraceSpan {
  /** `00-<trace id>-<this span's id>-<flags>`: what children and the next hop continue. */
  readonly traceparent: string;
  /** False when the trace is not sampled: the span records nothing, so callers skip building attributes. */
  readonly recording: boolean;
  setAttribute(key: string, value: string | number | boolean): void;
  setAttributes(attributes: TraceAttributes): void;
  /** Ends the span; `error` marks it failed with that description. */
  end(error?: string): void;
}

/** Starts spans for one thread. */
export interface Tracer {
  /**
   * Starts a span whose parent is `parent` (a W3C traceparent; `''` starts
   * a new trace, sampled by `tracing.sampleRatio`; a parent's sampled flag
   * is followed). `startTime` is a `performance.now()` value of this thread
   * (default: now). Attributes go on afterwards, when `recording`.
   */
  start(name: string, kind: TraceSpanKind, parent: string, startTime?: number): TraceSpan;
  /** Exports the spans still buffered and stops (the thread is exiting). */
  shutdown(): Promise<void>;
}

/** The tracer of one thread (`thread` becomes the spans' `thread.name`), or null when tracing is off. */
export async function loadTracer(config: GatewayConfig['tracing'], thread: string): Promise<Tracer | null> {
  if (config.otlp.endpoint === null) return null;
  const { createOtelTracer } = await import('./otel-tracer.js');
  return createOtelTracer({ endpoint: config.otlp.endpoint, serviceName: config.serviceName, sampleRatio: config.sampleRatio }, thread);
}
