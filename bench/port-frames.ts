/**
 * Frames over a MessagePort, batched per event-loop turn: every frame
 * committed in one turn travels in one transferred ArrayBuffer. This is the
 * hand-off the gateway used before its shared-memory rings
 * (src/shared/threads/ring.ts); `bench/hop.ts` measures both side by side.
 *
 * Batch layout: `[u32 frameLength][frame bytes]…`, little-endian.
 */
import type { MessagePort } from 'node:worker_threads';
import type { FrameSink } from '../src/shared/threads/call-frames.js';

/** Called for every frame with a view valid only during the call. */
export type FrameHandler = (buf: Buffer, offset: number, length: number) => void;

const INITIAL_BYTES = 16 * 1024;

/** Producer end: reserve/commit into a batch, flushed once per turn. */
export class PortFrameWriter implements FrameSink {
  buf = Buffer.allocUnsafe(INITIAL_BYTES);
  private length = 0;
  private reserved = 0;
  private scheduled = false;
  private closed = false;

  constructor(private readonly port: MessagePort) {}

  reserve(length: number): number {
    if (this.closed) return -1;
    const need = this.length + 4 + length;
    if (need > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(next, 0, 0, this.length);
      this.buf = next;
    }
    this.reserved = length;
    return this.length + 4;
  }

  commit(): void {
    this.buf.writeUInt32LE(this.reserved, this.length);
    this.length += 4 + this.reserved;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Stops sending; frames not flushed yet are dropped (the peer is gone or being replaced). */
  close(): void {
    this.closed = true;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.closed || this.length === 0) return;
    const ab = this.buf.buffer.slice(this.buf.byteOffset, this.buf.byteOffset + this.length);
    this.port.postMessage(ab, [ab]);
    this.length = 0;
  };
}

/** Consumer end: unpacks every batch and hands each frame to `onFrame`. */
export class PortFrameReader {
  private readonly listener = (ab: ArrayBuffer): void => {
    const buf = Buffer.from(ab);
    let o = 0;
    while (o + 4 <= buf.length) {
      const n = buf.readUInt32LE(o);
      this.onFrame(buf, o + 4, n);
      o += 4 + n;
    }
  };

  constructor(
    private readonly port: MessagePort,
    private readonly onFrame: FrameHandler,
  ) {
    port.on('message', this.listener);
  }

  /** Stops reading (the port itself belongs to whoever created it). */
  close(): void {
    this.port.off('message', this.listener);
  }
}
