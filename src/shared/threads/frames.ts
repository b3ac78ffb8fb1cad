/**
 * Batched hand-off frames between an acceptor and a shard. Every request that
 * needs a shard (`tools/call`) is appended to the batch of its shard; the
 * batch goes out once per event-loop turn as one transferred ArrayBuffer (no
 * structured clone per request; see docs/decisions/0002-request-dispatch.md).
 *
 * Call frame (acceptor → shard):
 * ```
 *  0       4       8       12      16
 *  +-------+-------+-------+-------+---------------+-------------+----------+
 *  |callId |routeL |ctxLen |bodyLen| route (utf8)  | ctx (utf8)  | body     |
 *  +-------+-------+-------+-------+---------------+-------------+----------+
 * ```
 * Result frame (shard → acceptor):
 * ```
 *  0       4       8       12
 *  +-------+-------+-------+------------------+
 *  |callId |status |outcome|bodyLen| body     |
 *  +-------+-------+-------+-------+----------+
 * ```
 * All header fields are little-endian u32. `ctx` is the request context
 * joined with U+001F (see {@link CallContext}). A result frame whose outcome
 * has {@link PARTIAL_FRAME} set is not the answer but one SSE event of a
 * streamed answer (a progress or log notification); the final frame follows.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Per-request context that travels with a call (all strings; empty = absent). */
export interface CallContext {
  requestId: string;
  sessionId: string;
  traceparent: string;
  /** The client accepts `text/event-stream`: progress and log frames may be streamed to it. */
  sse?: boolean;
}

/** Outcome bit marking a streamed event rather than the final answer. */
export const PARTIAL_FRAME = 0x100;

const SEP = '\u001f';

/** How a call ended, for metrics (kept numeric on the wire). */
export const CallOutcome = {
  Ok: 0,
  ToolError: 1,
  RpcError: 2,
  Rejected: 3,
} as const;
export type CallOutcome = (typeof CallOutcome)[keyof typeof CallOutcome];
export const CALL_OUTCOME_LABEL = ['ok', 'tool_error', 'rpc_error', 'rejected'] as const;

/** An append-only, growable batch of frames, handed over whole with {@link FrameBatch.take}. */
export class FrameBatch {
  private buf: ArrayBuffer;
  private view: DataView;
  private bytes: Uint8Array;
  private len = 0;
  count = 0;

  constructor(private readonly initialBytes = 16 * 1024) {
    this.buf = new ArrayBuffer(initialBytes);
    this.view = new DataView(this.buf);
    this.bytes = new Uint8Array(this.buf);
  }

  /** Appends a call frame. `body` is copied. */
  pushCall(callId: number, routeKey: string, ctx: CallContext, body: Uint8Array): void {
    const route = encoder.encode(routeKey);
    const context = encoder.encode(ctx.requestId + SEP + ctx.sessionId + SEP + ctx.traceparent + SEP + (ctx.sse === true ? 's' : ''));
    this.reserve(16 + route.length + context.length + body.length);
    this.header4(callId, route.length, context.length, body.length);
    this.append(route);
    this.append(context);
    this.append(body);
    this.count++;
  }

  /** Appends a result frame. */
  pushResult(callId: number, status: number, outcome: CallOutcome, body: string): void {
    // Encode straight into the batch: worst case 3 bytes per UTF-16 unit.
    this.reserve(16 + body.length * 3);
    const start = this.len;
    const { written } = encoder.encodeInto(body, this.bytes.subarray(start + 16));
    this.header4(callId, status, outcome, written);
    this.len += written;
    this.count++;
  }

  /** Appends a streamed event (one SSE `data:` payload) for a call whose final answer comes later. */
  pushEvent(callId: number, body: string): void {
    this.pushResult(callId, 0, PARTIAL_FRAME as CallOutcome, body);
  }

  /** Hands the filled buffer over (to be transferred) and starts a fresh one. */
  take(): { buffer: ArrayBuffer; length: number; count: number } {
    const out = { buffer: this.buf, length: this.len, count: this.count };
    this.buf = new ArrayBuffer(this.initialBytes);
    this.view = new DataView(this.buf);
    this.bytes = new Uint8Array(this.buf);
    this.len = 0;
    this.count = 0;
    return out;
  }

  private header4(a: number, b: number, c: number, d: number): void {
    const v = this.view;
    const o = this.len;
    v.setUint32(o, a, true);
    v.setUint32(o + 4, b, true);
    v.setUint32(o + 8, c, true);
    v.setUint32(o + 12, d, true);
    this.len += 16;
  }

  private append(b: Uint8Array): void {
    this.bytes.set(b, this.len);
    this.len += b.length;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.byteLength) return;
    let size = this.buf.byteLength * 2;
    while (size < this.len + n) size *= 2;
    const next = new ArrayBuffer(size);
    new Uint8Array(next).set(this.bytes.subarray(0, this.len));
    this.buf = next;
    this.view = new DataView(next);
    this.bytes = new Uint8Array(next);
  }
}

/** A decoded call frame. `body` is a view into the batch buffer. */
export interface CallFrame {
  callId: number;
  routeKey: string;
  ctx: CallContext;
  body: Uint8Array;
}

/** Decodes every call frame of a batch. */
export function readCalls(buffer: ArrayBuffer, length: number): CallFrame[] {
  const view = new DataView(buffer, 0, length);
  const bytes = new Uint8Array(buffer, 0, length);
  const out: CallFrame[] = [];
  let o = 0;
  while (o < length) {
    const callId = view.getUint32(o, true);
    const routeLen = view.getUint32(o + 4, true);
    const ctxLen = view.getUint32(o + 8, true);
    const bodyLen = view.getUint32(o + 12, true);
    o += 16;
    const routeKey = decoder.decode(bytes.subarray(o, o + routeLen));
    o += routeLen;
    const [requestId = '', sessionId = '', traceparent = '', flags = ''] = decoder.decode(bytes.subarray(o, o + ctxLen)).split(SEP);
    o += ctxLen;
    out.push({ callId, routeKey, ctx: { requestId, sessionId, traceparent, sse: flags.includes('s') }, body: bytes.subarray(o, o + bodyLen) });
    o += bodyLen;
  }
  return out;
}

/** Visits every result frame of a batch without allocating frame objects. */
export function forEachResult(
  buffer: ArrayBuffer,
  length: number,
  visit: (callId: number, status: number, outcome: CallOutcome, body: Uint8Array) => void,
): void {
  const view = new DataView(buffer, 0, length);
  let o = 0;
  while (o < length) {
    const callId = view.getUint32(o, true);
    const status = view.getUint32(o + 4, true);
    const outcome = view.getUint32(o + 8, true) as CallOutcome;
    const bodyLen = view.getUint32(o + 12, true);
    o += 16;
    visit(callId, status, outcome, new Uint8Array(buffer, o, bodyLen));
    o += bodyLen;
  }
}
