/**
 * Test helpers for the lean HTTP/1.1 client: a raw TCP server on 127.0.0.1
 * that answers each request with exactly the bytes a test scripts (so it can
 * misbehave in ways no HTTP server library allows), and a response handler
 * that records what the client delivered.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TlsOptions } from 'node:tls';
import { Http1Agent, type Http1AgentOptions } from '../../../../../src/workers/shard/http1/agent.js';
import type { Http1Failure } from '../../../../../src/workers/shard/http1/errors.js';
import { Http1Request, type ResponseHandler } from '../../../../../src/workers/shard/http1/request.js';
import type { ResponseHead } from '../../../../../src/workers/shard/http1/response-head.js';

/** One request as the server received it. */
export interface Received {
  connection: number;
  head: string;
  body: string;
}

/** Answers one request: write bytes on `socket` (or not), any way the test likes. */
export type Responder = (socket: Socket, request: Received, index: number) => void;

/** A raw server; `answer` may be replaced between calls. */
export interface RawServer {
  port: number;
  origin: string;
  answer: Responder;
  readonly requests: Received[];
  /** Connections accepted so far. */
  connections: number;
  /** Connections the client closed (the server saw EOF or a reset). */
  closedByClient: number;
  readonly sockets: Set<Socket>;
  close(): Promise<void>;
}

/** Starts a raw server (TLS when `tls` is given) that parses requests framed by Content-Length and hands each to `answer`. */
export async function startRawServer(answer: Responder, tls?: TlsOptions): Promise<RawServer> {
  const sockets = new Set<Socket>();
  const state: RawServer = {
    port: 0,
    origin: '',
    answer,
    requests: [],
    connections: 0,
    closedByClient: 0,
    sockets,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const onConnection = (socket: Socket): void => {
    const connection = ++state.connections;
    sockets.add(socket);
    let pending = Buffer.alloc(0);
    let counted = false;
    // The client closed first: its FIN (or reset) came while the server had not ended its side.
    const clientClosed = (): void => {
      if (counted || socket.writableEnded || socket.destroyed) return;
      counted = true;
      state.closedByClient++;
    };
    socket.on('end', clientClosed);
    // A server-side socket only errors when the client reset it (the server's own destroy() emits none).
    socket.on('error', () => {
      if (!counted) state.closedByClient++;
      counted = true;
    });
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const headEnd = pending.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const head = pending.subarray(0, headEnd).toString('latin1');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < headEnd + 4 + length) return;
        const body = pending.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8');
        pending = pending.subarray(headEnd + 4 + length);
        const received = { connection, head, body };
        state.requests.push(received);
        state.answer(socket, received, state.requests.length - 1);
      }
    });
    socket.on('close', () => sockets.delete(socket));
  };
  const server: Server = tls === undefined ? createServer(onConnection) : createTlsServer(tls, onConnection);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.address() as { port: number }).port;
  state.origin = `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${state.port}`;
  return state;
}

/** A complete response with a Content-Length body. */
export function okResponse(body: string, extraHeaders = ''): string {
  return `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`;
}

/** What one exchange delivered. */
export class Recorder implements ResponseHandler {
  status = 0;
  headers: Array<[string, string]> = [];
  body = '';
  bodyBytes = 0;
  ended = false;
  failure: Http1Failure | null = null;
  /** Callback order, to check that exactly one terminal callback came. */
  events: string[] = [];
  readonly slot = new Http1Request(this);
  private resolve: (() => void) | null = null;
  /** Resolves at the terminal callback. */
  done: Promise<void>;
  /** Optional hooks for tests that abort from inside a callback. */
  onBodyHook: ((r: Recorder) => void) | null = null;
  keepBody = true;

  constructor() {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  onHead(status: number, head: ResponseHead): void {
    this.events.push('head');
    this.status = status;
    for (let i = 0; i < head.fieldCount; i++) this.headers.push([head.name(i), head.value(i)]);
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    this.bodyBytes += end - start;
    if (this.keepBody) this.body += chunk.toString('utf8', start, end);
    this.onBodyHook?.(this);
  }

  onEnd(): void {
    this.events.push('end');
    this.ended = true;
    this.resolve?.();
  }

  onError(failure: Http1Failure): void {
    this.events.push(`error:${failure.code}`);
    this.failure = failure;
    this.resolve?.();
  }
}

/** A small POST request with a Content-Length body. */
export function post(path = '/x', body = '{}'): Buffer {
  return Buffer.from(`POST ${path} HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/** Runs one exchange on `agent` against `origin` and waits for its end. */
export async function exchange(agent: Http1Agent, origin: string, timeoutMs = 5_000, data: Buffer = post()): Promise<Recorder> {
  const r = new Recorder();
  agent.pool(origin).request(r.slot, data, timeoutMs);
  await r.done;
  return r;
}

/** An agent with short timeouts for tests; `destroy()` it in afterEach. */
export function testAgent(options: Partial<Http1AgentOptions> = {}): Http1Agent {
  return new Http1Agent({ sweepIntervalMs: 10, ...options });
}

/** Resolves after `ms` (bounded waits in tests). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
