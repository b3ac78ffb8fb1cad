/**
 * Calls Tool Services over the lean keep-alive HTTP/1.1 client
 * (`./http1/`): one pool per Tool Service origin, a deadline per call
 * (`tool.timeoutMs`), a bounded answer size, and every failure turned into an
 * `isError` result delivered to `onDone` (never an exception).
 *
 * Per call nothing is allocated but the request bytes' view, the answer and
 * the result: the request line, static headers and the body prefix are built
 * once per tool; the exchange state (handler, request slot, request buffer,
 * NDJSON reader) comes from a free list. ADR-0005 has the measurements.
 *
 *   request bytes   POST /tools/x HTTP/1.1␍␊host: …␍␊content-type: …␍␊accept: …␍␊   ← per tool (Target.head)
 *                   x-request-id: …␍␊x-mcp-route: …␍␊[x-mcp-session-id][traceparent]  ← per call
 *                   content-length: N␍␊␍␊
 *                   {"name":"x","version":"1.0.0","arguments":                         ← per tool (Target.bodyPrefix)
 *                   <argumentsJson>}                                                  ← per call
 */
import type { CatalogTool } from '../../shared/catalog/types.js';
import { Http1Agent, HTTP1_DEFAULTS, type OriginOptions } from './http1/agent.js';
import { Http1FailureCode, type Http1Failure } from './http1/errors.js';
import type { Http1Pool } from './http1/pool.js';
import { Http1Request, type ResponseHandler } from './http1/request.js';
import type { ResponseHead } from './http1/response-head.js';
import { NdjsonReader } from './ndjson.js';
import type { StreamFrame } from './notification-forwarder.js';
import { mapJsonAnswer, statusError, toolError, type MappedResult } from './tool-result.js';

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
}

/** One tool call. Pooled and reused by the shard: one call at a time per object. */
export interface UpstreamCall {
  tool: CatalogTool;
  /** Already validated JSON text of `params.arguments`. */
  argumentsJson: string;
  routeKey: string;
  /** Context headers; '' = absent. Values with bytes outside 0x20–0x7E are not sent. */
  requestId: string;
  sessionId: string;
  traceparent: string;
  /** Receives NDJSON progress/log frames as they arrive (SSE answers only). */
  onFrame: ((frame: StreamFrame) => void) | null;
  /** Called once when the Tool Service starts an NDJSON stream. */
  onStreamStart: (() => void) | null;
  /** Called exactly once per call, never synchronously inside `call()`; after it the object may be reused. */
  onDone(result: UpstreamResult): void;
}

/** Outcome of one upstream call, with what metrics need. */
export interface UpstreamResult extends MappedResult {
  /** Short machine label of the failure cause, `ok` when the Tool Service answered a result. */
  cause: 'ok' | 'status' | 'timeout' | 'unreachable' | 'busy' | 'malformed' | 'too_large' | 'tool_error' | 'cancelled';
}

const NDJSON = 'application/x-ndjson';
/** How much of an error body is read (for the message); then the socket is closed (issue 11 #7). */
const ERROR_SNIPPET_BYTES = 4096;
/** Buffers an exchange grew past this are dropped when it goes back to the free list. */
const KEEP_BUFFER_BYTES = 64 * 1024;
const CRLF = '\r\n';

/** What a call needs of its tool, built once per tool object (not per call). */
interface Target {
  pool: Http1Pool;
  /** Request line and static headers. */
  head: Buffer;
  /** `{"name":…,"version":…,"arguments":` — the arguments and `}` complete the body. */
  bodyPrefix: Buffer;
}

/** The exchange a call is running on, kept on the call object (no Map per call). */
const EXCHANGE = Symbol('upstream.exchange');
type Tracked = UpstreamCall & { [EXCHANGE]?: Exchange | null };

/** Owns the HTTP/1.1 agent; `close()` is graceful and idempotent, `destroy()` forced. */
export class ToolServiceClient {
  readonly agent: Http1Agent;
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

  /** @internal An exchange is done and its buffers trimmed. */
  release(ex: Exchange): void {
    this.free.push(ex);
  }

  private targetFor(tool: CatalogTool): Target {
    let target = this.targets.get(tool);
    if (target === undefined) {
      const url = new URL(tool.executionUrl);
      const head =
        `POST ${url.pathname}${url.search} HTTP/1.1${CRLF}host: ${url.host}${CRLF}` +
        `content-type: application/json${CRLF}accept: application/json, ${NDJSON}${CRLF}`;
      target = {
        pool: this.agent.pool(url.origin),
        head: Buffer.from(head, 'latin1'),
        bodyPrefix: Buffer.from(`{"name":${JSON.stringify(tool.name)},"version":${JSON.stringify(tool.version)},"arguments":`, 'utf8'),
      };
      this.targets.set(tool, target);
    }
    return target;
  }
}

const enum Mode {
  Json,
  Ndjson,
  Error,
}

