/**
 * Randomized, seeded (reproducible) interleavings of write / shorter commit /
 * cancel / refusal / drain / event-loop turn on one thread, over random ring
 * shapes and backlog bounds. Properties checked after every step: what the
 * reader delivered is a prefix of what the writer accepted, byte for byte; a
 * refused frame is neither queued nor delivered and only happens past the
 * bound; the backlog never exceeds its bound.
 * At the end everything accepted is delivered.
 *
 * Reproduce one case: `RING_SEED=17 npx vitest run test/unit/shared/threads/ring.property.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { createRing, RING_REFUSED, RingReader, RingWriter } from '../../../../src/shared/threads/ring.js';

const SEEDS = process.env['RING_SEED'] !== undefined ? [Number(process.env['RING_SEED'])] : Array.from({ length: 60 }, (_, i) => i + 1);
const STEPS = 400;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;

/** Sizes that stress the edges: 0, alignment neighbours, max-frame neighbours, multiples of the ring. */
function size(rnd: () => number, maxFrame: number, capacity: number): number {
  const x = rnd();
  if (x < 0.1) return pick(rnd, [0, 1, 7, 8, 9, 15, 16, 17]);
  if (x < 0.2) return maxFrame + pick(rnd, [-1, 0, 1]);
  if (x < 0.75) return Math.floor(rnd() * 200);
  if (x < 0.95) return Math.floor(rnd() * (maxFrame + 1));
  return Math.floor(rnd() * 3 * capacity);
}

async function runCase(seed: number): Promise<void> {
  const rnd = mulberry32(seed);
  const capacity = pick(rnd, [4096, 8192]);
  const maxFrameBytes = pick(rnd, [64, 256, capacity / 4, capacity / 2 - 8]);
  const maxBacklogBytes = pick(rnd, [0, 100, 5000, 3 * capacity, Infinity]);
  const ring = createRing(capacity, { maxFrameBytes });
  const w = new RingWriter(ring, { maxBacklogBytes });
  const accepted: Buffer[] = [];
  let delivered = 0;
  let mismatch: string | null = null;
  const r = new RingReader(
    ring,
    (buf, off, len) => {
      const want = accepted[delivered];
      if (mismatch === null && (want === undefined || !want.equals(buf.subarray(off, off + len)))) {
        mismatch = `seed ${seed}: frame ${delivered} (${len} bytes) is not the accepted ${want?.length ?? 'none'}-byte frame`;
      }
      delivered++;
    },
    { wait: false },
  );
  try {
    for (let step = 0; step < STEPS; step++) {
      const x = rnd();
      if (x < 0.6) {
        const len = size(rnd, maxFrameBytes, capacity);
        const { backlogBytes, backlogFrames, refused } = w.stats;
        const off = w.reserve(len);
        if (off === RING_REFUSED) {
          // The refused frame is neither queued nor written (reserve() may still have moved older backlog into the ring).
          const where = `seed ${seed} step ${step}`;
          expect(w.stats.refused, where).toBe(refused + 1);
          expect(w.stats.backlogBytes, where).toBeLessThanOrEqual(backlogBytes);
          expect(w.stats.backlogFrames, where).toBeLessThanOrEqual(backlogFrames);
          expect(w.stats.backlogBytes + len, where).toBeGreaterThan(maxBacklogBytes);
          continue;
        }
        const y = rnd();
        if (y < 0.05) {
          w.cancel();
          continue;
        }
        const actual = y < 0.15 ? Math.floor(rnd() * (len + 1)) : len;
        const bytes = Buffer.allocUnsafe(actual);
        for (let i = 0; i < actual; i++) bytes[i] = Math.floor(rnd() * 256);
        bytes.copy(w.buf, off);
        w.commit(actual);
        accepted.push(bytes);
      } else if (x < 0.85) {
        r.drain();
      } else {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(mismatch).toBe(null);
      expect(delivered, `seed ${seed} step ${step}`).toBeLessThanOrEqual(accepted.length);
      expect(w.stats.backlogBytes, `seed ${seed} step ${step}`).toBeLessThanOrEqual(maxBacklogBytes);
    }
    for (let i = 0; i < 2000 && delivered < accepted.length; i++) {
      r.drain();
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    expect(mismatch).toBe(null);
    expect(delivered, `seed ${seed}: everything accepted is delivered`).toBe(accepted.length);
    expect(w.stats).toMatchObject({ framesWritten: accepted.length, backlogBytes: 0, backlogFrames: 0 });
  } finally {
    r.close();
    w.close();
  }
}

describe('ring, randomized interleavings on one thread', () => {
  it(`holds its properties for ${SEEDS.length} seeded cases of ${STEPS} steps`, async () => {
    for (const seed of SEEDS) await runCase(seed);
  }, 60_000);
});
