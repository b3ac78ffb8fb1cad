/**
 * Frozen comparator for bench/upstream-client.ts: the undici `Pool.dispatch`
 * Tool Service client the shard used before the lean HTTP/1.1 client
 * (src/workers/shard/upstream.ts at commit 3f57885), unchanged but for import
 * paths. Not used by the gateway; kept so ADR-0005's comparison can be re-run.
 */
import { Pool, type Dispatcher } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { CatalogTool } from '../src/shared/catalog/types.js';

/** The request context the old client took (a frozen copy of its shape). */
interface CallContext {
  requestId: string;
  sessionId: string;
  traceparent: string;
}

/** The old one-shot cancellation flag (a frozen copy of its shape). */
interface CancelSignal {
  onCancel(fn: () => void): void;
}
import { NdjsonReader } from '../src/workers/shard/ndjson.js';
import type { StreamFrame } from '../src/workers/shard/notification-forwarder.js';
import { mapJsonAnswer, statusError, toolError } from '../src/workers/shard/tool-result.js';
import type { UpstreamResult } from '../src/workers/shard/upstream.js';

/** Settings the caller takes from `tools.*`. */
interface UpstreamOptions {
  connectionsPerService: number;
  maxResponseBytes: number;
}

/** One tool call to send. */
export interface UndiciUpstreamCall {
  tool: CatalogTool;
  /** Already validated against the tool's inputSchema. */
  argumentsJson: string;
  routeKey: string;
  ctx: CallContext;
  /** Receives NDJSON progress/log frames as they arrive (SSE answers only). */
  onFrame?: (frame: StreamFrame) => void;
  /** Called once when the Tool Service starts an NDJSON stream (the SSE answer starts then, not at the first forwarded frame). */
  onStreamStart?: () => void;
  /** Aborts the upstream request when the client disconnects or cancels. */
  cancel?: CancelSignal;
}

const NDJSON = 'application/x-ndjson';
const ERROR_SNIPPET_BYTES = 4096;

/** What a call needs of its tool, derived once per tool version (not per call). */
interface UpstreamTarget {
  origin: string;
  path: string;
  /** `{"name":…,"version":…,"arguments":` — the arguments and `}` complete the body. */
  bodyPrefix: string;
}

/** Owns the pools; `close()` is graceful and idempotent. */
export class UndiciToolServiceClient {
  private readonly pools = new Map<string, Pool>();
  /** Keyed by the runtime's tool objects, so a replaced snapshot's entries are collected with it. */
  private readonly targets = new WeakMap<CatalogTool, UpstreamTarget>();
  private closed = false;

  constructor(private readonly options: UpstreamOptions) {}

  /** Calls the tool; resolves with a mapped result whatever happens upstream. */
  call(call: UndiciUpstreamCall): Promise<UpstreamResult> {
    if (this.closed) return Promise.resolve({ ...toolError('gateway is shutting down; the tool was not called'), cause: 'unreachable' });
    const target = this.targetFor(call.tool);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: `application/json, ${NDJSON}`,
      'x-request-id': call.ctx.requestId,
      'x-mcp-route': call.routeKey,
    };
    if (call.ctx.sessionId !== '') headers['x-mcp-session-id'] = call.ctx.sessionId;
    if (call.ctx.traceparent !== '') headers['traceparent'] = call.ctx.traceparent;
    const body = target.bodyPrefix + call.argumentsJson + '}';
    return new Promise((resolve) => {
      const exchange = new Exchange(resolve, call.tool.timeoutMs, this.options.maxResponseBytes, call.onFrame ?? null, call.onStreamStart ?? null);
      call.cancel?.onCancel(() => exchange.cancel());
      this.poolFor(target.origin).dispatch({ path: target.path, method: 'POST', headers, body }, exchange);
    });
  }

  /** Closes every pool gracefully (in-flight calls finish). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }

  private targetFor(tool: CatalogTool): UpstreamTarget {
    let target = this.targets.get(tool);
    if (target === undefined) {
      const url = new URL(tool.executionUrl);
      target = {
        origin: url.origin,
        path: url.pathname + url.search,
        bodyPrefix: `{"name":${JSON.stringify(tool.name)},"version":${JSON.stringify(tool.version)},"arguments":`,
      };
      this.targets.set(tool, target);
    }
    return target;
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, { connections: this.options.connectionsPerService, keepAliveTimeout: 30_000, pipelining: 1 });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * One call's response handler. Settles exactly once: with the mapped answer,
 * a failure, or the deadline, whichever comes first (a late upstream event
 * after settling is ignored and the request aborted).
 */
class Exchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private readonly timer: NodeJS.Timeout;
  private settled = false;
  private status = 0;
  private mode: 'json' | 'ndjson' | 'error' = 'json';
  private chunks: Buffer[] = [];
  private size = 0;
  private ndjson: NdjsonReader | null = null;

  constructor(
    private readonly resolve: (r: UpstreamResult) => void,
    private readonly timeoutMs: number,
    private readonly maxBytes: number,
    private readonly onFrame: ((frame: StreamFrame) => void) | null,
    private readonly onStreamStart: (() => void) | null,
  ) {
    this.timer = setTimeout(() => this.fail(new TimeoutError()), timeoutMs);
  }

  /** The client went away or cancelled: abort upstream, free the timer and buffers. */
  cancel(): void {
    if (this.settled) return;
    this.settle({ ...toolError('the call was cancelled by the client'), cause: 'cancelled' });
    this.controller?.abort(new Error('cancelled by the client'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('call already settled (timeout or cancel)'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.status = statusCode;
    const contentType = String(headers['content-type'] ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase();
    // Contract v1: a result is `200`; any other status (201 and 204 included) is a failure.
    if (statusCode !== 200) this.mode = 'error';
    else if (contentType === NDJSON) {
      this.mode = 'ndjson';
      this.ndjson = new NdjsonReader(this.onFrame);
      this.onStreamStart?.();
    }
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    const before = this.size;
    this.size += chunk.length;
    if (this.mode === 'error') {
      // Only a snippet of an error body is kept, for the message.
      if (before < ERROR_SNIPPET_BYTES) this.chunks.push(chunk.subarray(0, ERROR_SNIPPET_BYTES - before));
      return;
    }
    if (this.size > this.maxBytes) {
      this.settle({ ...toolError(`Tool Service answer is larger than tools.maxResponseBytes (${this.maxBytes})`), cause: 'too_large' });
      this.controller?.abort(new Error('answer too large'));
      return;
    }
    if (this.ndjson !== null) {
      const done = this.ndjson.push(chunk);
      if (done !== null) {
        this.settle(done);
        this.controller?.abort(new Error('result frame received'));
      }
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    if (this.mode === 'error') {
      this.settle({ ...statusError(this.status, Buffer.concat(this.chunks).toString('utf8')), cause: 'status' });
      return;
    }
    if (this.ndjson !== null) {
      this.settle(this.ndjson.end());
      return;
    }
    const text = this.chunks.length === 1 ? (this.chunks[0] as Buffer).toString('utf8') : Buffer.concat(this.chunks, this.size).toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.settle({ ...toolError('Tool Service answer is malformed: the body is not valid JSON'), cause: 'malformed' });
      return;
    }
    const mapped = mapJsonAnswer(value, text);
    this.settle({ ...mapped, cause: mapped.isError ? 'tool_error' : 'ok' });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  private fail(err: Error): void {
    if (this.settled) return;
    if (err instanceof TimeoutError) {
      this.settle({ ...toolError(`Tool Service did not answer within ${this.timeoutMs} ms (timeout)`), cause: 'timeout' });
      this.controller?.abort(err);
      return;
    }
    const e = err as Error & { code?: string; cause?: { code?: string } };
    const code = e.code ?? e.cause?.code ?? e.name;
    const what = code === 'ECONNREFUSED' ? 'connection refused' : code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' ? 'connection closed before the answer was complete' : e.message;
    this.settle({ ...toolError(`Tool Service unreachable: ${what} (${code})`), cause: 'unreachable' });
  }

  private settle(result: UpstreamResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.chunks = [];
    this.resolve(result);
  }
}