/**
 * One call's response handler and state, reused through the client's free
 * list. Settles exactly once: with the mapped answer, a failure, the deadline
 * or a cancel, whichever comes first; once settled, the HTTP exchange is
 * already ended (aborted, finished or complete), so nothing arrives late.
 */
class Exchange implements ResponseHandler {
  readonly slot = new Http1Request(this);
  call: Tracked | null = null;
  private target: Target | null = null;
  private mode = Mode.Json;
  private status = 0;
  private expectedLength = -1;
  /** Body bytes received (all modes). */
  private size = 0;
  /** Collected body (JSON) or snippet (error status). */
  private body: Buffer = Buffer.alloc(0);
  private bodyLength = 0;
  /** The whole JSON body when it came in one piece (decoded straight from the read, no copy). */
  private text: string | null = null;
  private request: Buffer = Buffer.alloc(0);
  private readonly ndjson = new NdjsonReader();

  constructor(private readonly client: ToolServiceClient) {}

  start(call: Tracked, target: Target): void {
    this.call = call;
    this.target = target;
    this.mode = Mode.Json;
    this.status = 0;
    this.size = 0;
    this.bodyLength = 0;
    this.text = null;
    const bytes = this.buildRequest(call, target);
    if (bytes === null) {
      this.settleLater({ ...toolError('Tool Service not called: a context header value is not printable ASCII'), cause: 'unreachable' });
      return;
    }
    target.pool.request(this.slot, bytes, call.tool.timeoutMs);
  }

  cancel(): void {
    (this.target as Target).pool.abort(this.slot);
    this.settle({ ...toolError('the call was cancelled by the client'), cause: 'cancelled' });
  }

  // ── ResponseHandler ───────────────────────────────────────────────────────

  onHead(status: number, head: ResponseHead): void {
    const call = this.call as Tracked;
    this.status = status;
    this.expectedLength = head.contentLength;
    // Contract v1: a result is `200`; any other status (201 and 204 included) is a failure.
    if (status !== 200) this.mode = Mode.Error;
    else if (head.mediaTypeIs(NDJSON)) {
      this.mode = Mode.Ndjson;
      this.ndjson.reset(call.onFrame, this.client.options.maxResponseBytes);
      call.onStreamStart?.();
    } else if (head.contentLength > this.client.options.maxResponseBytes) {
      // Announced too large: refuse without reading a byte of it.
      this.abortWith(this.tooLarge());
    }
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    const n = end - start;
    this.size += n;
    if (this.mode === Mode.Error) {
      // Only a snippet of an error body is read, for the message; then the socket is closed.
      const take = Math.min(n, ERROR_SNIPPET_BYTES - this.bodyLength);
      this.append(chunk, start, start + take);
      if (this.bodyLength >= ERROR_SNIPPET_BYTES) this.abortWith(this.statusResult());
      return;
    }
    if (this.size > this.client.options.maxResponseBytes) {
      this.abortWith(this.tooLarge());
      return;
    }
    if (this.mode === Mode.Ndjson) {
      const done = this.ndjson.push(chunk, start, end);
      if (done !== null) {
        // The terminal frame ends the call; the socket is kept if the stream's end is already here.
        (this.target as Target).pool.finish(this.slot);
        this.settle(done);
      }
      return;
    }
    // The whole Content-Length body in one read (the usual case): decode it from the read, no copy.
    if (this.bodyLength === 0 && n === this.expectedLength) this.text = chunk.toString('utf8', start, end);
    else this.append(chunk, start, end);
  }

