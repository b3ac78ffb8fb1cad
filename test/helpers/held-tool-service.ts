/**
 * A real Tool Service (HTTP on 127.0.0.1, ephemeral port) whose single tool
 * `hold` does not answer until the test calls `releaseAll()`. It lets a test
 * keep a known number of calls in flight without relying on timing.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { manifestFor } from '../fixtures/tool-service.js';

/** A running holding Tool Service. */
export interface HeldToolService {
  url: string;
  /** Calls received and not yet answered. */
  readonly held: number;
  /** Calls received in total. */
  readonly received: number;
  /** Answers every held call (and every later one, until {@link hold} is called again) with an echo result. */
  releaseAll(): void;
  /** Answers the oldest held call; false when none is held. */
  releaseOne(): boolean;
  /** Holds calls again from now on. */
  hold(): void;
  close(): Promise<void>;
}

/** Starts the service; its manifest offers `hold` (input `{type: object}`). */
export async function startHeldToolService(service = 'held-tools'): Promise<HeldToolService> {
  const waiting: Array<{ res: ServerResponse; body: string }> = [];
  const sockets = new Set<Socket>();
  let holding = true;
  let received = 0;

  const answer = (res: ServerResponse, body: string): void => {
    const text = JSON.stringify({ content: [{ type: 'text', text: body }] });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/manifest') {
      const text = JSON.stringify(manifestFor([{ name: 'hold' }], service));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received++;
      const body = Buffer.concat(chunks).toString('utf8');
      if (holding) waiting.push({ res, body });
      else answer(res, body);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('held tool service: unexpected listen address');

  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${address.port}`,
    get held() {
      return waiting.length;
    },
    get received() {
      return received;
    },
    releaseAll() {
      holding = false;
      for (const w of waiting.splice(0)) answer(w.res, w.body);
    },
    releaseOne() {
      const w = waiting.shift();
      if (w !== undefined) answer(w.res, w.body);
      return w !== undefined;
    },
    hold() {
      holding = true;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}
