/**
 * The SPSC ring on one thread: record placement (alignment, wrap, padding),
 * continuation chunks, the backlog (order, bound at and past its edge), the
 * view-validity contract, validation errors, and the reader's waiting and
 * closing. The two-thread behaviour is in test/integration/ring-threads.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createRing, RING_REFUSED, RingField, RingReader, RingWriter, type RingMemory } from '../../../../src/shared/threads/ring.js';

const open: Array<{ close(): void }> = [];
afterEach(() => {
  for (const x of open.splice(0)) x.close();
});

function writer(ring: RingMemory, maxBacklogBytes = Infinity): RingWriter {
  const w = new RingWriter(ring, { maxBacklogBytes });
  open.push(w);
  return w;
}

/** A drain-only reader that copies every frame (and remembers where it was delivered). */
function collector(ring: RingMemory): { reader: RingReader; frames: Buffer[]; offsets: number[] } {
  const frames: Buffer[] = [];
  const offsets: number[] = [];
  const reader = new RingReader(
    ring,
    (buf, off, len) => {
      frames.push(Buffer.from(buf.subarray(off, off + len)));
      offsets.push(off);
    },
    { wait: false },
  );
  open.push(reader);
  return { reader, frames, offsets };
}

/** Frame `i` of `len` bytes: a recognisable pattern. */
function frameBytes(i: number, len: number): Buffer {
  const b = Buffer.allocUnsafe(len);
  for (let j = 0; j < len; j++) b[j] = (i * 31 + j * 7) & 0xff;
  return b;
}

/** Writes frame `i` of `len` bytes; returns the reserve() result. */
function send(w: RingWriter, i: number, len: number): number {
  const off = w.reserve(len);
  if (off === RING_REFUSED) return off;
  frameBytes(i, len).copy(w.buf, off);
  w.commit();
  return off;
}

/** Lets the writer's waitAsync callbacks run, draining until `done()` (bounded). */
async function settle(reader: RingReader, done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) {
    reader.drain();
    await new Promise((r) => setTimeout(r, 1));
  }
  expect(done()).toBe(true);
}

const ctl = (ring: RingMemory): Int32Array => new Int32Array(ring.control);

describe('createRing and attaching', () => {
  it.each([
    [2048, /power of two from 4096/],
    [4095, /power of two/],
    [5000, /power of two/],
    [4096.5, /power of two/],
    [2 ** 29, /to 268435456 bytes/],
    [Number.NaN, /got NaN/],
  ])('refuses capacity %s', (capacity, message) => {
    expect(() => createRing(capacity)).toThrow(RangeError);
    expect(() => createRing(capacity)).toThrow(message);
  });

  it('accepts the capacity and maxFrameBytes edges and refuses past them', () => {
    expect(createRing(4096).data.byteLength).toBe(4096);
    expect(createRing(2 ** 28, { maxFrameBytes: 64 }).data.byteLength).toBe(2 ** 28);
    expect(() => createRing(4096, { maxFrameBytes: 2040 })).not.toThrow();
    expect(() => createRing(4096, { maxFrameBytes: 2041 })).toThrow(/maxFrameBytes must be an integer from 64 to 2040/);
    expect(() => createRing(4096, { maxFrameBytes: 63 })).toThrow(RangeError);
    expect(() => createRing(4096, { maxFrameBytes: 100.5 })).toThrow(RangeError);
  });

  it('is a plain object of SharedArrayBuffers that survives structured clone with shared bytes', () => {
    const ring = createRing(4096);
    const copy = structuredClone(ring);
    ctl(copy)[RingField.Tail] = 123;
    expect(ctl(ring)[RingField.Tail]).toBe(123);
  });

  it('refuses memory that is not a ring, with a specific error', () => {
    expect(() => new RingWriter({} as RingMemory)).toThrow(TypeError);
    expect(() => new RingReader({ control: new SharedArrayBuffer(64), data: new SharedArrayBuffer(4096) }, () => undefined)).toThrow(/control block must be 192 bytes/);
    const ring = createRing(4096);
    expect(() => new RingWriter({ control: ring.control, data: new SharedArrayBuffer(8192) })).toThrow(/data region is 8192 bytes but the control block says 4096/);
    expect(() => new RingWriter({ control: new SharedArrayBuffer(192), data: ring.data })).toThrow(/layout version 0/);
  });

  it('admits one writer and one reader at a time; close() lets another attach', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    expect(() => new RingWriter(ring)).toThrow(/already has a writer/);
    const { reader } = collector(ring);
    expect(() => new RingReader(ring, () => undefined)).toThrow(/already has a reader/);
    w.close();
    reader.close();
    expect(() => writer(ring)).not.toThrow();
    expect(() => collector(ring)).not.toThrow();
  });

  it('refuses bad options and misuse with clear errors', () => {
    const ring = createRing(4096);
    expect(() => new RingWriter(ring, { maxBacklogBytes: -1 })).toThrow(/maxBacklogBytes/);
    expect(() => new RingWriter(ring, { maxBacklogBytes: 1.5 })).toThrow(/maxBacklogBytes/);
    const w = writer(ring);
    expect(() => w.reserve(-1)).toThrow(RangeError);
    expect(() => w.reserve(1.5)).toThrow(RangeError);
    expect(() => w.reserve(2 ** 32)).toThrow(RangeError);
    expect(() => w.commit()).toThrow(/nothing is reserved/);
    w.reserve(10);
    expect(() => w.reserve(10)).toThrow(/neither committed nor cancelled/);
    expect(() => w.commit(11)).toThrow(/from 0 to the reserved 10/);
    w.cancel();
    expect(w.reserve(10)).toBeGreaterThanOrEqual(0);
    w.close();
    expect(() => w.reserve(1)).toThrow(/closed/);
  });
});

