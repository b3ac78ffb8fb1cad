/**
 * Strings in and out of Buffers without the per-call encoding dispatch of
 * `buf.write(s, offset, length, encoding)` / `buf.toString(encoding, …)`:
 * Node's per-encoding methods (`latin1Write`, `utf8Write`, `latin1Slice`,
 * `utf8Slice`) cost about half as much for the short strings of a call frame.
 * They are long-standing but undocumented, so their presence is checked once
 * and the documented API is used when they are missing. And bytes from one
 * buffer to another without `Buffer#copy`, which validates its offsets and
 * was not inlined into the call path's functions (`bench/instructions.ts`).
 */
import { Buffer } from 'node:buffer';

interface EncodingMethods {
  latin1Write(text: string, offset: number, length?: number): number;
  utf8Write(text: string, offset: number, length?: number): number;
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}

const proto = Buffer.prototype as unknown as Partial<EncodingMethods>;
const fast = typeof proto.latin1Write === 'function' && typeof proto.utf8Write === 'function' && typeof proto.latin1Slice === 'function' && typeof proto.utf8Slice === 'function';

/** Writes ASCII/latin1 `text` at `offset`; returns the bytes written. */
export const writeLatin1: (buf: Buffer, text: string, offset: number) => number = fast
  ? (buf, text, offset) => (buf as unknown as EncodingMethods).latin1Write(text, offset, text.length)
  : (buf, text, offset) => buf.write(text, offset, text.length, 'latin1');

/** Writes `text` as UTF-8 at `offset`, at most `max` bytes; returns the bytes written. */
export const writeUtf8: (buf: Buffer, text: string, offset: number, max: number) => number = fast
  ? (buf, text, offset, max) => (buf as unknown as EncodingMethods).utf8Write(text, offset, max)
  : (buf, text, offset, max) => buf.write(text, offset, max, 'utf8');

/** The latin1 text of [start, end). */
export const readLatin1: (buf: Buffer, start: number, end: number) => string = fast
  ? (buf, start, end) => (buf as unknown as EncodingMethods).latin1Slice(start, end)
  : (buf, start, end) => buf.toString('latin1', start, end);

/** The UTF-8 text of [start, end). */
export const readUtf8: (buf: Buffer, start: number, end: number) => string = fast
  ? (buf, start, end) => (buf as unknown as EncodingMethods).utf8Slice(start, end)
  : (buf, start, end) => buf.toString('utf8', start, end);

/** Copies `src[from, to)` to `dst` at `at` (the caller checked that it fits); returns the bytes copied. */
export function copyBytes(src: Uint8Array, from: number, to: number, dst: Uint8Array, at: number): number {
  dst.set(from === 0 && to === src.length ? src : new Uint8Array(src.buffer, src.byteOffset + from, to - from), at);
  return to - from;
}
