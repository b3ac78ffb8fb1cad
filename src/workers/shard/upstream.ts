/**
 * Calls Tool Services over the lean keep-alive HTTP/1.1 client
 * (`./http1/`): one pool per Tool Service origin, a deadline per call
 * (`tool.timeoutMs`), a bounded answer size, and every failure turned into an
 * `isError` result delivered to `onDone` (never an exception).
 *
 * Per call nothing is allocated but the per-call header text, the request
 * bytes' view, the answer and the result: the request line, static headers
 * and the body prefix are built once per tool; the exchange state (handler,
 * request slot, request buffer, NDJSON reader) comes from a free list
 * (upstream-exchange.ts). ADR-0005 has the measurements.
 *
 *   request bytes   POST /tools/x HTTP/1.1␍␊host: …␍␊content-type: …␍␊accept: …␍␊   ← per tool (Target.head)
 *                   x-request-id: …␍␊x-mcp-route: …␍␊[x-mcp-session-id][traceparent]  ← per call
 *                   content-length: N␍␊␍␊
 *                   {"name":"x","version":"1.0.0","arguments":                         ← per tool (Target.bodyPrefix)
 *                   <argumentsJson>}                                                  ← per call
 */
import { Buffer } from 'node:buffer';
import type { UpstreamCredentials } from '../../shared/auth/upstream-credentials.js';
import type { CatalogTool } from '../../shared/catalog/types.js';
import type { CallRequest } from '../../shared/calls.js';
import { Http1Agent, HTTP1_DEFAULTS, type OriginOptions } from './http1/agent.js';
import type { StreamFrame } from './notification-forwarder.js';
import type { MappedResult } from './tool-result.js';
import { EXCHANGE, Exchange, NDJSON, type Target, type Tracked } from './upstream-exchange.js';

/** Settings the caller takes from `tools.*`. */
export interface UpstreamOptions {
  /** `tools.connectionsPerService`: sockets per Tool Service origin. */
  connectionsPerService: number;
  /** `tools.maxResponseBytes`: largest answer body (and NDJSON line). */
  maxResponseBytes: number;
  /** `tools.maxQueuedCallsPerService`: calls waiting for a socket before `busy`. */
  maxQueuedCallsPerService?: number;
  /** `tools.connectTimeoutMs`: TCP (+ TLS) connect. */
  connectTimeoutMs?: number;
  /** `tools.keepAliveTimeoutMs`: an idle socket is closed after this long. */
  keepAliveTimeoutMs?: number;
  /** `tools.maxResponseHeaderBytes`: largest response head. */
  maxResponseHeaderBytes?: number;
  /** Per-origin TLS settings (private CA, client certificate, SNI), asked once per origin. */
  originOptions?: (origin: string) => OriginOptions | undefined;
  /** Credential profiles by origin (auth.upstream.profiles): headers per request, TLS via `originOptions`. */
  credentials?: UpstreamCredentials;
}

/**
 * One tool call. Pooled and reused by the shard: one call at a time per
 * object. What it sends comes from the {@link CallRequest} fields (see there):
 * `argumentsJson` already validated; the context headers and the v1.1 body
 * members `''` when absent. A context value with a byte outside 0x20–0x7E (it
 * could split the header block) fails the call unsent (`unreachable`);
 * `identity` is sent only to origins whose profile has `forwardIdentity`.
 */
export interface UpstreamCall
  extends Pick<
    CallRequest,
    'argumentsJson' | 'routeKey' | 'requestId' | 'sessionId' | 'traceparent' | 'tracestate' | 'baggage' | 'clientCapabilitiesJson' | 'inputResponsesJson' | 'requestStateJson' | 'identity'
  > {
  tool: CatalogTool;
  /** Receives NDJSON progress/log frames as they arrive (SSE answers only). */
  onFrame: ((frame: StreamFrame) => void) | null;
  /** Called once when the Tool Service starts an NDJSON stream. */
  onStreamStart: (() => void) | null;
  /**
   * Called exactly once per call: never synchronously inside `call()`, but
   * synchronously inside `cancel()` and `destroy()`. After it the object may
   * be reused (even from inside it). It and the two hooks above run inside a
   * socket's read callback, so they must not throw.
   */
  onDone(result: UpstreamResult): void;
}