describe('frames through the ring', () => {
  it('round-trips frames of every interesting size, 8-aligned, chunking those above maxFrameBytes', async () => {
    const ring = createRing(4096, { maxFrameBytes: 1024 });
    const w = writer(ring);
    const { reader, frames, offsets } = collector(ring);
    const sizes = [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 1023, 1024, 1025, 2048, 3 * 1024 + 5, 4096, 5 * 4096 + 3];
    const ringOffsets: number[] = [];
    sizes.forEach((len, i) => {
      const off = send(w, i, len);
      reader.drain();
      if (len <= 1024) ringOffsets.push(off);
    });
    // Frames bigger than the ring arrive as the reader frees space and the writer, woken, writes more chunks.
    await settle(reader, () => frames.length === sizes.length);
    expect(frames.map((f) => f.length)).toEqual(sizes);
    frames.forEach((f, i) => {
      expect(f.equals(frameBytes(i, sizes[i] as number))).toBe(true);
    });
    for (const off of ringOffsets) expect(off % 8).toBe(0);
    for (const [i, off] of offsets.entries()) if ((sizes[i] as number) <= 1024) expect(off % 8).toBe(0);
    expect(w.stats).toMatchObject({ framesWritten: sizes.length, bytesWritten: sizes.reduce((a, b) => a + b, 0), backlogBytes: 0, refused: 0 });
  });

  it('fills exactly the space left before the end without padding, and pads when one more byte would not fit', () => {
    const ring = createRing(4096, { maxFrameBytes: 2040 });
    const w = writer(ring);
    const { reader, frames, offsets } = collector(ring);
    const sizes: number[] = [];
    const put = (len: number): number => {
      sizes.push(len);
      const off = send(w, sizes.length - 1, len);
      reader.drain();
      return off;
    };
    // 2048 + 1016 bytes of records: the tail is at 3064, 1032 bytes before the end.
    put(2040);
    put(1008);
    expect(put(1024)).toBe(3064 + 8); // a 1032-byte record ends exactly at the end: no padding
    expect(put(0)).toBe(8); // the next record starts at offset 0
    put(2040);
    put(1000); // the tail is at 3064 again
    expect(put(1025)).toBe(8); // a 1040-byte record does not fit in 1032: PAD, then offset 0
    expect(frames.map((f) => f.length)).toEqual(sizes);
    frames.forEach((f, i) => {
      expect(f.equals(frameBytes(i, f.length))).toBe(true);
    });
    expect(offsets).toEqual([8, 2056, 3072, 8, 16, 2064, 8]);
  });

  it('keeps working when the 32-bit positions wrap around', () => {
    const ring = createRing(4096);
    const c = ctl(ring);
    c[RingField.Tail] = -40; // 2^32 - 40 as an int32: wraps within the first frames
    c[RingField.Head] = -40;
    const w = writer(ring);
    const { reader, frames } = collector(ring);
    for (let i = 0; i < 200; i++) {
      send(w, i, (i * 37) % 900);
      if (i % 3 === 0) reader.drain();
    }
    reader.drain();
    expect(frames).toHaveLength(200);
    frames.forEach((f, i) => {
      expect(f.equals(frameBytes(i, (i * 37) % 900))).toBe(true);
    });
    expect(c[RingField.Tail]).toBeGreaterThan(0);
  });

  it('data stays correct when the producer reuses released space; a view kept past the callback does not', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    let kept: { buf: Buffer; off: number; len: number } | undefined;
    const copies: Buffer[] = [];
    const reader = new RingReader(
      ring,
      (buf, off, len) => {
        kept ??= { buf, off, len }; // breaks the contract on purpose: keeps the view
        copies.push(Buffer.from(buf.subarray(off, off + len))); // honours it: copies during the call
      },
      { wait: false },
    );
    open.push(reader);
    send(w, 0, 1000);
    reader.drain();
    // The producer wraps around and overwrites the released bytes several times.
    for (let i = 1; i <= 20; i++) {
      send(w, i, 1000);
      reader.drain();
    }
    copies.forEach((c, i) => {
      expect(c.equals(frameBytes(i, 1000))).toBe(true);
    });
    const k = kept as { buf: Buffer; off: number; len: number };
    expect(k.buf.subarray(k.off, k.off + k.len).equals(frameBytes(0, 1000))).toBe(false);
  });

  it('commit(length) publishes a shorter frame than reserved (worst-case UTF-8 reservation)', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const { reader, frames } = collector(ring);
    const text = 'héllo → wörld';
    const off = w.reserve(text.length * 3);
    const n = w.buf.write(text, off, 'utf8');
    w.commit(n);
    send(w, 1, 5);
    reader.drain();
    expect(frames.map((f) => f.toString('utf8'))).toEqual([text, frameBytes(1, 5).toString('utf8')]);
  });

  it('a cancelled reservation publishes nothing', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const { reader, frames } = collector(ring);
    w.reserve(100);
    w.cancel();
    expect(reader.drain()).toBe(0);
    send(w, 0, 3);
    reader.drain();
    expect(frames).toHaveLength(1);
  });
});

