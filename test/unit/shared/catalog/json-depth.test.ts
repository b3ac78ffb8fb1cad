/** Nesting depth of parsed JSON: at and past the limit, and the pointer a refusal names. */
import { describe, expect, it } from 'vitest';
import { deeperThan } from '../../../../src/shared/catalog/json-depth.js';

/** `{"a":{"a":…{"a":leaf}}}` with `levels` objects. */
function nested(levels: number, leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

describe('deeperThan', () => {
  it('is null for primitives and for values within the limit, however wide', () => {
    expect(deeperThan(7, 0)).toBeNull();
    expect(deeperThan('x', 3)).toBeNull();
    expect(deeperThan(nested(3), 3)).toBeNull(); // objects at levels 0–2
    const wide = { list: Array.from({ length: 5000 }, (_, i) => ({ i, tags: ['a', 'b'] })) }; // tags arrays at level 3
    expect(deeperThan(wide, 4)).toBeNull();
    expect(deeperThan(wide, 3)).toMatch(/^\/list\/\d+\/tags$/);
  });

  it('names the first object or array at the limit, as a JSON pointer', () => {
    expect(deeperThan(nested(4), 3)).toBe('/a/a/a');
    expect(deeperThan({}, 0)).toBe('/');
    expect(deeperThan({ x: [1, [2, [3]]] }, 3)).toBe('/x/1/1');
  });

  it('names the place with ~ and / in keys escaped (RFC 6901)', () => {
    const v = { ok: { shallow: 1 }, 'a/b': { '~c': { d: {} } }, flat: [1, 2, 3] };
    expect(deeperThan(v, 3)).toBe('/a~1b/~0c/d');
  });

  it('walks 10,000 levels without recursion', () => {
    expect(deeperThan(nested(10_000), 64)).toBe(`/a`.repeat(64));
    expect(deeperThan(nested(10_000), 20_000)).toBeNull();
  });
});
