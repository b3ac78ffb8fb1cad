/**
 * The head of one HTTP/1.1 response as the parser found it: the status, the
 * framing it decided on, and the raw field lines, which are decoded only when
 * a caller asks for one (most calls need the status and one media-type check,
 * so nothing is turned into strings on the hot path).
 *
 * One instance per parser, overwritten by every response: a handler may read
 * it only during `onHead`.
 *
 *   bytes   ┌────────────────────────────────────────────────────────────────┐
 *           │HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n ...       │
 *           └────────────────────────────────────────────────────────────────┘
 *                              ▲           ▲ ▲               ▲
 *   fields  [ nameStart, nameEnd, valueStart, valueEnd,  … ]  4 int32 per field line,
 *           offsets into `bytes`; values are already trimmed of optional whitespace.
 */
import { Buffer } from 'node:buffer';

/** Lower-cases one ASCII byte. */
function lowerByte(b: number): number {
  return b >= 0x41 && b <= 0x5a ? b | 0x20 : b;
}

/** True when `bytes[start, end)` equals the lower-case ASCII `lower`, ignoring ASCII case. */
export function equalsIgnoreCase(bytes: Uint8Array, start: number, end: number, lower: string): boolean {
  if (end - start !== lower.length) return false;
  for (let i = 0; i < lower.length; i++) {
    if (lowerByte(bytes[start + i] as number) !== lower.charCodeAt(i)) return false;
  }
  return true;
}

/** A parsed response head; valid only during the `onHead` callback that receives it. */
export class ResponseHead {
  /** Status code, 100–599 (a handler only ever sees final, ≥ 200, heads). */
  status = 0;
  /** 1 for HTTP/1.1, 0 for HTTP/1.0. */
  minorVersion = 1;
  /** `Content-Length` when the body is length-delimited, else -1. */
  contentLength = -1;
  /** The body is `Transfer-Encoding: chunked`. */
  chunked = false;
  /** The body runs until the server closes the connection (neither length nor chunked). */
  untilClose = false;
  /** The connection may carry another request once this response is complete. */
  keepAlive = true;
  /** The server's `Keep-Alive: timeout=` in milliseconds, or -1 when it sent none. */
  keepAliveTimeoutMs = -1;
  /** Number of field lines (trailers excluded). */
  fieldCount = 0;
  /** Raw head bytes; see the layout above. Owned by the parser (it grows it up to maxHeaderBytes). */
  bytes: Buffer;
  /** Field offsets into `bytes`, 4 per field line. Owned by the parser (it grows it). */
  fields: Int32Array;
  /** Index of the first `Content-Type` field line, or -1. */
  contentTypeField = -1;

  constructor(maxHeaderBytes: number) {
    // Typical heads are 100–300 bytes: start small, so idle connections cost little memory.
    this.bytes = Buffer.allocUnsafeSlow(Math.min(maxHeaderBytes, 1024));
    this.fields = new Int32Array(4 * 32);
  }

  /** Makes room for `size` head bytes (the parser never asks past its limit). */
  ensureCapacity(size: number, limit: number): void {
    if (size <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.min(limit, Math.max(size, 2 * this.bytes.length)));
    this.bytes.copy(grown);
    this.bytes = grown;
  }

  /** The name of field line `i`, lower-cased. */
  name(i: number): string {
    const f = this.fields;
    return this.bytes.toString('latin1', f[4 * i] as number, f[4 * i + 1] as number).toLowerCase();
  }

  /** The value of field line `i` (latin1, as RFC 9110 §5.5 recommends for obs-text). */
  value(i: number): string {
    const f = this.fields;
    return this.bytes.toString('latin1', f[4 * i + 2] as number, f[4 * i + 3] as number);
  }

  /** The value of the first field named `lowerName` (lower-case), or undefined. */
  get(lowerName: string): string | undefined {
    const f = this.fields;
    for (let i = 0; i < this.fieldCount; i++) {
      if (equalsIgnoreCase(this.bytes, f[4 * i] as number, f[4 * i + 1] as number, lowerName)) return this.value(i);
    }
    return undefined;
  }

  /**
   * True when the `Content-Type` media type (before any `;` parameter, case
   * and surrounding whitespace ignored) is `lowerType`. Allocation-free.
   */
  mediaTypeIs(lowerType: string): boolean {
    if (this.contentTypeField < 0) return false;
    const f = this.fields;
    const start = f[4 * this.contentTypeField + 2] as number;
    const valueEnd = f[4 * this.contentTypeField + 3] as number;
    let end = start;
    while (end < valueEnd && this.bytes[end] !== 0x3b) end++;
    while (end > start && (this.bytes[end - 1] === 0x20 || this.bytes[end - 1] === 0x09)) end--;
    return equalsIgnoreCase(this.bytes, start, end, lowerType);
  }
}