describe('backlog', () => {
  it('keeps order: once a backlog exists, even a frame that would fit queues behind it', async () => {
    const ring = createRing(4096, { maxFrameBytes: 1024 });
    const w = writer(ring);
    const { reader, frames } = collector(ring);
    // Four 1000-byte records (1008 each) leave 64 bytes: a 1020-byte frame does not fit, a 10-byte one would.
    for (let i = 0; i < 4; i++) send(w, i, 1000);
    expect(send(w, 4, 1020)).toBe(0); // offset 0 of a heap Buffer: backlogged
    send(w, 5, 1000);
    expect(w.stats.backlogFrames).toBe(2);
    expect(send(w, 6, 10)).toBe(0); // would fit in the ring, but queues behind the backlog
    expect(w.stats).toMatchObject({ backlogFrames: 3, backlogBytes: 2030, backlogged: 3, framesWritten: 4 });
    await settle(reader, () => frames.length === 7);
    expect(frames.map((f) => f.length)).toEqual([1000, 1000, 1000, 1000, 1020, 1000, 10]);
    frames.forEach((f, i) => {
      expect(f.equals(frameBytes(i, f.length))).toBe(true);
    });
    expect(w.stats).toMatchObject({ backlogFrames: 0, backlogBytes: 0, framesWritten: 7 });
    await settle(reader, () => Atomics.load(ctl(ring), RingField.ProducerWaiting) === 0);
  });

  it('drains the backlog into the ring without any further reserve() (the reader wakes the writer)', async () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const { reader, frames } = collector(ring);
    for (let i = 0; i < 40; i++) send(w, i, 500 + i);
    expect(w.stats.backlogFrames).toBeGreaterThan(30);
    await settle(reader, () => frames.length === 40);
    frames.forEach((f, i) => {
      expect(f.equals(frameBytes(i, 500 + i))).toBe(true);
    });
  });

  it('accepts a frame that brings the backlog exactly to maxBacklogBytes and refuses one byte more, writing nothing', () => {
    const ring = createRing(4096);
    const w = writer(ring, 1500);
    const { reader, frames } = collector(ring);
    for (let i = 0; i < 4; i++) send(w, i, 1000); // 4 × 1008 = 4032 bytes of 4096: full for a 1000-byte frame
    expect(send(w, 4, 1000)).toBe(0); // backlog 1000
    expect(send(w, 5, 500)).toBe(0); // backlog 1500: at the bound
    const dataBefore = Buffer.from(Buffer.from(ring.data));
    const tailBefore = ctl(ring)[RingField.Tail];
    expect(w.reserve(1)).toBe(RING_REFUSED);
    expect(w.reserve(0)).toBe(0); // a 0-byte frame adds nothing to the backlog
    w.cancel();
    expect(w.stats).toMatchObject({ refused: 1, backlogBytes: 1500, backlogFrames: 2 });
    expect(Buffer.from(ring.data).equals(dataBefore)).toBe(true);
    expect(ctl(ring)[RingField.Tail]).toBe(tailBefore);
    for (let k = 0; k < 10; k++) reader.drain();
    expect(frames.map((f) => f.length)).toEqual([1000, 1000, 1000, 1000]);
  });

  it('maxBacklogBytes 0 refuses whenever the ring is full; Infinity never refuses', () => {
    const none = createRing(4096);
    const w0 = writer(none, 0);
    for (let i = 0; i < 4; i++) expect(send(w0, i, 1000)).toBeGreaterThanOrEqual(0);
    expect(send(w0, 4, 1000)).toBe(RING_REFUSED);
    const unbounded = createRing(4096);
    const wi = writer(unbounded, Infinity);
    for (let i = 0; i < 100; i++) expect(send(wi, i, 1000)).toBeGreaterThanOrEqual(0);
    expect(wi.stats.backlogBytes).toBe(96 * 1000);
  });

  it("close() drops the backlog and removes the writer's wait on HEAD", async () => {
    const ring = createRing(4096);
    const w = new RingWriter(ring, { maxBacklogBytes: Infinity });
    for (let i = 0; i < 6; i++) send(w, i, 1000); // 4 in the ring, 2 backlogged: the writer waits on HEAD
    expect(Atomics.load(ctl(ring), RingField.ProducerWaiting)).toBe(1);
    expect(Atomics.notify(ctl(ring), RingField.Head)).toBe(1); // it is a registered waiter; woken, it re-arms (still no space)
    await new Promise((r) => setTimeout(r, 5));
    w.close();
    expect(Atomics.notify(ctl(ring), RingField.Head)).toBe(0);
    expect(Atomics.load(ctl(ring), RingField.ProducerWaiting)).toBe(0);
    expect(w.stats).toMatchObject({ backlogBytes: 0, backlogFrames: 0, framesWritten: 4 });
    const { reader, frames } = collector(ring);
    reader.drain();
    expect(frames).toHaveLength(4); // what was in the ring stays readable
  });

  it('counts only the part of an oversized frame that cannot enter the ring now against the bound', () => {
    // Capacity 4096, chunks of 1024 (1032-byte records): 3 chunks (3072 bytes) fit in an empty ring.
    const accept = createRing(4096, { maxFrameBytes: 1024 });
    const wa = writer(accept, 5000 - 3072);
    expect(send(wa, 0, 5000)).toBe(0);
    expect(wa.stats).toMatchObject({ backlogBytes: 5000 - 3072, bytesWritten: 3072, backlogged: 1 });
    const refuse = createRing(4096, { maxFrameBytes: 1024 });
    const wr = writer(refuse, 5000 - 3072 - 1);
    expect(send(wr, 0, 5000)).toBe(RING_REFUSED);
    expect(wr.stats).toMatchObject({ refused: 1, bytesWritten: 0, backlogBytes: 0 });
    expect(ctl(refuse)[RingField.Tail]).toBe(0);
    // A chunked frame that fits whole is not "backlogged".
    const fits = createRing(4096, { maxFrameBytes: 1024 });
    const wf = writer(fits, 0);
    expect(send(wf, 0, 3000)).toBe(0);
    expect(wf.stats).toMatchObject({ backlogged: 0, framesWritten: 1, bytesWritten: 3000 });
  });
});

