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
  let json: unknown = undefined;
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
      if (parsed) return finish(null, parsed);
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
