/**
 * Single-producer/single-consumer byte ring over SharedArrayBuffer: the
 * acceptor ↔ shard hand-off carries bytes only, one ring per direction per
 * (acceptor, shard) pair; the MessagePort stays for control messages.
 *
 * ```
 *  producer thread                      shared memory                     consumer thread
 *  ───────────────                      ─────────────                     ───────────────
 *  off = w.reserve(len)  ──encode──▶  data: | rec | rec | ... |       r = new RingReader(mem, onFrame)
 *  w.buf.writeUInt32LE(…, off)         control: TAIL HEAD WAITING      onFrame(buf, off, len)  (sync;
 *  w.commit()  ─ store TAIL ─notify─▶  (empty → non-empty only)        view valid only in the call)
 *  backlog (heap, bounded) ◀─notify── HEAD moved, if WAITING ─────────  released after the callback
 * ```
 * `createRing()` allocates the memory (send it in `workerData` or a message);
 * each side attaches with `new RingWriter(memory)` / `new RingReader(memory,
 * onFrame)`. Layout and record format: `ring-layout.ts`.
 *
 * This file is the public entry point only: the layout, the writer and the
 * reader live in their own modules so each stays small.
 */
export { createRing, RingField, type RingMemory, type RingOptions } from './ring-layout.js';
export { RING_REFUSED, RingWriter, type RingWriterOptions, type RingWriterStats } from './ring-writer.js';
export { RingReader, type RingFrameHandler, type RingReaderOptions } from './ring-reader.js';
