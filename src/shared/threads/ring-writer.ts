/**
 * Producer side of the SPSC byte ring (layout: `ring-layout.ts`).
 *
 * Fast path, zero allocation: `reserve(len)` returns an offset into
 * `writer.buf` — a Buffer over the shared data region itself — the caller
 * encodes the frame there, and `commit()` writes the record header and
 * publishes it at once (one `Atomics.store` of TAIL, one `Atomics.load` of
 * HEAD). Slow path: when the frame does not fit now, a backlog already exists
 * (FIFO order: once a backlog exists every later frame queues behind it), or
 * the frame is larger than the ring's MAX_FRAME (it is chunked), `writer.buf`
 * is a heap Buffer for this frame; `commit()` appends it to the backlog, which
 * drains into the ring as the consumer frees space. Frames and chunks enter
 * the ring in commit order, so no frame overtakes another.
 *
 * The backlog is bounded (`maxBacklogBytes`): a frame that would exceed it is
 * refused (`reserve` returns {@link RING_REFUSED}, nothing is written) — the
 * caller answers 503; the producer never blocks.
 *
 * Longer than most files here (~370 lines): about half are the ordering and
 * wake-up arguments, which belong next to the lines that enforce them, and
 * the fast path, the backlog and the wait share private state.
 *
 * Ordering (where enforced, see `publish` and `waitForSpace`):
 *  - record bytes are plain writes, then `Atomics.store(TAIL)` (release): a
 *    reader that loads the new TAIL sees the bytes;
 *  - `Atomics.load(HEAD)` (acquire) before reusing space: the reader's reads
 *    of released bytes happened before it stored HEAD.
 */
import { Buffer } from 'node:buffer';
import { atomics, attachRing, HEADER_BYTES, KIND_SHIFT, RecordKind, recordBytes, releaseRole, RingField, SYNC_ROUNDS, type RingMemory } from './ring-layout.js';

/** What {@link RingWriter.reserve} returns when the backlog bound refuses the frame. */
export const RING_REFUSED = -1;

/** Options of {@link RingWriter}. */
export interface RingWriterOptions {
  /**
   * Payload bytes the heap backlog may hold (frames waiting for ring space);
   * a frame that would exceed it is refused. `Infinity` never refuses; `0`
   * refuses whenever the ring is full. Default: the ring's capacity.
   */
  maxBacklogBytes?: number;
}

/** Counters for metrics; updated in place (read them, do not write). */
export interface RingWriterStats {
  /** Frames whose last byte entered the ring. */
  framesWritten: number;
  /** Payload bytes that entered the ring. */
  bytesWritten: number;
  /** Payload bytes in the backlog now. */
  backlogBytes: number;
  /** Frames (or remainders of chunked frames) in the backlog now. */
  backlogFrames: number;
  /** Frames that had to wait in the backlog. */
  backlogged: number;
  /** Frames refused by the backlog bound. */
  refused: number;
}

const NONE = -1;

/** The producer side of a ring. One per ring; not thread-safe (one thread owns it). */
export class RingWriter {
  /**
   * Where to encode the reserved frame: the ring itself on the fast path, a
   * heap Buffer otherwise. Read it after every `reserve()`.
   */
  buf: Buffer;
  /** Counters (see {@link RingWriterStats}). */
  readonly stats: RingWriterStats = { framesWritten: 0, bytesWritten: 0, backlogBytes: 0, backlogFrames: 0, backlogged: 0, refused: 0 };

  private readonly ctl: Int32Array;
  private readonly data32: Int32Array;
  private readonly ring: Buffer;
  private readonly capacity: number;
  private readonly mask: number;
  private readonly maxFrame: number;
  private readonly maxBacklog: number;
  /** Our TAIL (we are its only writer). */
  private tail: number;
  /** Last HEAD we loaded; HEAD only moves forward, so a stale value only underestimates free space. */
  private headCache: number;

  /** Reserved length, or NONE. */
  private pendingLen = NONE;
  /** Padding bytes before the reserved ring record (0 or the bytes to the end of the region). */
  private pendingPad = 0;
  /** Ring offset of the reserved record's header. */
  private pendingOff = 0;
  /** The heap Buffer of a slow-path reservation, or null on the fast path. */
  private pendingHeap: Buffer | null = null;

