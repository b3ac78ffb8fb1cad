/**
 * Little-endian integers in a frame's header, as plain byte stores and loads.
 * Node's `buf.writeUInt32LE` / `readUInt32LE` check their arguments on every
 * call and are too large for TurboFan to inline into the frame codecs: under
 * callgrind they were ~110 instructions a call, ~20 calls per `tools/call`.
 * These are a handful of instructions once inlined. Bounds are the caller's:
 * an encoder writes inside the space its sink reserved, a decoder reads a
 * header whose length it checked first.
 */

/** Writes `value` (0 ≤ value < 2^32) at `at`. */
export function putU32(b: Uint8Array, at: number, value: number): void {
  b[at] = value;
  b[at + 1] = value >>> 8;
  b[at + 2] = value >>> 16;
  b[at + 3] = value >>> 24;
}

/** Writes `value` (0 ≤ value < 2^16) at `at`. */
export function putU16(b: Uint8Array, at: number, value: number): void {
  b[at] = value;
  b[at + 1] = value >>> 8;
}

/** The u32 at `at`. */
export function getU32(b: Uint8Array, at: number): number {
  return ((b[at] as number) | ((b[at + 1] as number) << 8) | ((b[at + 2] as number) << 16) | ((b[at + 3] as number) << 24)) >>> 0;
}

/** The u16 at `at`. */
export function getU16(b: Uint8Array, at: number): number {
  return (b[at] as number) | ((b[at + 1] as number) << 8);
}
