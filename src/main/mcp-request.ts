/**
 * One MCP request on an acceptor thread, from its headers to its answer.
 * Pooled ({@link RequestPool}): the object, its body buffer and its uWS
 * handlers (bound once per object) are reused, so a request costs no
 * closures, no per-request Maps and no body buffer allocation below
 * {@link POOLED_BODY_BYTES}. For a `tools/call` it is also the call's entry
 * in the dispatcher's slot table (`call-dispatcher.ts`).
 *
 * States: `free` (in the pool) → `reading` (body arriving) → `queued` (a
 * checked call waiting for the end of its read, read-end.ts) → `calling`
 * (waiting for its shard) → `answered` → `free`. An answer that needs no
 * shard goes from `reading` straight back to `free`.
 */
import { Buffer } from 'node:buffer';
import type { HttpResponse } from 'uWebSockets.js';
import { PooledCallRequest } from '../shared/calls.js';
import type { TraceSpan } from '../shared/tracing/tracer.js';
import type { ModernHead } from '../shared/protocol/answer-modern.js';
import type { Refusal } from '../shared/protocol/gate.js';
import type { ParamHeader } from '../shared/protocol/header-values.js';
import { statusLine } from '../shared/protocol/reply.js';
import { endAnswer } from './backpressure.js';
import type { RequestAuth } from './auth/authenticator.js';
import type { AcceptorSnapshot } from './route-directory.js';

const NO_PARAM_HEADERS: readonly ParamHeader[] = Object.freeze([]);

/** Bodies up to this size reuse the pooled object's buffer; larger ones get their own. */
const POOLED_BODY_BYTES = 16 * 1024;

/** What the owner of the pool does with a request's events. */
export interface RequestSink {
  /** The whole body arrived (`body` valid until the request is released). */
  onBody(req: McpRequest, body: Buffer): void;
  /** The body passed `server.maxBodyBytes` while arriving. */
  onBodyTooLarge(req: McpRequest): void;
  /** The client disconnected. */
  onAborted(req: McpRequest): void;
  /** The gateway is draining: every answer closes its connection (`Connection: close`). */
  readonly draining: boolean;
}

/** One pooled request. Fields are reset by {@link McpRequest.begin}. */
export class McpRequest extends PooledCallRequest implements ModernHead {
  state: 'free' | 'reading' | 'queued' | 'calling' | 'answered' = 'free';
  res: HttpResponse | null = null;
  aborted = false;
  startedAt = 0;
  snapshot: AcceptorSnapshot | null = null;
  shard = 0;
  /** Set when the gate refused the request but its answer waits for the body (to echo the request id). */
  refusal: Refusal | null = null;
  // ModernHead: the mirrored headers of a 2026-07-28 request ('' = absent).
  mcpMethod = '';
  mcpName = '';
  paramHeaders: readonly ParamHeader[] = NO_PARAM_HEADERS;
  /** Caller, tool filter and rate-limit slots when auth is configured (src/main/auth); kept with the pooled object. */
  auth: RequestAuth | null = null;
  // The CallRequest fields (what a tools/call hands its shard) come from PooledCallRequest; `identity` is set by the auth step.
  /** The client's bytes of `params.arguments` (a view into this request's body), when spliced. */
  argumentsBytes: Uint8Array | null = null;
  // The call, while `calling`.
  callId = 0;
  /** The JSON-RPC id as JSON text: only the acceptor writes the answer's envelope. */
  idText = '';
  /** SSE headers were sent. */
  streaming = false;
  heartbeat: NodeJS.Timeout | null = null;
  /**
   * SSE: bytes written since a write last found the connection caught up (`res.write` returned true) — an
   * upper bound of what uWS holds unsent for this stream (call-dispatcher.ts compares it with
   * `server.maxBufferedBytesPerConnection`).
   */
  unsentBytes = 0;
  /** Next and previous in-flight call with the same `idText` (the dispatcher's cancel index, a doubly linked chain). */
  nextSameId: McpRequest | null = null;
  prevSameId: McpRequest | null = null;
  // The answer staged for `writeStaged`, written inside `res.cork`.
  stagedStatus = 200;
  stagedRetryAfter: string | null = null;
  stagedBody: Uint8Array | null = null;
  stagedEnd = true;
  /** The acceptor's span of a `tools/call` while tracing is on (mcp-endpoint.ts). */
  span: TraceSpan | null = null;
  /** Neighbours in the pool's list of live requests (acquired, not released): what a drain deadline walks. */
  prevLive: McpRequest | null = null;
  nextLive: McpRequest | null = null;

  private body: Buffer = Buffer.allocUnsafe(POOLED_BODY_BYTES);
  private bodyBuf: Buffer = this.body;
  private size = 0;
  private limit = 0;
  private tooLarge = false;

  constructor(private readonly sink: RequestSink) {
    super();
  }

  /** Starts reading a request: attach the handlers synchronously (uWS rules). */
  begin(res: HttpResponse, contentLength: number, limit: number): void {
    this.state = 'reading';
    this.res = res;
    this.aborted = false;
    this.size = 0;
    this.limit = limit;
    this.tooLarge = false;
    this.streaming = false;
    this.unsentBytes = 0;
    this.callId = 0;
    this.bodyBuf = contentLength > POOLED_BODY_BYTES && contentLength <= limit ? Buffer.allocUnsafe(contentLength) : this.body;
    res.onAborted(this.handleAborted);
    res.onData(this.handleData);
  }

