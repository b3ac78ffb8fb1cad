/**
 * An acceptor thread's copies of `tools/list` templates, each with room after
 * it for the answer's tail (`<id>}`; on 2026-07-28 `<ttl>},"id":<id>}`), so
 * an answer is the template's own bytes with the tail written after them
 * instead of the whole template copied into a scratch buffer per answer: for
 * 50 tools (38 KB) that copy cost ~1.4 µs, about half of what a `tools/list`
 * cost above bare uWS.
 *
 * The room is written by every answer of the template on this thread. That
 * is safe because an answer is written synchronously: uWS sends its bytes or
 * copies what the socket does not take (backpressure.ts keeps a copy of an
 * unsent rest) before the writer returns, so no answer's bytes are still
 * needed when the next one overwrites the tail.
 */
import { Buffer } from 'node:buffer';
import { writeUtf8 } from '../shared/threads/buffer-text.js';

/** Bytes after each template: a tail longer than this (an id of more than ~240 bytes) takes the copying path. */
const TAIL_ROOM = 256;

/** Template view → the buffer it starts, which has {@link TAIL_ROOM} more bytes (weak: a replaced snapshot's copy goes with it). */
const withRoom = new WeakMap<Uint8Array, Buffer>();

/** A copy of `bytes` with tail room after it; the answer writer appends to it with {@link appendTail}. */
export function templateWithRoom(bytes: Uint8Array): Buffer {
  // Not from Buffer's shared pool: the room after the template must belong to it alone.
  const buf = Buffer.allocUnsafeSlow(bytes.length + TAIL_ROOM);
  buf.set(bytes, 0);
  const template = buf.subarray(0, bytes.length);
  withRoom.set(template, buf);
  return template;
}

/**
 * `template` followed by `tail`, written into the template's room: valid
 * until the next call for the same template. Null when `template` was not
 * made by {@link templateWithRoom} or `tail` does not fit.
 */
export function appendTail(template: Uint8Array, tail: string): Uint8Array | null {
  const buf = withRoom.get(template);
  if (buf === undefined) return null;
  // UTF-8 takes at most 3 bytes per UTF-16 unit; only a long tail is measured exactly.
  if (tail.length * 3 > TAIL_ROOM && Buffer.byteLength(tail, 'utf8') > TAIL_ROOM) return null;
  const n = writeUtf8(buf, tail, template.length, TAIL_ROOM);
  return buf.subarray(0, template.length + n);
}
