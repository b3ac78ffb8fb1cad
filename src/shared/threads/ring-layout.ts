/**
 * Shared-memory layout of the single-producer/single-consumer byte ring
 * (`ring.ts` is the entry point; `ring-writer.ts` and `ring-reader.ts` are
 * the two sides). This file owns the numbers both sides must agree on and
 * nothing else: control-block field indices (piscina `src/symbols.ts` style),
 * the record format, and the allocation/validation of a ring's memory.
 *
 * Control block — one `Int32Array` over its own SharedArrayBuffer, three
 * 64-byte cache lines so that the producer's hot field (TAIL) and the
 * consumer's (HEAD) never share a line (no false sharing between threads):
 * ```
 *  line 0 (bytes 0..63)   written at creation / attach, read rarely
 *    [0]  VERSION           layout version; attach refuses another layout
 *    [1]  CAPACITY          data region bytes (power of two)
 *    [2]  MAX_FRAME         largest payload written as one record; bigger frames are chunked
 *    [3]  WRITER            1 while a RingWriter is attached (single-producer guard)
 *    [4]  READER            1 while a RingReader is attached (single-consumer guard)
 *  line 1 (bytes 64..127) written by the producer only
 *    [16] TAIL              producer position: every record before it is published
 *  line 2 (bytes 128..191) HEAD written by the consumer, WAITING by the producer (rarely)
 *    [32] HEAD              consumer position: every record before it is released
 *    [33] PRODUCER_WAITING  1 while the producer has a backlog and waits (or will) on HEAD
 * ```
 * Positions are free-running 32-bit counters (they wrap at 2^32, stored as
 * int32); the byte offset in the data region is `position & (capacity - 1)`
 * and the bytes in use are `(TAIL - HEAD) >>> 0`, exact across the wrap
 * because capacity ≤ 2^28 < 2^32.
 *
 * Data region — records back to back, each 8-byte aligned (so a frame's own
 * u32/f64 header fields are aligned) and never split at the end of the region:
 * ```
 *   0                                                                  capacity
 *   | rec | rec |   free   | rec | rec | rec |PAD ........................|
 *                          ^HEAD             ^TAIL
 *
 *  record:
 *   0               4               8
 *   +---------------+---------------+------------------------------+-------+
 *   | kind<<29|len  | total         | payload (len bytes)          | to 8  |
 *   +---------------+---------------+------------------------------+-------+
 *   record bytes = align8(8 + len); header words in native byte order
 *   kind  WHOLE  a whole frame in one record              total = 0
 *         FIRST  first chunk of a frame > MAX_FRAME bytes   total = frame length
 *         MORE   a middle chunk                            total = 0
 *         LAST   the last chunk: the reader delivers the reassembled frame
 *         PAD    nothing more fits before the end of the region: the reader
 *                skips to offset 0 (written in the same publication as the
 *                record that follows it, so a reader never waits on a PAD)
 * ```
 * Kind 0 is never written, so zeroed or torn memory reads as corrupt.
 * Why MAX_FRAME ≤ capacity/2 − 8: a record of `r` bytes that does not fit
 * before the end costs the `toEnd < r` bytes of padding plus `r`, i.e. < 2r ≤
 * capacity, so every record fits once the consumer has emptied the ring; the
 * producer's backlog therefore always drains.
 */
import { Buffer } from 'node:buffer';

/** Control-block field indices (Int32Array elements). */
export const RingField = {
  Version: 0,
  Capacity: 1,
  MaxFrame: 2,
  Writer: 3,
  Reader: 4,
  Tail: 16,
  Head: 32,
  ProducerWaiting: 33,
} as const;

/** Record kinds (top 3 bits of a record's first header word). */
export const RecordKind = {
  Whole: 1,
  First: 2,
  More: 3,
  Last: 4,
  Pad: 5,
} as const;

/** Bytes of the control block: three 64-byte cache lines. */
export const CONTROL_BYTES = 192;
/** Bytes of a record header; also the record alignment. */
export const HEADER_BYTES = 8;
/** Shift of the kind within a record's first header word. */
export const KIND_SHIFT = 29;
/** Mask of the payload length within a record's first header word. */
export const LEN_MASK = (1 << KIND_SHIFT) - 1;
/** Smallest ring capacity in bytes. */
export const MIN_CAPACITY = 4096;
/** Largest ring capacity in bytes (keeps positions' distance exact in 32 bits and lengths in 29). */
export const MAX_CAPACITY = 1 << 28;
/** Smallest allowed `maxFrameBytes` (smaller would make chunking loops long for nothing). */
export const MIN_MAX_FRAME = 64;

const LAYOUT_VERSION = 1;

/**
 * The shared memory of one ring: a plain object of SharedArrayBuffers, so it
 * survives structured clone (`workerData`, `postMessage`) with both sides
 * seeing the same bytes.
 */
export interface RingMemory {
  /** The control block (see the layout above). */
  readonly control: SharedArrayBuffer;
  /** The data region (`capacity` bytes). */
  readonly data: SharedArrayBuffer;
}

