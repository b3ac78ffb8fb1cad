import { describe, expect, it } from 'vitest';
import { getU16, getU32, putU16, putU32 } from '../../../../src/shared/threads/frame-ints.js';

describe('frame integers', () => {
  it('write the bytes Buffer.writeUInt32LE / writeUInt16LE write, at any offset, and read them back', () => {
    for (const v of [0, 1, 0xff, 0x100, 0x3fffffff, 0x7fffffff, 0x80000000, 0xdeadbeef, 0xffffffff]) {
      for (const at of [0, 1, 3, 8]) {
        const ours = Buffer.alloc(16, 0xaa);
        const node = Buffer.alloc(16, 0xaa);
        putU32(ours, at, v);
        node.writeUInt32LE(v, at);
        expect(ours).toEqual(node);
        expect(getU32(ours, at)).toBe(v);
      }
    }
    for (const v of [0, 1, 0xff, 0x100, 599, 0xffff]) {
      const ours = Buffer.alloc(4, 0xaa);
      const node = Buffer.alloc(4, 0xaa);
      putU16(ours, 1, v);
      node.writeUInt16LE(v, 1);
      expect(ours).toEqual(node);
      expect(getU16(ours, 1)).toBe(v);
    }
  });
});
