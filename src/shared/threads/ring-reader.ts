/**
 * Consumer side of the SPSC byte ring (layout: `ring-layout.ts`).
 *
 * Calls `onFrame(buf, offset, length)` synchronously for every frame, in
 * order. THE VIEW IS VALID ONLY DURING THE CALLBACK: once it returns, the
 * reader may release the record (store HEAD; at the latest when the drain pass
 * ends) and the producer may overwrite those bytes at once, while your code
 * still holds the view. Decode what you need synchronously and copy
 * anything you keep — in particular, copy before any async write (a socket
 * write that may complete later, a `postMessage`, an `await`). Reassembled
 * chunked frames arrive in a heap Buffer; treat them the same way.
 *
 * Waiting: `Atomics.waitAsync` on TAIL (never `Atomics.wait`: these threads do
 * I/O). Each wake drains everything published (many frames per wake under
 * load) and re-arms. The producer notifies only on empty → non-empty; see
 * `RingWriter.publish` for why no wake-up is lost. Measured on Node 20: a
 * pending `waitAsync` does not keep a thread (or the process) alive — the
 * owner's MessagePort or sockets do that — but the waiter stays registered
 * until notified, so `close()` notifies it away (a stale waiter would take the
 * producer's `notify(…, 1)` from a later reader on the same ring).
 *
 * Ordering: `Atomics.load(TAIL)` (acquire) before reading any record byte;
 * `Atomics.store(HEAD)` (release) only after the callbacks returned, so the
 * producer cannot reuse bytes we still read. Space is released at the end of
 * each drain pass and every capacity/4 bytes within a long one.
 */
import { Buffer } from 'node:buffer';
import { atomics, attachRing, HEADER_BYTES, KIND_SHIFT, LEN_MASK, RecordKind, recordBytes, releaseRole, RingField, SYNC_ROUNDS, type RingMemory } from './ring-layout.js';

/**
 * Receives one frame: `buf[offset, offset + length)`. Valid only during the
 * call (copy before any async use). Must not throw; if it does, the frame
 * counts as consumed and the error propagates (from `drain()`, or as an
 * uncaught error on this thread when woken by the producer).
 */
export type RingFrameHandler = (buf: Buffer, offset: number, length: number) => void;

/** Options of {@link RingReader}. */
export interface RingReaderOptions {
  /** Wait for frames with `Atomics.waitAsync` and deliver them as they come (default true); false: only `drain()` delivers. */
  wait?: boolean;
}

/** The consumer side of a ring. One per ring; owned by one thread. */
export class RingReader {
  private readonly ctl: Int32Array;
  private readonly data32: Int32Array;
  private readonly bytes: Buffer;
  private readonly capacity: number;
  private readonly mask: number;
  private readonly maxFrame: number;
  /** Bytes after which a long drain pass releases what it consumed so far. */
  private readonly releaseEvery: number;
  /** Our HEAD (we are its only writer). */
  private head: number;
  /** Reassembly of a chunked frame (it may span several drains). */
  private asm: Buffer | null = null;
  private asmLen = 0;
  /** A waitAsync on TAIL is pending. */
  private armed = false;
  private draining = false;
  private closed = false;

  constructor(
    memory: RingMemory,
    private readonly onFrame: RingFrameHandler,
    options: RingReaderOptions = {},
  ) {
    const v = attachRing(memory, RingField.Reader);
    this.ctl = v.ctl;
    this.data32 = v.data32;
    this.bytes = v.bytes;
    this.capacity = v.capacity;
    this.mask = v.mask;
    this.maxFrame = v.maxFrame;
    this.releaseEvery = v.capacity / 4;
    this.head = Atomics.load(this.ctl, RingField.Head);
    if (options.wait !== false) this.arm();
  }

  /** True after `close()`. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Delivers every frame published when it is called (synchronously) and
   * returns how many it delivered. Bounded: at most one ring's worth.
   */
  drain(): number {
    // Re-entry from inside onFrame would deliver frames the outer pass has not released yet: refuse it.
    if (this.closed || this.draining) return 0;
    this.draining = true;
    const ctl = this.ctl;
    const d32 = this.data32;
    // Acquire: every record before `tail` was fully written before the producer stored it.
    const tail = Atomics.load(ctl, RingField.Tail);
    let head = this.head;
    /** HEAD as the producer last saw it (we release in batches, see below). */
    let released = head;
    let frames = 0;
    try {
      while (head !== tail && !this.closed) {
        const off = head & this.mask;
        const word = d32[off >> 2] as number;
        const kind = word >>> KIND_SHIFT;
        const len = word & LEN_MASK;
        const rec = kind === RecordKind.Pad ? this.capacity - off : recordBytes(len);
        if (rec > (tail - head) >>> 0 || off + rec > this.capacity || (kind !== RecordKind.Pad && len > this.maxFrame)) {
          this.corrupt(`record kind ${kind} of ${len} bytes at offset ${off} overruns the published region`);
        }
        // Our position moves past the record before the callback, so a throwing callback still consumes it;
        // HEAD (what the producer sees) moves only after the callback has returned.
        head = (head + rec) | 0;
        this.head = head;
        if (kind === RecordKind.Whole) {
          frames++;
          this.onFrame(this.bytes, off + HEADER_BYTES, len);
        } else if (kind !== RecordKind.Pad) {
          const frame = this.chunk(kind, off, len);
          if (frame !== null) {
            frames++;
            this.onFrame(frame, 0, frame.length);
          }
        }
        // Release in batches — at the end of the pass, and every capacity/4 bytes within a long one — not per
        // frame: HEAD's cache line then moves between the cores once per batch instead of once per frame
        // (the producer loads HEAD on every commit).
        if ((head - released) >>> 0 >= this.releaseEvery) released = this.release(head);
      }
    } finally {
      this.draining = false;
      if (this.head !== released) this.release(this.head);
    }
    return frames;
  }

