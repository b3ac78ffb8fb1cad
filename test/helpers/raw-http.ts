/**
 * HTTP/1.1 over a raw `node:net` socket, for requests `fetch` will not send:
 * no Accept header, a foreign Host, chunked bodies without Content-Length,
 * bodies the server stops reading, and one connection per request.
 */
import { connect } from 'node:net';

/** One parsed answer from the raw socket. */
export interface RawAnswer {
  status: number;
  /** Lowercased header names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** Parsed body when it is JSON. */
  json: unknown;
}

/** What to send. Header names are sent as given; `host` defaults to `127.0.0.1:<port>`. */
export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** Written one after another; for chunked requests pass already-framed chunks (see {@link chunked}). */
  body?: Array<string | Buffer>;
}

/** Frames `parts` as an HTTP/1.1 chunked body, including the terminating zero chunk. */
export function chunked(parts: Array<string | Buffer>): Buffer[] {
  const out: Buffer[] = [];
  for (const part of parts) {
    const b = typeof part === 'string' ? Buffer.from(part) : part;
    if (b.length === 0) continue;
    out.push(Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n'));
  }
  out.push(Buffer.from('0\r\n\r\n'));
  return out;
}

function tryParse(buf: Buffer): RawAnswer | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number((lines[0] ?? '').split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const length = headers['content-length'];
  if (length === undefined) return null; // read to the end of the connection
  const bodyBytes = buf.subarray(end + 4);
  if (bodyBytes.length < Number(length)) return null;
  return answer(status, headers, bodyBytes.subarray(0, Number(length)).toString('utf8'));
}

function answer(status: number, headers: Record<string, string>, body: string): RawAnswer {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, headers, body, json };
}

/**
 * Sends one request on a fresh connection (`connection: close`) and resolves
 * with the answer. Write errors after the server answered (it may stop
 * reading an oversized body and close) are expected and ignored. Rejects when
 * the connection ends without a parsable answer or after `timeoutMs` of silence.
 */
export function rawRequest(port: number, request: RawRequest, timeoutMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (err: Error | null, value?: RawAnswer): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (err) reject(err);
      else resolve(value as RawAnswer);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`raw request: no answer within ${timeoutMs} ms`)));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = tryParse(received);
      if (parsed) finish(null, parsed);
    });
    const onEnd = (): void => {
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) {
        finish(new Error(`raw request: connection closed without an answer (${received.length} bytes received)`));
        return;
      }
      const parsed = tryParse(received);
      if (parsed) {
        finish(null, parsed);
        return;
      }
      const head = tryParseHeadOnly(received.subarray(0, end));
      finish(null, answer(head.status, head.headers, received.subarray(end + 4).toString('utf8')));
    };
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.on('error', () => {
      // EPIPE / ECONNRESET while still writing a body the server refused: the answer (if any) is already buffered.
    });
    socket.on('connect', () => {
      const headers: Record<string, string> = { host: `127.0.0.1:${port}`, connection: 'close', ...(request.headers ?? {}) };
      let head = `${request.method} ${request.path} HTTP/1.1\r\n`;
      for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
      socket.write(head + '\r\n');
      for (const part of request.body ?? []) {
        if (socket.destroyed) break;
        socket.write(part);
      }
    });
  });
}

function tryParseHeadOnly(head: Buffer): { status: number; headers: Record<string, string> } {
  const lines = head.toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon >= 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number((lines[0] ?? '').split(' ')[1]), headers };
}

/** Everything one raw connection got back, and how it ended. */
export interface RawExchange {
  /** Every byte the server sent. */
  bytes: Buffer;
  /** The responses found in `bytes`, in order (see {@link splitResponses}). */
  responses: RawAnswer[];
  /** Bytes after the last complete response (a truncated or malformed answer; empty when all were well-formed). */
  rest: Buffer;
  /** True when the server closed the connection within the wait. */
  closed: boolean;
  /** Milliseconds from connect until the close, or until the wait ended. */
  elapsedMs: number;
}

/**
 * Writes `writes` on a fresh connection (`gapMs` apart; 0: in one write) and
 * collects what comes back until the server closes the connection, until
 * `expectResponses` responses are complete, or for `waitMs` at most. Nothing
 * is added: the bytes are sent exactly as given (request smuggling, bad
 * request lines, pipelining).
 */
