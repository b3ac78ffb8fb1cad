/**
 * One Tool Service call in flight on the lean HTTP/1.1 client: the response
 * handler, the request slot and buffer, and the mapping of whatever happens
 * into the call's one `UpstreamResult`. Instances are reused through the
 * `ToolServiceClient`'s free list, so a call allocates no handler, closure or
 * timer.
 *
 * ~300 lines: every way a call can end is mapped here, next to the others,
 * so that each ends in exactly one result.
 */
import { Buffer } from 'node:buffer';
import type { OriginCredential } from '../../shared/auth/upstream-credentials.js';
import { copyBytes, writeLatin1, writeUtf8 } from '../../shared/threads/buffer-text.js';
import { HTTP1_DEFAULTS } from './http1/agent.js';
import { Http1FailureCode, type Http1Failure } from './http1/errors.js';
import type { Http1Pool } from './http1/pool.js';
import { Http1Request, type ResponseHandler } from './http1/request.js';
import type { ResponseHead } from './http1/response-head.js';
import { NdjsonReader } from './ndjson.js';
import { scanTextResult, TextResultScan } from './text-result-scan.js';
import { mapJsonAnswer, statusError, toolError } from './tool-result.js';
import type { UpstreamCall, UpstreamOptions, UpstreamResult } from './upstream.js';

/** What owns the exchanges (the ToolServiceClient). */
export interface ExchangeOwner {
  readonly options: UpstreamOptions;
  release(ex: Exchange): void;
}

/** The media type of a streamed answer. */
export const NDJSON = 'application/x-ndjson';
/** How much of an error body is read (for the message); then the socket is closed (issue 11 #7). */
const ERROR_SNIPPET_BYTES = 4096;
/** Buffers an exchange grew past this are dropped when it goes back to the free list. */
const KEEP_BUFFER_BYTES = 64 * 1024;
const CRLF = '\r\n';

/** What a call needs of its tool, built once per tool object (not per call). */
export interface Target {
  pool: Http1Pool;
  /** Request line and static headers. */
  head: Buffer;
  /** `{"name":…,"version":…,"arguments":` — the arguments and `}` complete the body. */
  bodyPrefix: Buffer;
  /** The origin's credential profile (auth.upstream.profiles): its headers go into every request. */
  credential: OriginCredential | null;
}

/** The exchange a call is running on, kept on the call object (no Map per call). */
export const EXCHANGE = Symbol('upstream.exchange');
/** A call object with its exchange slot. */
export type Tracked = UpstreamCall & { [EXCHANGE]?: Exchange | null };

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
export class Exchange implements ResponseHandler {
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

  constructor(private readonly client: ExchangeOwner) {}

  /** Starts `call` (the caller already set `call[EXCHANGE]` to this exchange). */
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

  /** Aborts the exchange and settles the call as cancelled. */
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
    // The common text-block result is checked without building it (text-result-scan.ts); anything else is parsed.
    const scan = scanTextResult(text);
    if (scan !== TextResultScan.NotText) {
      const isError = scan === TextResultScan.IsError;
      this.settle({ json: text, isError, unparsed: true, cause: isError ? 'tool_error' : 'ok' });
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.settle({ ...toolError('Tool Service answer is malformed: the body is not valid JSON'), cause: 'malformed' });
      return;
    }
    const mapped = mapJsonAnswer(value, text);
    // `value` / `wrapped` let call-result.ts shape the answer per protocol era without parsing it again.
    this.settle({ json: mapped.json, isError: mapped.isError, value: mapped.value, wrapped: mapped.wrapped, cause: mapped.isError ? 'tool_error' : 'ok' });
  }

  onError(failure: Http1Failure): void {
    this.settle(failureResult(failure, this.call as Tracked, this.client.options));
  }

  // ── internals ─────────────────────────────────────────────────────────────

  private statusResult(): UpstreamResult {
    return { ...statusError(this.status, this.body.toString('utf8', 0, this.bodyLength)), cause: 'status', status: this.status };
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
    copyBytes(src, from, to, this.body, this.bodyLength);
    this.bodyLength = needed;
  }

  /** The whole request in one buffer; null when a context value could split the header block. */
  private buildRequest(call: Tracked, target: Target): Buffer | null {
    if (!headerSafe(call.requestId) || !headerSafe(call.routeKey) || !headerSafe(call.sessionId) || !headerSafe(call.traceparent)) return null;
    if (!headerSafe(call.tracestate) || !headerSafe(call.baggage)) return null;
    let dynamic = `x-request-id: ${call.requestId}${CRLF}x-mcp-route: ${call.routeKey}${CRLF}`;
    // Static credential headers of the origin's profile (re-read from their files when they change; never the client's token).
    if (target.credential !== null) {
      dynamic += target.credential.headerText();
      // Who called (x-mcp-subject, selected claims), only when this origin's profile opts in (forwardIdentity).
      if (call.identity !== undefined && call.identity !== '') dynamic += target.credential.identityText(call.identity);
    }
    if (call.sessionId !== '') dynamic += `x-mcp-session-id: ${call.sessionId}${CRLF}`;
    if (call.traceparent !== '') dynamic += `traceparent: ${call.traceparent}${CRLF}`;
    if (call.tracestate !== '') dynamic += `tracestate: ${call.tracestate}${CRLF}`;
    if (call.baggage !== '') dynamic += `baggage: ${call.baggage}${CRLF}`;
    // Contract v1.1 members of a 2026-07-28 call; a legacy call has none (three empty-string checks).
    let extra = '';
    if (call.clientCapabilitiesJson !== '') extra += `,"clientCapabilities":${call.clientCapabilitiesJson}`;
    if (call.inputResponsesJson !== '') extra += `,"inputResponses":${call.inputResponsesJson}`;
    if (call.requestStateJson !== '') extra += `,"requestState":${call.requestStateJson}`;
    const argBytes = Buffer.byteLength(call.argumentsJson, 'utf8') + (extra === '' ? 0 : Buffer.byteLength(extra, 'utf8'));
    const bodyLength = target.bodyPrefix.length + argBytes + 1;
    dynamic += `content-length: ${bodyLength}${CRLF}${CRLF}`;
    const total = target.head.length + dynamic.length + bodyLength;
    if (total > this.request.length) this.request = Buffer.allocUnsafeSlow(Math.max(total, 2 * this.request.length, 1024));
    const buf = this.request;
    // `set` and the per-encoding writers: `Buffer#copy` / `Buffer#write` check their arguments and make a view per call.
    buf.set(target.head, 0);
    let at = target.head.length;
    at += writeLatin1(buf, dynamic, at);
    buf.set(target.bodyPrefix, at);
    at += target.bodyPrefix.length;
    at += writeUtf8(buf, call.argumentsJson, at, argBytes);
    if (extra !== '') at += writeUtf8(buf, extra, at, total - at);
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
    // Drops the call's frame callback and a large partial-line buffer while the exchange waits in the free list.
    if (this.mode === Mode.Ndjson) this.ndjson.reset(null, 0);
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