  /** Back to the pool's state; the pool owner calls this. */
  reset(): void {
    this.state = 'free';
    this.res = null;
    this.snapshot = null;
    this.refusal = null;
    this.argumentsJson = '';
    this.mcpMethod = '';
    this.mcpName = '';
    this.paramHeaders = NO_PARAM_HEADERS;
    this.modern = false;
    this.tracestate = '';
    this.baggage = '';
    this.clientCapabilitiesJson = '';
    this.inputResponsesJson = '';
    this.requestStateJson = '';
    this.argumentsBytes = null;
    this.stagedBody = null;
    this.nextSameId = null;
    this.prevSameId = null;
    this.span = null;
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
    if (this.bodyBuf !== this.body) this.bodyBuf = this.body;
  }

  /** Writes the staged answer; passed to `res.cork` (bound once). */
  readonly writeStaged = (): void => {
    const res = this.res;
    const body = this.stagedBody;
    if (res === null || body === null) return;
    if (this.streaming) {
      // Never `end(body, true)` on a stream: uWS 20.30 writes its `Connection: close` header line into the chunked body.
      // A stream opened while draining announced `Connection: close` in its head instead (call-dispatcher.ts).
      if (this.stagedEnd) res.end(body);
      else this.noteStreamWrite(res.write(body), body.length);
      return;
    }
    res.writeStatus(statusLine(this.stagedStatus));
    res.writeHeader('content-type', 'application/json');
    res.writeHeader('x-request-id', this.requestId);
    if (this.stagedRetryAfter !== null) res.writeHeader('retry-after', this.stagedRetryAfter);
    // Draining: uWS adds `Connection: close` and closes the connection after this answer.
    endAnswer(res, body, this.sink.draining);
  };

  /** Accounts one SSE write of `n` bytes; `caughtUp` is what `res.write` returned (see {@link unsentBytes}). */
  noteStreamWrite(caughtUp: boolean, n: number): void {
    this.unsentBytes = caughtUp ? n : this.unsentBytes + n;
  }

  private readonly handleAborted = (): void => {
    this.aborted = true;
    this.sink.onAborted(this);
  };

  /**
   * Enforces the limit while reading, so a missing or lying Content-Length
   * cannot bypass it. Chunks are copied: uWS reuses their memory.
   */
  private readonly handleData = (chunk: ArrayBuffer, isLast: boolean): void => {
    if (this.tooLarge || this.state !== 'reading') return;
    const n = chunk.byteLength;
    if (this.size + n > this.limit) {
      this.tooLarge = true;
      this.sink.onBodyTooLarge(this);
      return;
    }
    if (this.size + n > this.bodyBuf.length) {
      const next = Buffer.allocUnsafe(Math.min(this.limit, Math.max(2 * this.bodyBuf.length, this.size + n)));
      this.bodyBuf.copy(next, 0, 0, this.size);
      this.bodyBuf = next;
    }
    this.bodyBuf.set(new Uint8Array(chunk), this.size);
    this.size += n;
    if (isLast) this.sink.onBody(this, this.bodyBuf.subarray(0, this.size));
  };
}

/**
 * Free requests of one acceptor thread; grows to the high-water mark of
 * concurrent requests. Live requests (acquired, not yet released) are kept
 * in an intrusive list — two pointer writes each way, no allocation — so a
 * drain can count them and answer the ones its deadline finds.
 */
export class RequestPool {
  private readonly free: McpRequest[] = [];
  private live: McpRequest | null = null;
  private liveCount = 0;

  constructor(private readonly sink: RequestSink) {}

  /** Requests acquired and not yet released or retired. */
  get open(): number {
    return this.liveCount;
  }

  acquire(): McpRequest {
    const req = this.free.pop() ?? new McpRequest(this.sink);
    req.prevLive = null;
    req.nextLive = this.live;
    if (this.live !== null) this.live.prevLive = req;
    this.live = req;
    this.liveCount++;
    return req;
  }

  release(req: McpRequest): void {
    if (req.state === 'free') return;
    this.unlink(req);
    req.reset();
    this.free.push(req);
  }

  /**
   * Ends a request without pooling it again (uWS may still call its
   * handlers: a body past the limit, a cancelled call's closing connection).
   */
  retire(req: McpRequest): void {
    if (req.state === 'free') return;
    this.unlink(req);
    req.state = 'free';
  }

  /** Live requests now (a copy: the callback may release them). */
  liveRequests(): McpRequest[] {
    const out: McpRequest[] = [];
    for (let r = this.live; r !== null; r = r.nextLive) out.push(r);
    return out;
  }

  private unlink(req: McpRequest): void {
    if (req.prevLive !== null) req.prevLive.nextLive = req.nextLive;
    else if (this.live === req) this.live = req.nextLive;
    else return; // not linked (already unlinked)
    if (req.nextLive !== null) req.nextLive.prevLive = req.prevLive;
    req.prevLive = null;
    req.nextLive = null;
    this.liveCount--;
  }
}
