import { describe, expect, it } from 'vitest';
import { fnv1a, shardFor } from '../../../src/shared/route-hash.js';

describe('fnv1a', () => {
  it('matches the published FNV-1a 32-bit test vectors', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
    expect(fnv1a('foobar')).toBe(0xbf9cf968);
  });

  it('is an unsigned 32-bit integer', () => {
    for (const key of ['core', 'process', 'information', 'x'.repeat(63)]) {
      const h = fnv1a(key);
      expect(Number.isInteger(h)).toBe(true);
      expect(h).toBeGreaterThanOrEqual(0);
      expect(h).toBeLessThanOrEqual(0xffffffff);
    }
  });
});

describe('shardFor', () => {
  it('is the hash modulo the shard count, stable across calls', () => {
    for (const key of ['core', 'process', 'information', 'demo']) {
      for (const n of [1, 2, 3, 8, 256]) {
        expect(shardFor(key, n)).toBe(fnv1a(key) % n);
        expect(shardFor(key, n)).toBe(shardFor(key, n));
      }
    }
    expect(shardFor('a', 7)).toBe(0xe40c292c % 7);
  });

  it('puts every route on shard 0 when there is one shard', () => {
    expect(['core', 'process', 'information'].map((k) => shardFor(k, 1))).toEqual([0, 0, 0]);
  });

  it('spreads many route keys over every shard', () => {
    for (const shards of [2, 3, 4, 8]) {
      const counts = new Array<number>(shards).fill(0);
      for (let i = 0; i < 4000; i++) {
        const s = shardFor(`route-${i}`, shards);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThan(shards);
        counts[s] = (counts[s] ?? 0) + 1;
      }
      const expected = 4000 / shards;
      // Deterministic input, so this is not flaky: each shard within ±25% of a fair share.
      for (const c of counts) {
        expect(c).toBeGreaterThan(expected * 0.75);
        expect(c).toBeLessThan(expected * 1.25);
      }
    }
  });
});
