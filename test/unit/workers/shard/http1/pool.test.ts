/**
 * The lean HTTP/1.1 client against raw-socket servers that misbehave: every
 * answer here is written byte for byte by the test. Requests are counted at
 * the server, so "nothing was sent twice" is checked, not assumed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Http1Agent } from '../../../../../src/workers/shard/http1/agent.js';
import { eventually } from '../../../../helpers/eventually.js';
import { exchange, okResponse, post, Recorder, sleep, startRawServer, testAgent, type RawServer } from './raw-server.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(answer: Parameters<typeof startRawServer>[0]): Promise<RawServer> {
  const s = await startRawServer(answer);
  cleanups.push(() => s.close());
  return s;
}

function agent(options: Parameters<typeof testAgent>[0] = {}): Http1Agent {
  const a = testAgent(options);
  cleanups.push(() => a.destroy());
  return a;
}

/** Writes `text` in pieces with a pause between them (each piece its own TCP segment). */
async function drip(socket: Socket, pieces: string[], pauseMs = 5): Promise<void> {
  for (const p of pieces) {
    if (socket.destroyed) return;
    socket.write(p);
    await sleep(pauseMs);
  }
}

describe.each([
  ['shared onread buffer', 64 * 1024],
  ["'data' events", 0],
])('Http1Pool (%s)', (_mode, readBufferBytes) => {
  it('reads a Content-Length answer and reuses the connection', async () => {
    const s = await server((socket, req) => socket.write(okResponse(`echo ${req.body}`)));
    const a = agent({ readBufferBytes });
    for (let i = 0; i < 3; i++) {
      const r = await exchange(a, s.origin, 5_000, post('/x', `{"i":${i}}`));
      expect(r.events).toEqual(['head', 'end']);
      expect(r.status).toBe(200);
      expect(r.body).toBe(`echo {"i":${i}}`);
    }
    expect(s.connections).toBe(1);
    expect(s.requests.map((q) => q.head.split('\r\n')[0])).toEqual(['POST /x HTTP/1.1', 'POST /x HTTP/1.1', 'POST /x HTTP/1.1']);
  });

  it('reads a chunked answer with extensions and trailers, dripped in pieces, and keeps the connection', async () => {
    const s = await server((socket) => {
      void drip(socket, ['HTTP/1.1 200 OK\r\nTransfer-', 'Encoding: chunked\r\n\r\n5;a=b', '\r\nhel', 'lo\r\n6;q="x y"\r\n wor', 'ld\r\n0\r\nX-Trailer: t\r', '\n\r\n']);
    });
    const a = agent({ readBufferBytes });
    const r = await exchange(a, s.origin);
    expect(r.events).toEqual(['head', 'end']);
    expect(r.body).toBe('hello world');
    await exchange(a, s.origin);
    expect(s.connections).toBe(1);
  });

  it('skips 1xx interim answers', async () => {
    const s = await server((socket) => {
      void drip(socket, ['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n', okResponse('final')]);
    });
    const r = await exchange(agent({ readBufferBytes }), s.origin);
    expect(r.status).toBe(200);
    expect(r.body).toBe('final');
    expect(r.events).toEqual(['head', 'end']);
  });

  it('honours Connection: close (a new connection for the next call; the first one is closed)', async () => {
    const s = await server((socket) => socket.write(okResponse('bye', 'connection: close\r\n')));
    const a = agent({ readBufferBytes });
    expect((await exchange(a, s.origin)).body).toBe('bye');
    expect((await exchange(a, s.origin)).body).toBe('bye');
    expect(s.connections).toBe(2);
    await eventually(() => expect(s.closedByClient).toBe(2));
  });

  it('reads an answer that ends with the connection (no length, no chunks)', async () => {
    const s = await server((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ');
      setTimeout(() => socket.end('close'), 10);
    });
    const r = await exchange(agent({ readBufferBytes }), s.origin);
    expect(r.events).toEqual(['head', 'end']);
    expect(r.body).toBe('until close');
  });

  it.each([
    ['Transfer-Encoding with Content-Length', 'HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', /both Transfer-Encoding and Content-Length/],
    ['two different Content-Length', 'HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 30\r\n\r\nabc', /different values/],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nx-a: 1\r\n  2\r\ncontent-length: 0\r\n\r\n', /obs-fold/],
  ])('refuses %s: the call fails with BAD_RESPONSE, the socket is destroyed, the next call works', async (_name, bad, message) => {
    const s = await server((socket, _req, i) => socket.write(i === 0 ? bad : okResponse('fine')));
    const a = agent({ readBufferBytes });
    const r = await exchange(a, s.origin);
    expect(r.events).toEqual(['error:BAD_RESPONSE']);
    expect(r.failure?.message).toMatch(message);
    expect(r.failure?.mayHaveReachedServer).toBe(true);
    await eventually(() => expect(s.closedByClient).toBe(1));
    expect((await exchange(a, s.origin)).body).toBe('fine');
    expect(s.requests).toHaveLength(2);
  });

  it('never parses bytes after a complete response as the next one: the connection is discarded', async () => {
    const smuggled = okResponse('SMUGGLED');
    const s = await server((socket, _req, i) => socket.write(i === 0 ? okResponse('first') + smuggled : okResponse('second')));
    const a = agent({ readBufferBytes });
    expect((await exchange(a, s.origin)).body).toBe('first');
    const second = await exchange(a, s.origin);
    expect(second.body).toBe('second');
    expect(s.connections).toBe(2);
  });

  it('discards an idle connection that receives bytes while no request is outstanding', async () => {
    const s = await server((socket, _req, i) => {
      socket.write(okResponse(i === 0 ? 'first' : 'second'));
      if (i === 0) setTimeout(() => socket.write(okResponse('UNSOLICITED')), 20);
    });
    const a = agent({ readBufferBytes });
    expect((await exchange(a, s.origin)).body).toBe('first');
    await eventually(() => expect(s.closedByClient).toBe(1));
    expect((await exchange(a, s.origin)).body).toBe('second');
    expect(s.connections).toBe(2);
  });

  it('refuses a head over maxHeaderBytes with HEADERS_TOO_LARGE', async () => {
    const s = await server((socket) => socket.write(`HTTP/1.1 200 OK\r\nx-big: ${'b'.repeat(2000)}\r\ncontent-length: 0\r\n\r\n`));
    const r = await exchange(agent({ readBufferBytes, maxHeaderBytes: 1024 }), s.origin);
    expect(r.events).toEqual(['error:HEADERS_TOO_LARGE']);
  });

  it('stops reading an oversize body when the handler aborts at its bound (never reads 200 MiB to the end)', async () => {
    let written = 0;
    const s = await server((socket) => {
      const total = 200 * 1024 * 1024;
      socket.write(`HTTP/1.1 500 Internal Server Error\r\ncontent-length: ${total}\r\n\r\n`);
      const block = Buffer.alloc(64 * 1024, 'e');
      const pump = (): void => {
        while (written < total && !socket.destroyed) {
          written += block.length;
          if (!socket.write(block)) return void socket.once('drain', pump);
        }
      };
      pump();
    });
    const a = agent({ readBufferBytes });
    const pool = a.pool(s.origin);
    const r = new Recorder();
    r.keepBody = false;
    const bound = 4096;
    let aborted = false;
    r.onBodyHook = (rec) => {
      if (rec.bodyBytes >= bound && !aborted) {
        aborted = true;
        pool.abort(rec.slot);
      }
    };
    pool.request(r.slot, post(), 5_000);
    await eventually(() => expect(s.closedByClient).toBe(1));
    expect(aborted).toBe(true);
    expect(r.events).toEqual(['head']);
    expect(r.slot.busy).toBe(false);
    // What the client read is at most one read past the bound; the server could only fill the socket buffers.
    expect(r.bodyBytes).toBeLessThan(bound + 256 * 1024);
    expect(written).toBeLessThan(32 * 1024 * 1024);
  });

  it('fails with HEADERS_TIMEOUT when no head comes, and BODY_TIMEOUT when the body stalls', async () => {
    const s = await server((socket, req) => {
      if (req.body === '"stall-body"') socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
    });
    const a = agent({ readBufferBytes, headersTimeoutMs: 60, bodyTimeoutMs: 60 });
    const head = await exchange(a, s.origin, 5_000, post('/x', '"stall-head"'));
    expect(head.events).toEqual(['error:HEADERS_TIMEOUT']);
    expect(head.failure?.mayHaveReachedServer).toBe(true);
    const body = await exchange(a, s.origin, 5_000, post('/x', '"stall-body"'));
    expect(body.events).toEqual(['head', 'error:BODY_TIMEOUT']);
    expect(body.body).toBe('abc');
    await eventually(() => expect(s.closedByClient).toBe(2));
  });

  it('keeps a slow-drip body alive byte by byte until the call deadline (DEADLINE), not the body timeout', async () => {
    const s = await server((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n');
      const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write('.')), 10);
    });
    // A byte every 10 ms never lets the 250 ms body timeout fire; the 600 ms deadline does.
    const a = agent({ readBufferBytes, bodyTimeoutMs: 250 });
    const r = await exchange(a, s.origin, 600);
    expect(r.events).toEqual(['head', 'error:DEADLINE']);
    expect(r.bodyBytes).toBeGreaterThan(5);
  });

  it('replaces a kept-alive connection the server closed while idle; nothing is sent twice', async () => {
    const s = await server((socket) => {
      socket.write(okResponse('ok'));
      setTimeout(() => socket.end(), 20);
    });
    const a = agent({ readBufferBytes });
    expect((await exchange(a, s.origin)).events).toEqual(['head', 'end']);
    // The client notices the close on its own (no call needed) and forgets the socket.
    await eventually(() => expect(a.pool(s.origin).size).toBe(0));
    const second = await exchange(a, s.origin);
    expect(second.events).toEqual(['head', 'end']);
    expect(s.requests).toHaveLength(2);
    expect(s.connections).toBe(2);
  });

  it('does not resend a call whose reused connection the server closed as the request arrived (RESET, may have reached it)', async () => {
    // The keep-alive race no client can avoid: the server closes its idle socket just as a request comes in.
    const s = await server((socket, _req, i) => (i === 0 ? socket.write(okResponse('ok')) : socket.end()));
    const a = agent({ readBufferBytes });
    await exchange(a, s.origin);
    const second = await exchange(a, s.origin);
    expect(second.events).toEqual(['error:RESET']);
    expect(second.failure?.mayHaveReachedServer).toBe(true);
    await sleep(50);
    expect(s.requests).toHaveLength(2);
    expect(s.connections).toBe(1);
  });

  it('fails with RESET when the server resets mid-answer, and says the request may have arrived', async () => {
    const s = await server((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial');
      setTimeout(() => socket.resetAndDestroy(), 20);
    });
    const r = await exchange(agent({ readBufferBytes }), s.origin);
    expect(r.events).toEqual(['head', 'error:RESET']);
    expect(r.failure?.mayHaveReachedServer).toBe(true);
    expect(r.failure?.errno).toBe('ECONNRESET');
    expect(s.requests).toHaveLength(1);
  });

  it('fails with RESET when the server closes cleanly before the answer is complete', async () => {
    const s = await server((socket) => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npartial'));
    const r = await exchange(agent({ readBufferBytes }), s.origin);
    expect(r.events).toEqual(['head', 'error:RESET']);
  });
});