describe('reader', () => {
  it('waits with Atomics.waitAsync and delivers frames as they are published', async () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const got: number[] = [];
    const reader = new RingReader(ring, (buf, off) => got.push(buf.readUInt32LE(off)));
    open.push(reader);
    for (let round = 0; round < 20; round++) {
      const off = w.reserve(4);
      w.buf.writeUInt32LE(round, off);
      w.commit();
      await settleWaiting(() => got.length === round + 1);
    }
    expect(got).toEqual([...Array(20).keys()]);
  });

  it('close() removes its pending waiter (a stale one would swallow notify(…, 1)) and stops delivery', async () => {
    const ring = createRing(4096);
    const reader = new RingReader(ring, () => undefined);
    await new Promise((r) => setImmediate(r));
    reader.close();
    expect(Atomics.notify(ctl(ring), RingField.Tail)).toBe(0);
    expect(reader.isClosed).toBe(true);
    expect(reader.drain()).toBe(0);
  });

  it('an armed reader is a registered waiter until closed', async () => {
    const ring = createRing(4096);
    const reader = new RingReader(ring, () => undefined);
    open.push(reader);
    await new Promise((r) => setImmediate(r));
    expect(Atomics.notify(ctl(ring), RingField.Tail)).toBe(1); // wakes it; it re-arms
    await new Promise((r) => setTimeout(r, 5));
    reader.close();
    expect(Atomics.notify(ctl(ring), RingField.Tail)).toBe(0);
  });

  it('close() inside onFrame stops after that frame; a new reader continues with the next', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const seen: number[] = [];
    const first: RingReader = new RingReader(
      ring,
      (buf, off) => {
        seen.push(buf[off] as number);
        first.close();
      },
      { wait: false },
    );
    for (let i = 0; i < 3; i++) send(w, i, 1);
    expect(first.drain()).toBe(1);
    const { reader, frames } = collector(ring);
    reader.drain();
    expect([...seen, ...frames.map((f) => f[0])]).toEqual([0, 1, 2].map((i) => frameBytes(i, 1)[0]));
  });

  it('a throwing onFrame consumes its frame; the error reaches drain() and the next drain continues', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const seen: number[] = [];
    const reader = new RingReader(
      ring,
      (_buf, _off, len) => {
        seen.push(len);
        if (len === 2) throw new Error('handler bug');
      },
      { wait: false },
    );
    open.push(reader);
    for (const len of [1, 2, 3]) send(w, 0, len);
    expect(() => reader.drain()).toThrow('handler bug');
    expect(reader.drain()).toBe(1);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('drain() called from inside onFrame delivers nothing (no out-of-order re-entry)', () => {
    const ring = createRing(4096);
    const w = writer(ring);
    const nested: number[] = [];
    const seen: number[] = [];
    const reader: RingReader = new RingReader(
      ring,
      (_buf, _off, len) => {
        seen.push(len);
        nested.push(reader.drain());
      },
      { wait: false },
    );
    open.push(reader);
    for (const len of [1, 2, 3]) send(w, 0, len);
    expect(reader.drain()).toBe(3);
    expect(seen).toEqual([1, 2, 3]);
    expect(nested).toEqual([0, 0, 0]);
  });

  it('a corrupt record is reported as such and closes the reader', () => {
    const ring = createRing(4096);
    const { reader } = collector(ring);
    new Int32Array(ring.data)[0] = 0; // kind 0 is never written
    Atomics.store(ctl(ring), RingField.Tail, 8);
    expect(() => reader.drain()).toThrow(/ring corrupt/);
    expect(reader.isClosed).toBe(true);
  });

  it('a continuation chunk without its FIRST chunk is corrupt', () => {
    const ring = createRing(4096);
    const { reader } = collector(ring);
    new Int32Array(ring.data)[0] = (4 << 29) | 8; // LAST, 8 bytes
    Atomics.store(ctl(ring), RingField.Tail, 16);
    expect(() => reader.drain()).toThrow(/continuation chunk without a FIRST chunk/);
  });
});

async function settleWaiting(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(done()).toBe(true);
}
