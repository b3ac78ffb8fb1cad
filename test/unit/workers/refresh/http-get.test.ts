import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureText, GetFailure, httpGet, KEEP_ALIVE_AGENT_OPTIONS } from '../../../../src/workers/refresh/http-get.js';
import { closedOrigin } from '../../../helpers/ports.js';

/** A real HTTP server on 127.0.0.1 whose answer each test sets; counts the connections it accepted. */
let server: Server;
let origin: string;
let connections = 0;
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('{}');
const open = new Set<Socket>();

beforeAll(async () => {
  server = createServer((req, res) => answer(req, res));
  server.on('connection', (s: Socket) => {
    connections++;
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of open) s.destroy();
  await new Promise((r) => server.close(r));
});

const get = (maxBytes = 1024, timeoutMs = 2000) => httpGet(`${origin}/doc`, { headers: { accept: 'application/json' }, timeoutMs, maxBytes });

async function waitFor(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
}

async function failure(p: Promise<unknown>): Promise<GetFailure> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GetFailure);
  return err as GetFailure;
}

describe('httpGet (the refresh worker client)', () => {
  it('returns status, ETag and body of a 200, and sends the given headers', async () => {
    let accept: string | undefined;
    answer = (req, res) => {
      accept = req.headers.accept;
      res.setHeader('etag', 'W/"v1"');
      res.end('{"ok":true}');
    };
    expect(await get()).toEqual({ status: 200, etag: 'W/"v1"', text: '{"ok":true}' });
    expect(accept).toBe('application/json');
  });

  it('reads a body of exactly maxBytes, and refuses one byte more', async () => {
    answer = (_req, res) => res.end('x'.repeat(100));
    expect((await get(100)).text).toHaveLength(100);
    const f = await failure(get(99));
    expect(f.reason).toBe('too-large');
    expect(failureText(f, 2000, 'larger than the.limit (99)')).toBe('larger than the.limit (99)');
  });

  it('refuses a chunked body past maxBytes while it streams (no Content-Length to go by)', async () => {
    answer = (_req, res) => {
      res.write('x'.repeat(600));
      setTimeout(() => res.end('y'.repeat(600)), 20);
    };
    expect((await failure(get(1000))).reason).toBe('too-large');
  });

  it('one deadline covers the body: a body that drips past timeoutMs fails as a timeout', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-length': '20' });
      let sent = 0;
      const drip = setInterval(() => {
        if (res.destroyed || ++sent > 20) {
          clearInterval(drip);
          return;
        }
        res.write('x');
      }, 40);
    };
    const f = await failure(get(1024, 200));
    expect(f.reason).toBe('timeout');
    expect(failureText(f, 200, '')).toBe('timed out after 200 ms');
  });

  it('an answer cut short of its Content-Length is a network failure', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-length': '50' });
      res.write('{"partial":');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const f = await failure(get());
    expect(f.reason).toBe('network');
    expect(f.detail).toMatch(/closed before the answer was complete|ECONNRESET/);
  });

  it('answers a non-200 by its status without reading its body, and serves the next request', async () => {
    answer = (_req, res) => {
      res.writeHead(503);
      res.end('e'.repeat(100_000));
    };
    expect(await get(10)).toEqual({ status: 503, etag: null, text: '' });
    answer = (_req, res) => res.end('{}');
    expect((await get()).text).toBe('{}');
  });

  it('keeps the connection alive across 304 answers (the steady state of a poll)', async () => {
    answer = (req, res) => {
      res.writeHead(req.headers['if-none-match'] === '"v7"' ? 304 : 200, { etag: '"v7"' });
      res.end(req.headers['if-none-match'] === '"v7"' ? undefined : '{}');
    };
    const conditional = () => httpGet(`${origin}/doc`, { headers: { 'if-none-match': '"v7"' }, timeoutMs: 2000, maxBytes: 1024 });
    await get();
    const before = connections;
    expect(await conditional()).toEqual({ status: 304, etag: '"v7"', text: '' });
    expect(await conditional()).toEqual({ status: 304, etag: '"v7"', text: '' });
    expect((await get()).text).toBe('{}');
    expect(connections).toBe(before);
  });

  it('keeps the connection alive between GETs', async () => {
    answer = (_req, res) => res.end('{}');
    await get();
    const before = connections;
    await get();
    await get();
    expect(connections).toBe(before);
  });

  it('closes a socket idle for the agent timeout, so a server that closes without a Keep-Alive hint cannot race the next GET', async () => {
    // keepAliveTimeout 0: the server sends no `Keep-Alive: timeout` hint and never closes an idle connection itself.
    const serverTimeout = server.keepAliveTimeout;
    server.keepAliveTimeout = 0;
    try {
      answer = (_req, res) => res.end('{}');
      // A connection of its own, opened after the change (earlier ones carry the old hint).
      for (const s of open) s.destroy();
      await waitFor(() => open.size === 0);
      await get();
      expect(open.size).toBe(1);
      const before = connections;
      await new Promise((r) => setTimeout(r, KEEP_ALIVE_AGENT_OPTIONS.timeout + 400));
      expect(open.size).toBe(0); // closed by the client's agent
      await get();
      expect(connections).toBe(before + 1);
    } finally {
      server.keepAliveTimeout = serverTimeout;
    }
  }, 10_000);

  it('a refused connection and an unsupported scheme are network failures named by their cause', async () => {
    const refused = await failure(httpGet(`${await closedOrigin()}/doc`, { headers: {}, timeoutMs: 2000, maxBytes: 10 }));
    expect(refused.reason).toBe('network');
    expect(failureText(refused, 2000, '')).toBe('ECONNREFUSED');
    const scheme = await failure(httpGet('ftp://127.0.0.1/doc', { headers: {}, timeoutMs: 2000, maxBytes: 10 }));
    expect(scheme.detail).toBe('unsupported scheme ftp:');
  });
});