describe('Http1Pool: connecting', () => {
  it('fails with CONNECT_REFUSED when nothing listens; the request never reached a server', async () => {
    const s = await startRawServer(() => {});
    const origin = s.origin;
    await s.close();
    const a = agent();
    const r = await exchange(a, origin);
    expect(r.events).toEqual(['error:CONNECT_REFUSED']);
    expect(r.failure).toMatchObject({ mayHaveReachedServer: false, errno: 'ECONNREFUSED' });
    expect(a.pool(origin).size).toBe(0);
  });

  it('fails with CONNECT_TIMEOUT when the server never completes the TCP handshake (its accept queue is full)', async () => {
    // A child process listens with backlog 1 and blocks its event loop, so it never accepts:
    // two connects fill the kernel's accept queue and later SYNs are dropped (Linux).
    const child: ChildProcess = spawn(
      process.execPath,
      [
        '-e',
        `const s = require('node:net').createServer();
         s.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
           process.stdout.write(s.address().port + '\\n');
           setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20000), 20);
         });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    cleanups.push(() => child.kill('SIGKILL'));
    const port = await new Promise<number>((resolve) => child.stdout?.once('data', (d: Buffer) => resolve(Number(String(d).trim()))));
    await sleep(100);
    const fillers: Socket[] = [];
    cleanups.push(() => {
      for (const f of fillers) f.destroy();
    });
    for (let i = 0; i < 4; i++) {
      const f = connect(port, '127.0.0.1');
      f.on('error', () => {});
      fillers.push(f);
    }
    await sleep(100);
    const a = agent({ connectTimeoutMs: 150 });
    const r = await exchange(a, `http://127.0.0.1:${port}`, 5_000);
    expect(r.events).toEqual(['error:CONNECT_TIMEOUT']);
    expect(r.failure?.mayHaveReachedServer).toBe(false);
  });

  it('fails a call whose deadline passes while it waits for a connection with DEADLINE, not yet sent', async () => {
    const s = await server((socket) => setTimeout(() => socket.write(okResponse('slow')), 150));
    const a = agent({ connections: 1 });
    const pool = a.pool(s.origin);
    const first = new Recorder();
    const second = new Recorder();
    pool.request(first.slot, post(), 5_000);
    pool.request(second.slot, post(), 50);
    await second.done;
    expect(second.events).toEqual(['error:DEADLINE']);
    expect(second.failure?.mayHaveReachedServer).toBe(false);
    await first.done;
    expect(first.body).toBe('slow');
    expect(s.requests).toHaveLength(1);
  });
});

describe('Http1Pool: bounds and lifecycle', () => {
  it('opens at most `connections` sockets; the extra call waits its turn; past maxQueued → QUEUE_FULL, asynchronously', async () => {
    const held: Socket[] = [];
    const s = await server((socket) => held.push(socket));
    const a = agent({ connections: 2, maxQueued: 1 });
    const pool = a.pool(s.origin);
    const calls = Array.from({ length: 4 }, () => new Recorder());
    for (const c of calls) pool.request(c.slot, post(), 5_000);
    // Refusals never run inside request().
    expect(calls[3]?.events).toEqual([]);
    await calls[3]?.done;
    expect(calls[3]?.events).toEqual(['error:QUEUE_FULL']);
    expect(calls[3]?.failure?.mayHaveReachedServer).toBe(false);
    await eventually(() => expect(held).toHaveLength(2));
    expect(pool.size).toBe(2);
    expect(pool.pending).toBe(1);
    for (const socket of held.splice(0)) socket.write(okResponse('one'));
    await eventually(() => expect(held).toHaveLength(1));
    held[0]?.write(okResponse('two'));
    await Promise.all(calls.slice(0, 3).map((c) => c.done));
    expect(calls.slice(0, 3).map((c) => c.body)).toEqual(['one', 'one', 'two']);
    expect(s.connections).toBe(2);
    expect(s.requests).toHaveLength(3);
  });

  it('reaps idle connections after idleTimeoutMs (the server sees the close)', async () => {
    const s = await server((socket) => socket.write(okResponse('ok')));
    const a = agent({ idleTimeoutMs: 60 });
    await exchange(a, s.origin);
    expect(a.pool(s.origin).size).toBe(1);
    await eventually(() => expect(s.closedByClient).toBe(1));
    expect(a.pool(s.origin).size).toBe(0);
  });

  it("honours the server's Keep-Alive timeout minus the threshold (timeout=1 → not reused at all)", async () => {
    const s = await server((socket) => socket.write(okResponse('ok', 'keep-alive: timeout=1\r\n')));
    const a = agent({ idleTimeoutMs: 60_000, keepAliveThresholdMs: 1_000 });
    await exchange(a, s.origin);
    await eventually(() => expect(s.closedByClient).toBe(1));
    await exchange(a, s.origin);
    expect(s.connections).toBe(2);
  });

  it('abort() of a sent call destroys its socket and gives no more callbacks; of a queued one, removes it', async () => {
    const held: Socket[] = [];
    const s = await server((socket) => held.push(socket));
    const a = agent({ connections: 1 });
    const pool = a.pool(s.origin);
    const sent = new Recorder();
    const queued = new Recorder();
    pool.request(sent.slot, post(), 5_000);
    pool.request(queued.slot, post(), 5_000);
    await eventually(() => expect(held).toHaveLength(1));
    pool.abort(queued.slot);
    expect(pool.pending).toBe(0);
    pool.abort(sent.slot);
    await eventually(() => expect(s.closedByClient).toBe(1));
    await sleep(30);
    expect(sent.events).toEqual([]);
    expect(queued.events).toEqual([]);
    expect(s.requests).toHaveLength(1);
    // The slot is reusable at once.
    pool.request(sent.slot, post(), 5_000);
    await eventually(() => expect(held).toHaveLength(2));
  });

  it('finish() keeps the connection when the rest of the answer is already read, destroys it otherwise', async () => {
    const s = await server((socket, req) => {
      if (req.body === '"whole"') socket.write(okResponse('result-and-end'));
      else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nresult-only');
    });
    const a = agent();
    const pool = a.pool(s.origin);
    const finishOnFirstByte = (r: Recorder): void => {
      r.onBodyHook = (rec) => pool.finish(rec.slot);
    };
    const whole = new Recorder();
    finishOnFirstByte(whole);
    pool.request(whole.slot, post('/x', '"whole"'), 5_000);
    await sleep(50);
    expect(whole.events).toEqual(['head']);
    expect(pool.size).toBe(1);
    const cut = new Recorder();
    finishOnFirstByte(cut);
    pool.request(cut.slot, post('/x', '"cut"'), 5_000);
    await eventually(() => expect(s.closedByClient).toBe(1));
    expect(s.connections).toBe(1);
    expect(cut.events).toEqual(['head']);
  });

  it('does not reuse a connection whose response came before its request was fully written', async () => {
    // The server answers as soon as it has the head, without reading the 16 MiB body.
    const s = await startRawServer(() => {});
    cleanups.push(() => s.close());
    const big = Buffer.concat([Buffer.from(`POST /x HTTP/1.1\r\nhost: t\r\ncontent-length: ${16 * 1024 * 1024}\r\n\r\n`), Buffer.alloc(16 * 1024 * 1024, 'z')]);
    const a = agent();
    const r = new Recorder();
    a.pool(s.origin).request(r.slot, big, 5_000);
    await eventually(() => expect(s.sockets.size).toBe(1));
    const [socket] = [...s.sockets];
    socket?.pause();
    socket?.write(okResponse('early'));
    await r.done;
    expect(r.body).toBe('early');
    await eventually(() => expect(a.pool(s.origin).size).toBe(0));
  });

  it('close() lets in-flight calls finish and refuses new ones; destroy() fails what is pending with CLOSED', async () => {
    const held: Socket[] = [];
    const s = await server((socket) => held.push(socket));
    const a = testAgent();
    const pool = a.pool(s.origin);
    const inflight = new Recorder();
    pool.request(inflight.slot, post(), 5_000);
    await eventually(() => expect(held).toHaveLength(1));
    const closing = a.close();
    const late = new Recorder();
    pool.request(late.slot, post(), 5_000);
    await late.done;
    expect(late.events).toEqual(['error:CLOSED']);
    expect(late.failure?.mayHaveReachedServer).toBe(false);
    held[0]?.write(okResponse('finished'));
    await closing;
    expect(inflight.body).toBe('finished');
    expect(inflight.events).toEqual(['head', 'end']);

    const b = testAgent();
    const pending = new Recorder();
    b.pool(s.origin).request(pending.slot, post(), 5_000);
    await eventually(() => expect(held).toHaveLength(2));
    b.destroy();
    b.destroy();
    expect(pending.events).toEqual(['error:CLOSED']);
    expect(pending.failure?.mayHaveReachedServer).toBe(true);
  });
});
