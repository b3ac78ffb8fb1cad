/**
 * The exact JSON text of a request's top-level `"id"` (issue 11 Low #13).
 *
 * `JSON.parse` turns `9007199254740993` into the double 9007199254740992, so
 * an answer built from the parsed id would name another request. JSON-RPC
 * asks the response to carry the same id; the bytes of the request still
 * hold it exactly. This scanner finds the value of the top-level `"id"`
 * member and returns its text, without building anything but the result.
 *
 * One pass, O(n), no recursion: nested objects and arrays are skipped by a
 * depth counter, strings by their escapes. Keys are compared after escape
 * decoding (`"\u0069d"` is `"id"`), and, as with `JSON.parse`, the last of
 * duplicate `"id"` members wins. The input must be JSON that `JSON.parse`
 * accepted; anything unexpected gives `null` (the caller then falls back to
 * the parsed id).
 *
 *   {  ws  "key"  ws  :  ws  value  ws  ,|}  …
 *   ^ depth 0 only: members of nested values are never compared
 */
import type { ExactId, RequestId } from './jsonrpc.js';

/** Longest id text echoed; the same bound as a string id (a longer number falls back to the parsed value). */
export const MAX_ID_TEXT = 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ID = [0x69, 0x64]; // "i", "d"

/** Reads a code unit (string input) or a byte (UTF-8 input) at an index. */
type At = (i: number) => number;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/**
 * Scans the string starting at the quote at `i`. Returns the index after the
 * closing quote, and whether its decoded text is exactly "id"; -1 if malformed.
 */
function scanString(at: At, n: number, i: number, compare: boolean): { end: number; isId: boolean } {
  let k = 0; // decoded code units so far
  let same = compare;
  i++;
  while (i < n) {
    let c = at(i);
    if (c === QUOTE) return { end: i + 1, isId: same && k === ID.length };
    if (c === BACKSLASH) {
      const e = at(i + 1);
      if (e === 0x75) {
        // \uXXXX
        c = 0;
        for (let j = 2; j < 6; j++) {
          const h = hex(at(i + j));
          if (h < 0) return { end: -1, isId: false };
          c = c * 16 + h;
        }
        i += 6;
      } else {
        c = e === 0x6e ? 0x0a : e === 0x74 ? 0x09 : e === 0x72 ? 0x0d : e === 0x62 ? 0x08 : e === 0x66 ? 0x0c : e; // \" \\ \/ stand for themselves
        i += 2;
      }
    } else i++;
    if (same) same = k < ID.length && c === ID[k];
    k++;
  }
  return { end: -1, isId: false };
}

/** Index just after the JSON value starting at `i` (a string, number, literal, object or array); -1 if malformed. */
function skipValue(at: At, n: number, i: number): number {
  const c = at(i);
  if (c === QUOTE) return scanString(at, n, i, false).end;
  if (c !== 0x7b && c !== 0x5b) {
    // number, true, false, null: up to the next delimiter
    while (i < n) {
      const d = at(i);
      if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  while (i < n) {
    const d = at(i);
    if (d === QUOTE) {
      i = scanString(at, n, i, false).end;
      if (i < 0) return -1;
      continue;
    }
    if (d === 0x7b || d === 0x5b) depth++;
    else if (d === 0x7d || d === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
    i++;
  }
  return -1;
}

/** [start, end) of the last top-level "id" value, or null. */
function findId(at: At, n: number): [number, number] | null {
  let i = 0;
  while (i < n && isSpace(at(i))) i++;
  if (at(i) !== 0x7b) return null;
  i++;
  let found: [number, number] | null = null;
  for (;;) {
    while (i < n && isSpace(at(i))) i++;
    if (at(i) === 0x7d) return found;
    if (at(i) !== QUOTE) return null;
    const key = scanString(at, n, i, true);
    if (key.end < 0) return null;
    i = key.end;
    while (i < n && isSpace(at(i))) i++;
    if (at(i) !== 0x3a) return null;
    i++;
    while (i < n && isSpace(at(i))) i++;
    const end = skipValue(at, n, i);
    if (end < 0 || end === i) return null;
    if (key.isId) found = [i, end];
    i = end;
    while (i < n && isSpace(at(i))) i++;
    if (at(i) === 0x2c) i++;
    else if (at(i) === 0x7d) return found;
    else return null;
  }
}

const decoder = new TextDecoder();

/** The exact JSON text of the top-level "id" member of a UTF-8 JSON body, or null. */
export function idTextInBytes(body: Uint8Array): string | null {
  const span = findId((i) => body[i] ?? -1, body.length);
  return span === null ? null : decoder.decode(body.subarray(span[0], span[1]));
}

/** The exact JSON text of the top-level "id" member of a JSON text, or null. */
export function idTextInString(text: string): string | null {
  const span = findId((i) => (i < text.length ? text.charCodeAt(i) : -1), text.length);
  return span === null ? null : text.slice(span[0], span[1]);
}

/**
 * The id to put into an answer: the parsed id itself when its serialisation is
 * exact (strings, safe integers), else the request's own text of it — a number
 * that `JSON.parse` rounded (above 2^53), wrote differently (`1.50`, `1e2`) or
 * could not hold (`1e400`). `encodeId` writes either form. A text longer than
 * {@link MAX_ID_TEXT}, or one the scanner cannot find, falls back to the parsed id.
 */
export function exactId<T extends RequestId | null>(id: T, body: Uint8Array | string): T | ExactId {
  if (typeof id !== 'number' || Number.isSafeInteger(id)) return id;
  const json = typeof body === 'string' ? idTextInString(body) : idTextInBytes(body);
  return json !== null && json.length <= MAX_ID_TEXT && JSON.parse(json) === id ? { json } : id;
}