export function rawExchange(
  port: number,
  writes: Array<string | Buffer>,
  options: { waitMs?: number; gapMs?: number; expectResponses?: number; head?: boolean | readonly boolean[] } = {},
): Promise<RawExchange> {
  const { waitMs = 3_000, gapMs = 0, expectResponses = Infinity, head = false } = options;
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const { responses, rest } = splitResponses(received, head, closed);
      resolve({ bytes: received, responses, rest, closed, elapsedMs: performance.now() - started });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (expectResponses !== Infinity && splitResponses(received, head).responses.length >= expectResponses) finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => {
      // A reset after the server refused the request: what arrived before it is kept.
    });
    socket.on('connect', () => {
      void (async () => {
        if (gapMs === 0) socket.write(Buffer.concat(writes.map((w) => (typeof w === 'string' ? Buffer.from(w, 'latin1') : w))));
        else {
          for (const w of writes) {
            if (socket.destroyed) return;
            socket.write(typeof w === 'string' ? Buffer.from(w, 'latin1') : w);
            await new Promise((r) => setTimeout(r, gapMs));
          }
        }
      })();
    });
  });
}

/**
 * Splits a server's byte stream into HTTP/1.1 responses, strictly: each must
 * have a status line `HTTP/1.1 NNN reason`, header lines `name: value`, and a
 * body framed by `Content-Length` or chunked coding (no body after `HEAD`
 * when `head` — for every response, or per response when an array — nor
 * for 1xx/204/304), or — `closed`: the server closed the
 * connection — by the close. Stops at the first thing that is not a
 * complete well-formed response; that and what follows is `rest`.
 */
export function splitResponses(buf: Buffer, head: boolean | readonly boolean[] = false, closed = false): { responses: RawAnswer[]; rest: Buffer } {
  const responses: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const end = buf.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const lines = buf.subarray(at, end).toString('latin1').split('\r\n');
    const statusMatch = /^HTTP\/1\.1 ([1-5]\d\d) [^\r\n]*$/.exec(lines[0] ?? '');
    if (statusMatch === null) break;
    const headers: Record<string, string> = {};
    let malformed = false;
    for (const line of lines.slice(1)) {
      const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/.exec(line);
      if (m === null) {
        malformed = true;
        break;
      }
      const name = (m[1] as string).toLowerCase();
      headers[name] = headers[name] === undefined ? (m[2] as string) : `${headers[name]}, ${m[2] as string}`;
    }
    if (malformed) break;
    const status = Number(statusMatch[1]);
    let bodyStart = end + 4;
    let body: Buffer;
    const headAnswer = typeof head === 'boolean' ? head : (head[responses.length] ?? false);
    const closeDelimited = headers['transfer-encoding'] === undefined && headers['content-length'] === undefined && status >= 200 && status !== 204 && status !== 304;
    if (closeDelimited && !closed) break; // complete only once the connection ends
    if (closeDelimited) {
      // RFC 9112 §6.3 (8): no framing, the body ends with the connection — uWS 20.57's own 400/431/505 pages,
      // which it sends whatever the method (harmless after a HEAD: nothing follows on the connection).
      body = buf.subarray(bodyStart);
      bodyStart = buf.length;
    } else if (headAnswer || status < 200 || status === 204 || status === 304) body = Buffer.alloc(0);
    else if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      let p = bodyStart;
      let complete = false;
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', p);
        if (lineEnd < 0) break;
        const size = Number.parseInt(buf.subarray(p, lineEnd).toString('latin1'), 16);
        if (!Number.isFinite(size) || size < 0) break;
        if (buf.length < lineEnd + 2 + size + 2) break;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        p = lineEnd + 2 + size + 2;
        if (size === 0) {
          complete = true;
          break;
        }
      }
      if (!complete) break;
      body = Buffer.concat(parts);
      bodyStart = p;
    } else if (headers['content-length'] !== undefined && /^\d+$/.test(headers['content-length'])) {
      const n = Number(headers['content-length']);
      if (buf.length < bodyStart + n) break;
      body = buf.subarray(bodyStart, bodyStart + n);
      bodyStart += n;
    } else break; // framing no well-formed response has: an unknown Transfer-Encoding, a bad Content-Length
    responses.push(answer(status, headers, body.toString('utf8')));
    at = bodyStart;
  }
  return { responses, rest: buf.subarray(at) };
}