  /** Backlog FIFO: `queue[qHead]` is the oldest; `cursor` of its bytes already went into the ring as chunks. */
  private queue: Array<Buffer | undefined> = [];
  private qHead = 0;
  private cursor = 0;
  /** A waitAsync on HEAD (or a setImmediate retry) is pending. */
  private waiting = false;
  private closed = false;

  constructor(memory: RingMemory, options: RingWriterOptions = {}) {
    const max = options.maxBacklogBytes;
    // Validated before attaching: a constructor that throws must not leave the writer role claimed.
    if (max !== undefined && (!(max >= 0) || (max !== Infinity && !Number.isInteger(max)))) {
      throw new RangeError(`ring maxBacklogBytes must be a non-negative integer or Infinity, got ${String(max)}`);
    }
    const v = attachRing(memory, RingField.Writer);
    this.ctl = v.ctl;
    this.data32 = v.data32;
    this.ring = v.bytes;
    this.buf = v.bytes;
    this.capacity = v.capacity;
    this.mask = v.mask;
    this.maxFrame = v.maxFrame;
    this.maxBacklog = max ?? v.capacity;
    this.tail = Atomics.load(this.ctl, RingField.Tail);
    this.headCache = Atomics.load(this.ctl, RingField.Head);
  }

  /** Largest payload written as one record; bigger frames travel as chunks. */
  get maxFrameBytes(): number {
    return this.maxFrame;
  }

  /**
   * Reserves `len` bytes for one frame and returns the offset in
   * {@link RingWriter.buf} to encode it at, or {@link RING_REFUSED} when the
   * backlog bound refuses it (nothing reserved, nothing written; answer 503).
   * Follow with `commit()` (or `cancel()`) before the next `reserve()`.
   */
  reserve(len: number): number {
    if (this.pendingLen !== NONE) throw new Error('RingWriter.reserve: the previous reservation was neither committed nor cancelled');
    if (len >>> 0 !== len) throw new RangeError(`RingWriter.reserve: length must be an integer from 0 to 2^32-1, got ${String(len)}`);
    if (this.closed) throw new Error('RingWriter.reserve: the writer is closed');
    // A backlog drains before anything else may be written (FIFO); try now, the consumer may have freed space.
    if (this.qHead !== this.queue.length) this.flushBacklog();
    if (len <= this.maxFrame && this.qHead === this.queue.length) {
      const pad = this.fit(recordBytes(len));
      if (pad !== NONE) {
        this.pendingLen = len;
        this.pendingPad = pad;
        this.pendingOff = (this.tail + pad) & this.mask;
        this.buf = this.ring;
        return this.pendingOff + HEADER_BYTES;
      }
    }
    // Heap path: only what cannot enter the ring now counts against the backlog bound.
    const direct = this.qHead === this.queue.length ? this.chunkBytesThatFit(len) : 0;
    if (this.stats.backlogBytes + (len - direct) > this.maxBacklog) {
      this.stats.refused++;
      return RING_REFUSED;
    }
    const heap = Buffer.allocUnsafe(len);
    this.pendingLen = len;
    this.pendingHeap = heap;
    this.buf = heap;
    return 0;
  }

  /**
   * Publishes the reserved frame; `length` (default: the reserved length) may
   * be shorter than reserved, e.g. after encoding UTF-8 into a worst-case
   * reservation.
   */
  commit(length: number = this.pendingLen): void {
    const reserved = this.pendingLen;
    if (reserved === NONE) throw new Error('RingWriter.commit: nothing is reserved');
    if (length >>> 0 !== length || length > reserved) throw new RangeError(`RingWriter.commit: length must be an integer from 0 to the reserved ${reserved}, got ${String(length)}`);
    this.pendingLen = NONE;
    const heap = this.pendingHeap;
    if (heap === null) {
      if (this.pendingPad !== 0) this.data32[(this.tail & this.mask) >> 2] = RecordKind.Pad << KIND_SHIFT;
      const w = this.pendingOff >> 2;
      this.data32[w] = (RecordKind.Whole << KIND_SHIFT) | length;
      this.data32[w + 1] = 0;
      this.stats.framesWritten++;
      this.stats.bytesWritten += length;
      this.publish((this.tail + this.pendingPad + recordBytes(length)) | 0);
      return;
    }
    this.pendingHeap = null;
    this.buf = this.ring;
    this.queue.push(length === heap.length ? heap : heap.subarray(0, length));
    this.stats.backlogBytes += length;
    this.stats.backlogFrames++;
    this.flushBacklog();
    if (this.qHead !== this.queue.length) {
      // FIFO: if anything is still queued, this frame (the newest) is.
      this.stats.backlogged++;
      this.waitForSpace();
    }
  }

