/**
 * @deprecated — removed at integration. A Promise-returning adapter over the
 * callback-style {@link ToolServiceClient}, only so that today's shard
 * (`tool-call.ts`, `shard-worker.ts`) keeps compiling and running on the lean
 * client until the lead's rewritten shard calls `ToolServiceClient.call`
 * directly. It allocates a Promise, a closure and a call object per call:
 * exactly what the new API avoids.
 */
import type { CatalogTool } from '../../shared/catalog/types.js';
import type { CallContext } from '../../shared/threads/frames.js';
import type { CancelSignal } from './cancel.js';
import type { StreamFrame } from './notification-forwarder.js';
import type { ToolServiceClient, UpstreamCall, UpstreamResult } from './upstream.js';

/** @deprecated — removed at integration. The old call shape of `tool-call.ts`. */
export interface LegacyUpstreamCall {
  tool: CatalogTool;
  argumentsJson: string;
  routeKey: string;
  ctx: CallContext;
  onFrame?: (frame: StreamFrame) => void;
  onStreamStart?: () => void;
  cancel?: CancelSignal;
}

/** @deprecated — removed at integration. `call()` resolves with the result `onDone` receives. */
export class PromiseToolCaller {
  constructor(private readonly client: ToolServiceClient) {}

  /** Runs one call; resolves with its mapped result (never rejects). */
  call(legacy: LegacyUpstreamCall): Promise<UpstreamResult> {
    return new Promise((resolve) => {
      const call: UpstreamCall = {
        tool: legacy.tool,
        argumentsJson: legacy.argumentsJson,
        routeKey: legacy.routeKey,
        requestId: legacy.ctx.requestId,
        sessionId: legacy.ctx.sessionId,
        traceparent: legacy.ctx.traceparent,
        onFrame: legacy.onFrame ?? null,
        onStreamStart: legacy.onStreamStart ?? null,
        onDone: resolve,
      };
      this.client.call(call);
      legacy.cancel?.onCancel(() => this.client.cancel(call));
    });
  }
}
