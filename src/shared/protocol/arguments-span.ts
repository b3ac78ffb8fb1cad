/**
 * Where the bytes of `params.arguments` are in a `tools/call` body, so the
 * acceptor can hand the shard the client's own bytes instead of
 * re-serialising the parsed object (`JSON.stringify` of a small argument
 * object cost more than scanning the whole body for it).
 *
 * The body was already accepted by `JSON.parse`, so the scanner only needs to
 * find member boundaries: one pass over bytes, no recursion (nested values
 * are skipped by a depth counter, strings by their escapes), no allocation.
 * Like `JSON.parse`, the last of duplicate members wins. A key written with
 * escapes (`"\u0070arams"`) is not compared: the scan gives up (`null`) and
 * the caller serialises the parsed value instead — rare, and never wrong.
 *
 *   { … "params" : { … "arguments" : <value> … } … }
 *                                    ^ start   ^ end
 */
import { Buffer } from 'node:buffer';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const PARAMS = Buffer.from('params');
const ARGUMENTS = Buffer.from('arguments');

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function skipSpace(b: Uint8Array, i: number, n: number): number {
  while (i < n && isSpace(b[i] as number)) i++;
  return i;
}

/** Index after the string whose opening quote is at `i`; -1 if it does not close. */
function skipString(b: Uint8Array, i: number, n: number): number {
  for (i++; i < n; i++) {
    const c = b[i] as number;
    if (c === QUOTE) return i + 1;
    if (c === BACKSLASH) i++;
  }
  return -1;
}

/** Index after the value starting at `i`; -1 if malformed. */
function skipValue(b: Uint8Array, i: number, n: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i, n);
  if (c !== 0x7b && c !== 0x5b) {
    while (i < n) {
      const d = b[i] as number;
      if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
      i++;
    }
    return i;
  }
  let depth = 0;
  while (i < n) {
    const d = b[i] as number;
    if (d === QUOTE) {
      i = skipString(b, i, n);
      if (i < 0) return -1;
      continue;
    }
    if (d === 0x7b || d === 0x5b) depth++;
    else if (d === 0x7d || d === 0x5d) {
      if (--depth === 0) return i + 1;
    }
    i++;
  }
  return -1;
}

/** Whether the key string at [start, end) (quotes excluded) is exactly `name`; null when it has escapes. */
function keyIs(b: Uint8Array, start: number, end: number, name: Uint8Array): boolean | null {
  for (let i = start; i < end; i++) if (b[i] === BACKSLASH) return null;
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (b[start + i] !== name[i]) return false;
  return true;
}

/**
 * [start, end) of the value of the last `name` member of the object at `i`,
 * or -1 (absent), or -2 (a key with escapes: undecidable here).
 */
function memberSpan(b: Uint8Array, i: number, n: number, name: Uint8Array, out: Int32Array): number {
  i = skipSpace(b, i, n);
  if (b[i] !== 0x7b) return -1;
  let found = -1;
  i = skipSpace(b, i + 1, n);
  if (b[i] === 0x7d) return found;
  for (;;) {
    if (b[i] !== QUOTE) return -2;
    const keyEnd = skipString(b, i, n);
    if (keyEnd < 0) return -2;
    const match = keyIs(b, i + 1, keyEnd - 1, name);
    if (match === null) return -2;
    i = skipSpace(b, keyEnd, n);
    if (b[i] !== 0x3a) return -2;
    i = skipSpace(b, i + 1, n);
    const end = skipValue(b, i, n);
    if (end <= i) return -2;
    if (match) {
      out[0] = i;
      out[1] = end;
      found = 0;
    }
    i = skipSpace(b, end, n);
    if (b[i] === 0x2c) i = skipSpace(b, i + 1, n);
    else if (b[i] === 0x7d) return found;
    else return -2;
  }
}

const span = new Int32Array(2);

/**
 * The bytes of `params.arguments` in a JSON-RPC body that `JSON.parse`
 * accepted, as a view into `body`; null when absent or not decidable.
 */
export function argumentsBytes(body: Uint8Array): Uint8Array | null {
  const n = body.length;
  if (memberSpan(body, 0, n, PARAMS, span) !== 0) return null;
  const paramsStart = span[0] as number;
  const paramsEnd = span[1] as number;
  if (memberSpan(body, paramsStart, paramsEnd, ARGUMENTS, span) !== 0) return null;
  return body.subarray(span[0] as number, span[1] as number);
}

/**
 * Whether the JSON value in `bytes` nests deeper than `max` objects/arrays
 * (one pass, strings skipped; the value was already accepted by JSON.parse).
 */
export function nestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  const n = bytes.length;
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = bytes[i] as number;
    if (c === QUOTE) {
      i = skipString(bytes, i, n) - 1;
      if (i < 0) return false;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