  /** Drops the current reservation (e.g. encoding failed); nothing is published. */
  cancel(): void {
    this.pendingLen = NONE;
    this.pendingHeap = null;
    this.buf = this.ring;
  }

  /**
   * Stops the writer: drops the backlog and any reservation, removes a pending
   * wait on HEAD, releases the writer role. Idempotent. Frames already in the
   * ring stay readable.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancel();
    this.queue = [];
    this.qHead = 0;
    this.cursor = 0;
    this.stats.backlogBytes = 0;
    this.stats.backlogFrames = 0;
    Atomics.store(this.ctl, RingField.ProducerWaiting, 0);
    // A pending waitAsync keeps no thread alive, but it stays registered until notified; only this writer waits on HEAD.
    if (this.waiting) Atomics.notify(this.ctl, RingField.Head);
    releaseRole(this.ctl, RingField.Writer);
  }

  /**
   * Padding to put before a `rec`-byte record so that it is contiguous (0, or
   * the bytes left before the end of the region), or NONE if pad + record do
   * not fit in the free space now.
   */
  private fit(rec: number): number {
    const toEnd = this.capacity - (this.tail & this.mask);
    const pad = rec <= toEnd ? 0 : toEnd;
    const need = pad + rec;
    if (need > this.capacity - ((this.tail - this.headCache) >>> 0)) {
      // Acquire: the consumer's reads of the bytes it released happened before its store of HEAD.
      this.headCache = Atomics.load(this.ctl, RingField.Head);
      if (need > this.capacity - ((this.tail - this.headCache) >>> 0)) return NONE;
    }
    return pad;
  }

  /** Payload bytes of a `len`-byte frame that could enter the ring now (whole, or as leading chunks). */
  private chunkBytesThatFit(len: number): number {
    const head = Atomics.load(this.ctl, RingField.Head);
    this.headCache = head;
    let t = this.tail;
    let fit = 0;
    // Bounded: each step adds ≥ 8 bytes to t and the loop stops when the ring is full or the frame placed.
    do {
      const c = Math.min(len - fit, this.maxFrame);
      const rec = recordBytes(c);
      const toEnd = this.capacity - (t & this.mask);
      const need = (rec <= toEnd ? 0 : toEnd) + rec;
      if (need > this.capacity - ((t - head) >>> 0)) break;
      t = (t + need) | 0;
      fit += c;
    } while (fit < len);
    return fit;
  }

  /** Writes backlog frames (whole or as chunks) while they fit. */
  private flushBacklog(): void {
    const maxFrame = this.maxFrame;
    while (this.qHead !== this.queue.length) {
      const frame = this.queue[this.qHead] as Buffer;
      const total = frame.length;
      while (true) {
        const c = Math.min(total - this.cursor, maxFrame);
        const pad = this.fit(recordBytes(c));
        if (pad === NONE) return;
        const kind = total <= maxFrame ? RecordKind.Whole : this.cursor === 0 ? RecordKind.First : this.cursor + c === total ? RecordKind.Last : RecordKind.More;
        if (pad !== 0) this.data32[(this.tail & this.mask) >> 2] = RecordKind.Pad << KIND_SHIFT;
        const off = (this.tail + pad) & this.mask;
        this.data32[off >> 2] = (kind << KIND_SHIFT) | c;
        this.data32[(off >> 2) + 1] = kind === RecordKind.First ? total : 0;
        frame.copy(this.ring, off + HEADER_BYTES, this.cursor, this.cursor + c);
        this.cursor += c;
        this.stats.bytesWritten += c;
        this.stats.backlogBytes -= c;
        this.publish((this.tail + pad + recordBytes(c)) | 0);
        if (this.cursor === total) break;
      }
      this.stats.framesWritten++;
      this.stats.backlogFrames--;
      this.cursor = 0;
      this.queue[this.qHead++] = undefined; // let the copy be collected
      if (this.qHead === this.queue.length) {
        this.queue.length = 0;
        this.qHead = 0;
      } else if (this.qHead >= 1024 && this.qHead * 2 >= this.queue.length) {
        this.queue = this.queue.slice(this.qHead);
        this.qHead = 0;
      }
    }
  }