/** Outcome of one upstream call, with what metrics need. */
export interface UpstreamResult extends MappedResult {
  /** Short machine label of the failure cause, `ok` when the Tool Service answered a result. */
  cause: 'ok' | 'status' | 'timeout' | 'unreachable' | 'busy' | 'malformed' | 'too_large' | 'tool_error' | 'cancelled';
  /** The Tool Service's HTTP status when `cause` is `status`. */
  status?: number;
}

/** Owns the HTTP/1.1 agent; `close()` is graceful and idempotent, `destroy()` forced. */
export class ToolServiceClient {
  private readonly agent: Http1Agent;
  /** Keyed by the runtime's tool objects, so a replaced snapshot's entries are collected with it. */
  private readonly targets = new WeakMap<CatalogTool, Target>();
  private readonly free: Exchange[] = [];

  constructor(readonly options: UpstreamOptions) {
    this.agent = new Http1Agent({
      connections: options.connectionsPerService,
      maxQueued: options.maxQueuedCallsPerService ?? HTTP1_DEFAULTS.maxQueued,
      connectTimeoutMs: options.connectTimeoutMs ?? HTTP1_DEFAULTS.connectTimeoutMs,
      idleTimeoutMs: options.keepAliveTimeoutMs ?? HTTP1_DEFAULTS.idleTimeoutMs,
      maxHeaderBytes: options.maxResponseHeaderBytes ?? HTTP1_DEFAULTS.maxHeaderBytes,
      // The per-tool deadline bounds every call: a slow tool legitimately sends its head late, and an
      // NDJSON stream may pause between progress frames, so no separate headers/body timeouts here.
      headersTimeoutMs: 0,
      bodyTimeoutMs: 0,
      ...(options.originOptions ? { originOptions: options.originOptions } : {}),
    });
  }

  /** Starts the call; `call.onDone` receives the mapped result whatever happens upstream. */
  call(call: UpstreamCall): void {
    const target = this.targetFor(call.tool);
    const ex = this.free.pop() ?? new Exchange(this);
    (call as Tracked)[EXCHANGE] = ex;
    ex.start(call as Tracked, target);
  }

  /** The client went away or cancelled: abort upstream; `onDone` gets cause `cancelled` now. */
  cancel(call: UpstreamCall): void {
    const ex = (call as Tracked)[EXCHANGE];
    if (ex !== undefined && ex !== null && ex.call === call) ex.cancel();
  }

  /** Graceful: calls already accepted finish; new calls get "gateway is shutting down". Idempotent. */
  close(): Promise<void> {
    return this.agent.close();
  }

  /** Forced: every pending call ends now (onDone with `unreachable`) and every socket is destroyed. */
  destroy(): void {
    this.agent.destroy();
  }

  /** An exchange is done (its call settled): back to the free list. */
  release(ex: Exchange): void {
    this.free.push(ex);
  }

  private targetFor(tool: CatalogTool): Target {
    let target = this.targets.get(tool);
    if (target === undefined) {
      const url = new URL(tool.executionUrl);
      const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n` + `content-type: application/json\r\naccept: application/json, ${NDJSON}\r\n`;
      target = {
        pool: this.agent.pool(url.origin),
        head: Buffer.from(head, 'latin1'),
        // The name the Tool Service knows: a name prefixed for a route (catalog.conflictPolicy: prefix) is the gateway's, not its.
        bodyPrefix: Buffer.from(`{"name":${JSON.stringify(tool.upstreamName ?? tool.name)},"version":${JSON.stringify(tool.version)},"arguments":`, 'utf8'),
        credential: this.options.credentials?.forOrigin(url.origin) ?? null,
      };
      this.targets.set(tool, target);
    }
    return target;
  }
}