  /**
   * Stops delivering (also from inside `onFrame`: no further frame is
   * delivered), removes the pending wait, releases the reader role.
   * Idempotent. Undelivered frames stay in the ring for a later reader —
   * attach it after the closing `drain()` has returned (from inside `onFrame`
   * the current frame is not yet released and would be delivered again).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.asm = null;
    // Only this reader waits on TAIL: remove our registered waiter (see the file comment).
    if (this.armed) Atomics.notify(this.ctl, RingField.Tail);
    releaseRole(this.ctl, RingField.Reader);
  }

  /** Appends a chunk to the reassembly; returns the frame when this chunk completed it. */
  private chunk(kind: number, off: number, len: number): Buffer | null {
    const start = off + HEADER_BYTES;
    if (kind === RecordKind.First) {
      if (this.asm !== null) this.corrupt('FIRST chunk inside a chunked frame');
      const total = (this.data32[(off >> 2) + 1] as number) >>> 0;
      if (total <= this.maxFrame || len > total) this.corrupt(`FIRST chunk of ${len} bytes announces a ${total}-byte frame`);
      this.asm = Buffer.allocUnsafe(total);
      this.asmLen = this.bytes.copy(this.asm, 0, start, start + len);
      return null;
    }
    const asm = this.asm;
    if (kind !== RecordKind.More && kind !== RecordKind.Last) this.corrupt(`unknown record kind ${kind} at offset ${off}`);
    if (asm === null) this.corrupt('continuation chunk without a FIRST chunk');
    if (this.asmLen + len > asm.length) this.corrupt(`chunks exceed the announced ${asm.length}-byte frame`);
    this.asmLen += this.bytes.copy(asm, this.asmLen, start, start + len);
    if (kind === RecordKind.More) return null;
    if (this.asmLen !== asm.length) this.corrupt(`LAST chunk ends a ${this.asmLen}-byte frame announced as ${asm.length}`);
    this.asm = null;
    return asm;
  }

  /**
   * Stores HEAD (release: our reads of the records before it, the callbacks'
   * included, are done), then wakes the producer if it announced that it waits
   * for space (see `RingWriter.waitForSpace`: the flag is loaded after the store).
   */
  private release(head: number): number {
    Atomics.store(this.ctl, RingField.Head, head);
    if (Atomics.load(this.ctl, RingField.ProducerWaiting) !== 0) Atomics.notify(this.ctl, RingField.Head, 1);
    return head;
  }

  /** Waits for TAIL to move past what we drained; delivers at once if it already has. */
  private arm(): void {
    const r = atomics.waitAsync(this.ctl, RingField.Tail, this.head);
    if (r.async) {
      this.armed = true;
      void r.value.then(this.pump);
    } else {
      setImmediate(this.pump);
    }
  }

  /**
   * One wake: drain, then re-arm on the TAIL we drained to. `waitAsync`
   * compares TAIL with that value atomically with registering, so a frame
   * published after our drain makes it return `not-equal` and we drain again
   * (up to SYNC_ROUNDS times, then yield a turn so this thread's I/O runs).
   */
  private readonly pump = (): void => {
    this.armed = false;
    for (let round = 0; round < SYNC_ROUNDS && !this.closed; round++) {
      try {
        this.drain();
      } catch (err) {
        if (!this.closed) setImmediate(this.pump);
        throw err;
      }
      if (this.closed) return;
      const r = atomics.waitAsync(this.ctl, RingField.Tail, this.head);
      if (r.async) {
        this.armed = true;
        void r.value.then(this.pump);
        return;
      }
    }
    if (!this.closed) setImmediate(this.pump);
  };

  /** A corrupt ring cannot be resynchronised: close (so the pump stops) and throw. */
  private corrupt(what: string): never {
    this.close();
    throw new Error(`ring corrupt: ${what}`);
  }
}
