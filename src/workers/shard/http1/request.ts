/**
 * What a caller hands the pool for one HTTP/1.1 exchange: a handler that
 * receives the response, and a request slot that carries the pool's
 * bookkeeping for it. Both belong to the caller and are reused across calls
 * (one exchange at a time per slot), so a call allocates nothing here: no
 * Promise, no closure, no timer.
 */
import type { Buffer } from 'node:buffer';
import type { Connection } from './connection.js';
import type { Http1Failure } from './errors.js';
import type { ResponseHead } from './response-head.js';

/**
 * Receives one response. Exactly one terminal callback (`onEnd` or
 * `onError`) follows each `request()`, unless the caller ends the exchange
 * itself with `abort()` or `finish()`, after which there are no more
 * callbacks. Callbacks never run synchronously inside `request()`.
 */
export interface ResponseHandler {
  /** The final response head (1xx interim heads are skipped). `head` is valid only during the call. */
  onHead(status: number, head: ResponseHead): void;
  /** Body bytes `chunk[start, end)`, framing removed. The view is valid only during the call: copy what you keep. */
  onBody(chunk: Buffer, start: number, end: number): void;
  /** The response is complete. */
  onEnd(): void;
  /** The exchange failed; see `failure.code` and `failure.mayHaveReachedServer`. */
  onError(failure: Http1Failure): void;
}

/** Where a request slot is in its life (pool-internal). */
export const enum SlotState {
  Free,
  Queued,
  /** Bound to a connection that is still connecting; nothing written yet. */
  Connecting,
  /** Written (or being written) on a connection. */
  Sent,
  /** Refused before any I/O; its onError is scheduled for the next microtask. */
  Failing,
}

/**
 * One request slot: create one per concurrent exchange you run and reuse it.
 * The fields after `handler` are the pool's; do not touch them.
 *
 * Buffer rule: the `data` buffer given to `request()` is the pool's until the
 * slot's terminal callback (or until `abort()`/`finish()` returns). Do not
 * change or reuse it before: a slow socket may still be writing it. After that
 * point the pool holds no reference that can put its bytes on the wire (a
 * connection whose response completed before its write did is destroyed, not
 * reused).
 */
export class Http1Request {
  /** @internal */ state: SlotState = SlotState.Free;
  /** @internal The request bytes (head and body, written with one write). */
  data: Buffer | null = null;
  /** @internal Absolute deadline (Date.now() ms). */
  deadlineAt = 0;
  /** @internal Neighbours in the pool's wait queue (intrusive list: no allocation per queued call). */
  prev: Http1Request | null = null;
  /** @internal */ next: Http1Request | null = null;
  /** @internal The connection carrying (or about to carry) the exchange. */
  conn: Connection | null = null;

  constructor(readonly handler: ResponseHandler) {}

  /** True while the slot is in use (between `request()` and its end). */
  get busy(): boolean {
    return this.state !== SlotState.Free;
  }
}