  /**
   * Stores TAIL (release) and wakes the reader if the ring was empty.
   *
   * Why no wake-up is lost: the reader ends a drain pass by storing HEAD = t,
   * the TAIL it drained to, and then waits with `waitAsync(TAIL, t)`, whose
   * check of TAIL against t and registration of the waiter are one atomic
   * step. We load HEAD *after* storing TAIL (both seq-cst, so, Dekker-style,
   * one side sees the other's store):
   *  - HEAD == oldTail: the reader has released everything before this record
   *    and is waiting, or about to wait, on TAIL == oldTail: we notify (if it
   *    is not registered yet, its check sees our TAIL and returns `not-equal`);
   *  - HEAD ≠ oldTail: either the reader has not released its pass yet — it
   *    will, then wait on TAIL == t ≤ oldTail, find TAIL moved (`not-equal`)
   *    and drain again — or it has already consumed this record.
   * Loading HEAD *before* the store would lose the wake-up of the second case
   * (the ping-pong test in test/integration/ring-threads.test.ts stalls).
   * A notify with no waiter (reader between its release and its wait) costs
   * ~0.2 µs and does no harm; it happens only when the ring was empty.
   */
  private publish(newTail: number): void {
    const oldTail = this.tail;
    this.tail = newTail;
    Atomics.store(this.ctl, RingField.Tail, newTail);
    const head = Atomics.load(this.ctl, RingField.Head);
    this.headCache = head;
    if (head === oldTail) Atomics.notify(this.ctl, RingField.Tail, 1);
  }

  /**
   * Waits (asynchronously) until the consumer frees space, then drains the
   * backlog; repeats until the backlog is empty.
   *
   * Protocol with the reader (`RingReader.release`): we store
   * PRODUCER_WAITING = 1, then load HEAD, flush, and `waitAsync(HEAD, h)` on
   * the HEAD value h we loaded last. The reader, after releasing (store HEAD),
   * loads PRODUCER_WAITING at the end of each drain pass (and every
   * capacity/4 bytes within one) and notifies HEAD if it is 1. Seq-cst
   * store→load on both sides: a release our HEAD load missed is followed by a
   * reader load that sees WAITING = 1, so it notifies — before our wait (then
   * `waitAsync` sees HEAD ≠ h: `not-equal`) or after (we are woken). Only we
   * clear the flag, and only when the backlog is empty: a reader clearing it
   * could consume the flag for a release we had already seen and leave our
   * next wait unannounced (with `Atomics.exchange` in the reader, the stream
   * test in test/integration/ring-threads.test.ts stalls).
   */
  private waitForSpace(): void {
    if (this.waiting || this.closed) return;
    for (let round = 0; round < SYNC_ROUNDS; round++) {
      Atomics.store(this.ctl, RingField.ProducerWaiting, 1);
      this.headCache = Atomics.load(this.ctl, RingField.Head);
      this.flushBacklog();
      if (this.qHead === this.queue.length) {
        Atomics.store(this.ctl, RingField.ProducerWaiting, 0);
        return;
      }
      const r = atomics.waitAsync(this.ctl, RingField.Head, this.headCache);
      if (r.async) {
        this.waiting = true;
        void r.value.then(this.onSpace);
        return;
      }
    }
    // The consumer keeps moving but the backlog does not drain yet: retry next turn rather than spin.
    this.waiting = true;
    setImmediate(this.onSpace);
  }

  private readonly onSpace = (): void => {
    this.waiting = false;
    if (!this.closed) this.waitForSpace();
  };
}