  onEnd(): void {
    if (this.mode === Mode.Error) {
      this.settle(this.statusResult());
      return;
    }
    if (this.mode === Mode.Ndjson) {
      this.settle(this.ndjson.end());
      return;
    }
    const text = this.text ?? this.body.toString('utf8', 0, this.bodyLength);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.settle({ ...toolError('Tool Service answer is malformed: the body is not valid JSON'), cause: 'malformed' });
      return;
    }
    const mapped = mapJsonAnswer(value, text);
    this.settle({ json: mapped.json, isError: mapped.isError, cause: mapped.isError ? 'tool_error' : 'ok' });
  }

  onError(failure: Http1Failure): void {
    this.settle(failureResult(failure, this.call as Tracked, this.client.options));
  }

  // ── internals ─────────────────────────────────────────────────────────────

  private statusResult(): UpstreamResult {
    return { ...statusError(this.status, this.body.toString('utf8', 0, this.bodyLength)), cause: 'status' };
  }

  private tooLarge(): UpstreamResult {
    return { ...toolError(`Tool Service answer is larger than tools.maxResponseBytes (${this.client.options.maxResponseBytes})`), cause: 'too_large' };
  }

  private abortWith(result: UpstreamResult): void {
    (this.target as Target).pool.abort(this.slot);
    this.settle(result);
  }

  private append(src: Buffer, from: number, to: number): void {
    const needed = this.bodyLength + (to - from);
    if (needed > this.body.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(needed, 2 * this.body.length, 16 * 1024));
      this.body.copy(grown, 0, 0, this.bodyLength);
      this.body = grown;
    }
    src.copy(this.body, this.bodyLength, from, to);
    this.bodyLength = needed;
  }

  /** The whole request in one buffer; null when a context value could split the header block. */
  private buildRequest(call: Tracked, target: Target): Buffer | null {
    if (!headerSafe(call.requestId) || !headerSafe(call.routeKey) || !headerSafe(call.sessionId) || !headerSafe(call.traceparent)) return null;
    let dynamic = `x-request-id: ${call.requestId}${CRLF}x-mcp-route: ${call.routeKey}${CRLF}`;
    if (call.sessionId !== '') dynamic += `x-mcp-session-id: ${call.sessionId}${CRLF}`;
    if (call.traceparent !== '') dynamic += `traceparent: ${call.traceparent}${CRLF}`;
    const argBytes = Buffer.byteLength(call.argumentsJson, 'utf8');
    const bodyLength = target.bodyPrefix.length + argBytes + 1;
    dynamic += `content-length: ${bodyLength}${CRLF}${CRLF}`;
    const total = target.head.length + dynamic.length + bodyLength;
    if (total > this.request.length) this.request = Buffer.allocUnsafeSlow(Math.max(total, 2 * this.request.length, 1024));
    const buf = this.request;
    let at = target.head.copy(buf, 0);
    at += buf.write(dynamic, at, 'latin1');
    at += target.bodyPrefix.copy(buf, at);
    at += buf.write(call.argumentsJson, at, 'utf8');
    buf[at++] = 0x7d; // }
    return buf.subarray(0, at);
  }

  /** A refusal before any I/O still reaches onDone asynchronously, like every other outcome. */
  private settleLater(result: UpstreamResult): void {
    const call = this.call;
    queueMicrotask(() => {
      // Unless a cancel settled it first (and the exchange moved on to another call).
      if (this.call === call) this.settle(result);
    });
  }

  private settle(result: UpstreamResult): void {
    const call = this.call;
    if (call === null) return;
    this.call = null;
    this.target = null;
    call[EXCHANGE] = null;
    this.text = null;
    if (this.body.length > KEEP_BUFFER_BYTES) this.body = Buffer.alloc(0);
    if (this.request.length > KEEP_BUFFER_BYTES) this.request = Buffer.alloc(0);
    call.onDone(result);
    // Back to the free list only after onDone: a call started from inside it gets another exchange.
    this.client.release(this);
  }
}

/** True when `value` can go in a header line as is (visible ASCII and space; '' is fine). */
function headerSafe(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

/** The `isError` result for a failure of the HTTP exchange (texts: docs/contracts/tool-execution-v1.md §5). */
function failureResult(f: Http1Failure, call: UpstreamCall, options: UpstreamOptions): UpstreamResult {
  const unreachable = (what: string): UpstreamResult => ({ ...toolError(`Tool Service unreachable: ${what}`), cause: 'unreachable' });
  switch (f.code) {
    case Http1FailureCode.Deadline:
      return { ...toolError(`Tool Service did not answer within ${call.tool.timeoutMs} ms (timeout)`), cause: 'timeout' };
    case Http1FailureCode.HeadersTimeout:
    case Http1FailureCode.BodyTimeout:
      return { ...toolError(`Tool Service stalled: ${f.message} (${f.code})`), cause: 'timeout' };
    case Http1FailureCode.ConnectRefused:
      return unreachable(`connection refused (${f.errno || f.code})`);
    case Http1FailureCode.ConnectTimeout:
      return unreachable(`${f.message} (${f.code})`);
    case Http1FailureCode.ConnectFailed:
      return unreachable(`connection failed (${f.errno || f.code})`);
    case Http1FailureCode.Reset:
      return unreachable(`connection closed before the answer was complete (${f.errno || f.code})`);
    case Http1FailureCode.BadResponse:
      return { ...toolError(`Tool Service answer is malformed: not valid HTTP/1.1: ${f.message} (${f.code})`), cause: 'malformed' };
    case Http1FailureCode.HeadersTooLarge:
      return { ...toolError(`Tool Service answer is malformed: ${f.message} (tools.maxResponseHeaderBytes)`), cause: 'too_large' };
    case Http1FailureCode.QueueFull:
      return {
        ...toolError(
          `Tool Service busy: all ${options.connectionsPerService} connections are in use and ${options.maxQueuedCallsPerService ?? HTTP1_DEFAULTS.maxQueued} calls wait (tools.maxQueuedCallsPerService); the tool was not called`,
        ),
        cause: 'busy',
      };
    case Http1FailureCode.Closed:
      return { ...toolError(f.mayHaveReachedServer ? 'gateway is shutting down; the call was abandoned' : 'gateway is shutting down; the tool was not called'), cause: 'unreachable' };
  }
}