/** Options of {@link createRing}. */
export interface RingOptions {
  /**
   * Largest frame payload written as one record; larger frames are split into
   * FIRST/MORE/LAST chunks of at most this size and reassembled by the reader.
   * Default `capacity / 4`; at least 64, at most `capacity / 2 - 8`.
   */
  maxFrameBytes?: number;
}

/** Record bytes (header + payload, 8-aligned) of a `len`-byte payload. */
export function recordBytes(len: number): number {
  return (len + HEADER_BYTES + 7) & ~7;
}

/** Largest valid `maxFrameBytes` for a capacity (see the layout comment). */
function maxFrameLimit(capacity: number): number {
  return capacity / 2 - HEADER_BYTES;
}

/**
 * Allocates a ring of `capacityBytes` (a power of two, 4 KiB … 256 MiB).
 * Throws a `RangeError` naming the bad value otherwise.
 */
export function createRing(capacityBytes: number, options: RingOptions = {}): RingMemory {
  if (!Number.isInteger(capacityBytes) || capacityBytes < MIN_CAPACITY || capacityBytes > MAX_CAPACITY || (capacityBytes & (capacityBytes - 1)) !== 0) {
    throw new RangeError(`ring capacity must be a power of two from ${MIN_CAPACITY} to ${MAX_CAPACITY} bytes, got ${String(capacityBytes)}`);
  }
  const maxFrame = options.maxFrameBytes ?? capacityBytes / 4;
  if (!Number.isInteger(maxFrame) || maxFrame < MIN_MAX_FRAME || maxFrame > maxFrameLimit(capacityBytes)) {
    throw new RangeError(`ring maxFrameBytes must be an integer from ${MIN_MAX_FRAME} to ${maxFrameLimit(capacityBytes)} (capacity / 2 - 8) for capacity ${capacityBytes}, got ${String(maxFrame)}`);
  }
  const control = new SharedArrayBuffer(CONTROL_BYTES);
  const ctl = new Int32Array(control);
  ctl[RingField.Version] = LAYOUT_VERSION;
  ctl[RingField.Capacity] = capacityBytes;
  ctl[RingField.MaxFrame] = maxFrame;
  // The memory reaches the other thread by postMessage/workerData, which orders these plain writes before it.
  return { control, data: new SharedArrayBuffer(capacityBytes) };
}

/** A validated ring attachment: the views both sides work on. */
export interface RingViews {
  ctl: Int32Array;
  data32: Int32Array;
  bytes: Buffer;
  capacity: number;
  mask: number;
  maxFrame: number;
}

/**
 * Validates `memory` (it crossed a thread boundary) and claims the `role`
 * field (WRITER or READER) so a second producer or consumer on the same ring
 * fails loudly instead of corrupting it. Release with {@link releaseRole}.
 */
export function attachRing(memory: RingMemory, role: typeof RingField.Writer | typeof RingField.Reader): RingViews {
  const { control, data } = memory ?? ({} as Partial<RingMemory>);
  if (!(control instanceof SharedArrayBuffer) || !(data instanceof SharedArrayBuffer)) {
    throw new TypeError('ring memory must be { control: SharedArrayBuffer, data: SharedArrayBuffer } as returned by createRing()');
  }
  if (control.byteLength !== CONTROL_BYTES) throw new RangeError(`ring control block must be ${CONTROL_BYTES} bytes, got ${control.byteLength}`);
  const ctl = new Int32Array(control);
  const version = Atomics.load(ctl, RingField.Version);
  if (version !== LAYOUT_VERSION) throw new RangeError(`ring layout version ${version} is not ${LAYOUT_VERSION}`);
  const capacity = Atomics.load(ctl, RingField.Capacity);
  const maxFrame = Atomics.load(ctl, RingField.MaxFrame);
  if (data.byteLength !== capacity) throw new RangeError(`ring data region is ${data.byteLength} bytes but the control block says ${capacity}`);
  if (Atomics.compareExchange(ctl, role, 0, 1) !== 0) {
    throw new Error(`ring already has a ${role === RingField.Writer ? 'writer' : 'reader'} (single producer, single consumer)`);
  }
  return { ctl, data32: new Int32Array(data), bytes: Buffer.from(data), capacity, mask: capacity - 1, maxFrame };
}

/** Releases a role claimed by {@link attachRing}. */
export function releaseRole(ctl: Int32Array, role: typeof RingField.Writer | typeof RingField.Reader): void {
  Atomics.store(ctl, role, 0);
}

/** `Atomics.waitAsync` (Node ≥ 16; not in the ES2023 lib this project compiles against). */
export type WaitAsyncResult = { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
/** `Atomics` with `waitAsync` typed. */
export const atomics = Atomics as Atomics & { waitAsync(array: Int32Array, index: number, value: number): WaitAsyncResult };

/**
 * How many times a side re-drains synchronously when `waitAsync` reports
 * `not-equal` (the other side moved while we worked) before it yields to the
 * event loop with `setImmediate`, so a peer that never pauses cannot starve
 * this thread's I/O.
 */
export const SYNC_ROUNDS = 8;
