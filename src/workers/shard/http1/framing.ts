/**
 * How a response's body is framed (RFC 9112 §6), decided once from its
 * complete head: the length, chunked or read-to-close, whether the connection
 * may carry another request, the server's `Keep-Alive: timeout`, and where
 * `Content-Type` is. Refuses the field combinations that let two parsers
 * disagree on where a response ends (request smuggling's mirror image).
 */
import type { Buffer } from 'node:buffer';
import { equalsIgnoreCase, type ResponseHead } from './response-head.js';

const SP = 0x20;
const HTAB = 0x09;
/** Content-Length digits beyond this cannot be a safe integer (2^53 has 16 digits). */
const MAX_LENGTH_DIGITS = 15;

/**
 * Sets the framing fields of a final (≥ 200) `head` from its field lines.
 * Returns why the framing is refused, or null.
 */
export function decideFraming(head: ResponseHead): string | null {
  const bytes = head.bytes;
  const f = head.fields;
  let contentLength = -1;
  let transferEncodings = 0;
  let close = false;
  let keepAliveToken = false;
  head.keepAliveTimeoutMs = -1;
  head.contentTypeField = -1;
  for (let k = 0; k < head.fieldCount; k++) {
    const ns = f[4 * k] as number;
    const ne = f[4 * k + 1] as number;
    const vs = f[4 * k + 2] as number;
    const ve = f[4 * k + 3] as number;
    switch (ne - ns) {
      case 14: // content-length
        if (equalsIgnoreCase(bytes, ns, ne, 'content-length')) {
          const n = parseLength(bytes, vs, ve);
          if (n < 0) return 'Content-Length is not a single decimal number';
          if (contentLength >= 0 && n !== contentLength) return 'two Content-Length fields with different values';
          contentLength = n;
        }
        break;
      case 17: // transfer-encoding
        if (equalsIgnoreCase(bytes, ns, ne, 'transfer-encoding')) {
          if (!equalsIgnoreCase(bytes, vs, ve, 'chunked')) return 'unsupported Transfer-Encoding (only "chunked" is accepted)';
          transferEncodings++;
        }
        break;
      case 10: // connection, keep-alive
        if (equalsIgnoreCase(bytes, ns, ne, 'connection')) {
          if (hasToken(bytes, vs, ve, 'close')) close = true;
          if (hasToken(bytes, vs, ve, 'keep-alive')) keepAliveToken = true;
        } else if (equalsIgnoreCase(bytes, ns, ne, 'keep-alive')) {
          head.keepAliveTimeoutMs = keepAliveTimeout(bytes, vs, ve);
        }
        break;
      case 12: // content-type
        if (head.contentTypeField < 0 && equalsIgnoreCase(bytes, ns, ne, 'content-type')) head.contentTypeField = k;
        break;
    }
  }
  if (transferEncodings > 1) return 'Transfer-Encoding: chunked applied twice';
  if (transferEncodings === 1 && contentLength >= 0) return 'both Transfer-Encoding and Content-Length (RFC 9112 §6.3)';
  // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message is faulty framing.
  if (transferEncodings === 1 && head.minorVersion === 0) return 'Transfer-Encoding in an HTTP/1.0 response';
  head.chunked = transferEncodings === 1;
  head.contentLength = contentLength;
  head.untilClose = false;
  head.keepAlive = !close && (head.minorVersion === 1 || keepAliveToken);
  const noBody = head.status === 204 || head.status === 304;
  if (noBody) {
    head.chunked = false;
    head.contentLength = 0;
  } else if (!head.chunked && contentLength < 0) {
    head.untilClose = true;
    head.keepAlive = false;
  }
  return null;
}

/** `1*DIGIT` → its value; -1 for anything else (empty, a list, a sign, too many digits). */
function parseLength(bytes: Buffer, start: number, end: number): number {
  if (end === start || end - start > MAX_LENGTH_DIGITS) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const b = bytes[i] as number;
    if (b < 0x30 || b > 0x39) return -1;
    n = n * 10 + (b - 0x30);
  }
  return n;
}

/** True when the comma-separated token list `bytes[start, end)` contains `lower`, ignoring case. */
function hasToken(bytes: Buffer, start: number, end: number, lower: string): boolean {
  let i = start;
  while (i < end) {
    while (i < end && (bytes[i] === SP || bytes[i] === HTAB || bytes[i] === 0x2c)) i++;
    let j = i;
    while (j < end && bytes[j] !== 0x2c) j++;
    let k = j;
    while (k > i && (bytes[k - 1] === SP || bytes[k - 1] === HTAB)) k--;
    if (equalsIgnoreCase(bytes, i, k, lower)) return true;
    i = j;
  }
  return false;
}

/** `Keep-Alive: timeout=N[, max=M]` → N × 1000, or -1 when absent or not a number. */
function keepAliveTimeout(bytes: Buffer, start: number, end: number): number {
  for (let i = start; i + 7 <= end; i++) {
    if (i !== start && bytes[i - 1] !== SP && bytes[i - 1] !== HTAB && bytes[i - 1] !== 0x2c && bytes[i - 1] !== 0x3b) continue;
    if (!equalsIgnoreCase(bytes, i, i + 7, 'timeout')) continue;
    let j = i + 7;
    while (j < end && (bytes[j] === SP || bytes[j] === HTAB)) j++;
    if (j >= end || bytes[j] !== 0x3d) continue;
    j++;
    while (j < end && (bytes[j] === SP || bytes[j] === HTAB)) j++;
    let n = 0;
    let digits = 0;
    while (j < end && digits < 9 && (bytes[j] as number) >= 0x30 && (bytes[j] as number) <= 0x39) {
      n = n * 10 + ((bytes[j] as number) - 0x30);
      digits++;
      j++;
    }
    return digits === 0 ? -1 : n * 1000;
  }
  return -1;
}
