/**
 * The OpenTelemetry SDK behind {@link Tracer}, loaded only when
 * `tracing.otlp.endpoint` is set (tracer.ts). One provider per thread:
 * parent-based sampling with a trace-id ratio for new traces, a batch span
 * processor, and the OTLP/HTTP exporter with the JSON encoding (no protobuf
 * code at run time; collectors accept both on `/v1/traces`).
 *
 * Nothing global is registered — no global tracer provider, no context
 * manager, no async hooks: context travels explicitly as the `traceparent`
 * string (in the call frame between threads, as the header to Tool
 * Services), so enabling tracing changes no other code's behaviour.
 */
import { performance } from 'node:perf_hooks';
import { ROOT_CONTEXT, SpanStatusCode, trace, type Span, type SpanKind } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { SERVER_INFO } from '../protocol/mcp.js';
import type { TraceAttributes, Tracer, TraceSpan, TraceSpanKind } from './tracer.js';

/** What the SDK needs from `tracing.*`. */
export interface OtelSettings {
  endpoint: string;
  serviceName: string;
  sampleRatio: number;
}

/** `00-<32 hex>-<16 hex>-<2 hex>`, already validated where it entered (context-headers.ts) or made here. */
function parentContext(traceparent: string): typeof ROOT_CONTEXT {
  if (traceparent === '') return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: traceparent.slice(3, 35),
    spanId: traceparent.slice(36, 52),
    traceFlags: Number.parseInt(traceparent.slice(53, 55), 16),
    isRemote: true,
  });
}

class OtelSpan implements TraceSpan {
  readonly traceparent: string;
  readonly recording: boolean;

  constructor(private readonly span: Span) {
    const c = span.spanContext();
    this.traceparent = `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 1) === 1 ? '01' : '00'}`;
    this.recording = span.isRecording();
  }

  setAttribute(key: string, value: string | number | boolean): void {
    this.span.setAttribute(key, value);
  }

  setAttributes(attributes: TraceAttributes): void {
    this.span.setAttributes(attributes);
  }

  end(error?: string): void {
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

/** A tracer exporting to `settings.endpoint`; `thread` names the thread on every span. */
export function createOtelTracer(settings: OtelSettings, thread: string): Tracer {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': SERVER_INFO.version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.endpoint }))],
  });
  const tracer = provider.getTracer('mcp-route-gateway', SERVER_INFO.version);
  return {
    start(name: string, kind: TraceSpanKind, parent: string, startTime?: number): TraceSpan {
      const span = new OtelSpan(
        tracer.startSpan(name, startTime === undefined ? { kind: kind as SpanKind } : { kind: kind as SpanKind, startTime: performance.timeOrigin + startTime }, parentContext(parent)),
      );
      if (span.recording) span.setAttribute('thread.name', thread);
      return span;
    },
    shutdown: () => provider.shutdown(),
  };
}
