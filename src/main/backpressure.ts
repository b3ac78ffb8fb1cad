/**
 * Answers that respect back-pressure (issue 11 #2). `res.end(body)` copies
 * whatever the socket does not take into uWS's per-connection buffer, without
 * bound: ten connections pipelining 2,000 `tools/list` each and never reading
 * grew the gateway by 666 MB from 3.6 MB of requests. Here a whole answer
 * goes out with `tryEnd`, which never buffers the body: what the socket does
 * not take is kept by the gateway (one {@link HeldAnswer} per connection at
 * most) and written from `onWritable` as the client reads.
 *
 * Why at most one: both uWS builds refuse to parse a request while an answer
 * on its connection is pending — they close the connection (ADR-0001). So a
 * client that pipelines without reading gets the answers its socket buffers
 * take, then its connection closed; requests not yet answered were not run.
 * `res.pause()` is no help: on both builds it also stops the writable events
 * (measured: a held answer then never drains), and it cannot stop uWS from
 * parsing the rest of a read already received.
 *
 * Answers of at most uWS's cork buffer (16 KiB) are copied into it before
 * the socket is tried; if the socket then refuses them, uWS buffers that one
 * answer, and the next `tryEnd` on the connection fails at once. So besides
 * the kernel's socket buffers, a connection costs at most one held answer
 * plus 16 KiB. SSE streams, which add to one pending answer, are bounded by
 * `server.maxBufferedBytesPerConnection` (call-dispatcher.ts).
 */
import { Buffer } from 'node:buffer';
import type { HttpResponse } from 'uWebSockets.js';

/** The unsent rest of an answer, written as the client reads. */
class HeldAnswer {
  private aborted = false;

  /** `rest` holds the answer's bytes from write offset `base` on; `total` is the body's length. */
  constructor(
    private readonly res: HttpResponse,
    private readonly rest: Uint8Array,
    private readonly base: number,
    private readonly total: number,
  ) {}

  readonly onAborted = (): void => {
    this.aborted = true;
  };

  /** uWS: the socket drained; `offset` is how much of the body it took so far. Returns whether the write went through. */
  readonly onWritable = (offset: number): boolean => {
    if (this.aborted) return true;
    const [ok] = this.res.tryEnd(this.rest.subarray(offset - this.base), this.total);
    return ok;
  };
}

/**
 * Ends `res` with `body` (status and headers already written). When the
 * socket does not take it all, the rest is copied and written as the client
 * reads. Returns false in that case (the answer is still going out).
 * `closeConnection` answers (413, a drain) use `end(body, true)`: uWS then
 * reads nothing more from the connection, so one answer is all it can hold.
 */
export function endAnswer(res: HttpResponse, body: string | Uint8Array, closeConnection: boolean): boolean {
  if (closeConnection) {
    res.end(body, true);
    return true;
  }
  const total = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const [, done] = res.tryEnd(body, total);
  if (done) return true;
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  // The socket took part of it (or none: a backlog from earlier answers). `bytes` may be a scratch buffer or a
  // snapshot view that is only valid now: copy the rest.
  const base = res.getWriteOffset();
  const held = new HeldAnswer(res, Uint8Array.prototype.slice.call(bytes, base), base, total);
  // Replaces the request's own abort handler: the request is answered and its pooled object goes back to the
  // pool; an abort of this connection now concerns the held rest only.
  res.onAborted(held.onAborted);
  res.onWritable(held.onWritable);
  return false;
}
