/**
 * Where the bytes of `params.arguments` are in a `tools/call` body, and how
 * deeply they nest, so the acceptor can hand the shard the client's own bytes
 * instead of re-serialising the parsed object (`JSON.stringify` of a small
 * argument object cost more than scanning the whole body for it).
 *
 * It runs before any parse (call-params.ts `parseRequestBody` then parses the
 * body without the arguments, the shard the arguments alone), and it only
 * finds member boundaries: on bytes that are not JSON its span may be wrong,
 * and one of those two parses refuses them. One pass over the bytes with a
 * depth counter (no recursion, no allocation), strings skipped by their
 * escapes. It measures the arguments' nesting in the same pass: the separate
 * passes it replaced read the arguments' bytes three times (~12k instructions
 * of a `tools/call` on the acceptor by `bench/instructions.ts`). Like `JSON.parse`, the last of
 * duplicate members wins. A key written with escapes (`"\u0070arams"`) at the
 * two levels compared is not decoded: the scan gives up and the caller
 * serialises the parsed value instead — rare, and never wrong.
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

/** Index after the scalar (number, true, false, null) starting at `i`. */
function skipScalar(b: Uint8Array, i: number, n: number): number {
  while (i < n) {
    const d = b[i] as number;
    if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
    i++;
  }
  return i;
}

/** Whether the key string at [start, end) (quotes excluded) is exactly `name`; null when it has escapes. */
function keyIs(b: Uint8Array, start: number, end: number, name: Uint8Array): boolean | null {
  for (let i = start; i < end; i++) if (b[i] === BACKSLASH) return null;
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (b[start + i] !== name[i]) return false;
  return true;
}

/** What {@link scanArguments} found. */
export const enum ArgumentsScan {
  /** `span` holds [start, end, nesting depth] of the last `params.arguments`. */
  Found = 0,
  Absent = -1,
  /** A compared key has escapes, or the bytes are not the JSON they should be. */
  Undecidable = -2,
}

/**
 * One pass over `b`: [start, end) of the value of the last `arguments` member
 * of the last `params` member of the top-level object, and the number of
 * objects/arrays it nests (0 for a scalar), into `span`.
 *
 * Depth 1 is the top-level object, depth 2 the `params` object. A string at
 * those depths is a key exactly when the token before it is `{` or `,` (the
 * grammar puts a `:` or `[` before a value), so `expectKey` needs no stack.
 */
export function scanArguments(b: Uint8Array, span: Int32Array): ArgumentsScan {
  const n = b.length;
  let i = skipSpace(b, 0, n);
  if (b[i] !== 0x7b) return ArgumentsScan.Absent;
  let depth = 0;
  let expectKey = false;
  let paramsKey = false; // the current depth-1 member is `params`
  let inParams = false; // depth 2 is the object of the last `params` member
  let argumentsKey = false; // the current depth-2 member (in params) is `arguments`
  let start = -1; // while an arguments object/array is open: where it started
  let nesting = 0;
  let found = ArgumentsScan.Absent;
  for (; i < n; i++) {
    const c = b[i] as number;
    if (c === QUOTE) {
      const end = skipString(b, i, n);
      if (end < 0) return ArgumentsScan.Undecidable;
      if (expectKey && (depth === 1 || (depth === 2 && inParams))) {
        const match = keyIs(b, i + 1, end - 1, depth === 1 ? PARAMS : ARGUMENTS);
        if (match === null) return ArgumentsScan.Undecidable;
        if (depth === 1) paramsKey = match;
        else argumentsKey = match;
        expectKey = false;
      }
      i = end - 1;
    } else if (c === 0x3a) {
      expectKey = false;
      if (depth === 1 && paramsKey) {
        found = ArgumentsScan.Absent; // a later `params` replaces an earlier one whole
      } else if (depth === 2 && inParams && argumentsKey) {
        const v = skipSpace(b, i + 1, n);
        const d = b[v];
        if (d === 0x7b || d === 0x5b) {
          start = v; // the bracket loop below closes it
        } else {
          const end = d === QUOTE ? skipString(b, v, n) : skipScalar(b, v, n);
          if (end <= v) return ArgumentsScan.Undecidable;
          span[0] = v;
          span[1] = end;
          span[2] = 0;
          found = ArgumentsScan.Found;
          i = end - 1;
        }
      }
    } else if (c === 0x2c) {
      expectKey = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      expectKey = c === 0x7b;
      if (depth === 2) inParams = paramsKey && c === 0x7b;
      else if (start >= 0 && depth - 2 > nesting) nesting = depth - 2;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 3 && start >= 0) {
        span[0] = start;
        span[1] = i + 1;
        span[2] = nesting;
        found = ArgumentsScan.Found;
        start = -1;
        nesting = 0;
      } else if (depth === 2) {
        inParams = false;
        argumentsKey = false;
      } else if (depth === 1) {
        paramsKey = false;
      }
      depth--;
    }
  }
  return found;
}

/**
 * Whether the JSON value in `bytes` nests deeper than `max` objects/arrays
 * (one pass, strings skipped; the value was already accepted by JSON.parse).
 * For arguments {@link scanArguments} could not find.
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
