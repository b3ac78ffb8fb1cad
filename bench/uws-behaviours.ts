/**
 * Raw-HTTP behaviours of the uWebSockets.js build this Node loads (the
 * table in ADR-0001 comes from running it on each runtime):
 *
 *   node dist/bench/uws-behaviours.js [--timeouts]
 *
 * Starts a plain uWS app (no gateway code: what is measured is uWS's) that
 * answers every request `200 <method> <url> cl=<content-length header> body=<n>`,
 * sends each probe on a fresh raw connection, and prints one line per probe:
 * what came back (status lines, bytes after the head) and when the server
 * closed the connection. `--timeouts` adds the slow probes (idle connection,
 * slowloris, idle keep-alive; up to 70 s each).
 */
import { connect } from 'node:net';
import { parseArgs } from 'node:util';
import { loadedUwsBuild, runtimeDescription } from '../src/main/uws.js';
import { uWS } from './uws.js';

interface Probe {
  name: string;
  /** Written one after another, `gapMs` apart. */
  writes: Array<string | Buffer>;
  gapMs?: number;
  /** Give up after this long (the connection is then reported as still open). */
  waitMs?: number;
}

interface Outcome {
  statuses: string[];
  closedAfterMs: number | null;
  bytes: number;
  tail: string;
}

const { values } = parseArgs({ options: { timeouts: { type: 'boolean', default: false } } });

const app = uWS.App();
app.any('/*', (res, req) => {
  const method = req.getMethod();
  const url = req.getUrl();
  const cl = req.getHeader('content-length');
  let aborted = false;
  let size = 0;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((chunk, isLast) => {
    size += chunk.byteLength;
    if (!isLast || aborted) return;
    res.cork(() => res.writeStatus('200 OK').end(`${method} ${url} cl=${cl} body=${size}`));
  });
});

function probe(port: number, p: Probe): Promise<Outcome> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = received.toString('latin1');
      resolve({
        statuses: [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => m[1] ?? ''),
        closedAfterMs: closed ? Date.now() - started : null,
        bytes: received.length,
        tail: text.slice(text.lastIndexOf('\r\n\r\n') + 4).slice(0, 60),
      });
    };
    const timer = setTimeout(() => finish(false), p.waitMs ?? 3_000);
    socket.on('data', (c: Buffer) => {
      received = Buffer.concat([received, c]);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.on('connect', async () => {
      for (const w of p.writes) {
        if (socket.destroyed) return;
        socket.write(w);
        if (p.gapMs) await new Promise((r) => setTimeout(r, p.gapMs));
      }
    });
  });
}

const body = '{"a":1}';
const big = (n: number): string => 'x'.repeat(n);
const probes: Probe[] = [
  { name: 'HTTP/1.1 GET (control)', writes: ['GET /a HTTP/1.1\r\nHost: h\r\n\r\n'] },
  { name: 'HTTP/1.0 GET', writes: ['GET /a HTTP/1.0\r\nHost: h\r\n\r\n'], waitMs: 15_000 },
  {
    name: 'two Content-Length (7, then 40) + hidden request',
    writes: [`POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\nContent-Length: 40\r\n\r\n${body}GET /hidden HTTP/1.1\r\nHost: h\r\n\r\n`],
  },
  { name: 'two Host headers', writes: ['GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'] },
  {
    name: 'Content-Length + Transfer-Encoding',
    writes: [`POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n${body}\r\n0\r\n\r\n`],
  },
  { name: 'control char (\\x01) in a header value', writes: ['GET /a HTTP/1.1\r\nHost: h\r\nX-A: a\x01b\r\n\r\n'], waitMs: 15_000 },
  { name: 'DEL (\\x7f) in a header value', writes: ['GET /a HTTP/1.1\r\nHost: h\r\nX-A: a\x7fb\r\n\r\n'], waitMs: 15_000 },
  { name: 'HEAD (app ends with a body)', writes: ['HEAD /a HTTP/1.1\r\nHost: h\r\n\r\n'] },
  { name: 'extension method FOO', writes: ['FOO /a HTTP/1.1\r\nHost: h\r\n\r\n'], waitMs: 15_000 },
  { name: 'garbage request line', writes: ['\x16\x03\x01garbage\r\n\r\n'], waitMs: 15_000 },
  { name: '8 KB header block, one write', writes: [`GET /a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ${big(8_000)}\r\n\r\n`] },
  {
    name: '8 KB header block, two writes 50 ms apart',
    writes: [`GET /a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ${big(4_000)}`, `${big(4_000)}\r\n\r\n`],
    gapMs: 50,
    waitMs: 15_000,
  },
  { name: '20 KB header block, one write', writes: [`GET /a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ${big(20_000)}\r\n\r\n`], waitMs: 15_000 },
  {
    name: '20 KB header block, two writes 50 ms apart',
    writes: [`GET /a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ${big(10_000)}`, `${big(10_000)}\r\n\r\n`],
    gapMs: 50,
    waitMs: 15_000,
  },
  { name: '60 header lines', writes: [`GET /a HTTP/1.1\r\nHost: h\r\n${Array.from({ length: 60 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`], waitMs: 15_000 },
  { name: 'absolute-form target', writes: ['GET http://h/a HTTP/1.1\r\nHost: h\r\n\r\n'], waitMs: 15_000 },
];
if (values.timeouts) {
  probes.push(
    { name: 'idle connection (nothing sent)', writes: [], waitMs: 70_000 },
    {
      name: 'slowloris (1 header byte / s)',
      writes: ['GET /a HTTP/1.1\r\n', ...'Host: hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh'.split('')],
      gapMs: 1_000,
      waitMs: 70_000,
    },
    { name: 'idle keep-alive after an answer', writes: ['GET /a HTTP/1.1\r\nHost: h\r\n\r\n'], waitMs: 70_000 },
  );
}

app.listen('127.0.0.1', 0, async (token) => {
  if (!token) throw new Error('cannot listen');
  const port = uWS.us_socket_local_port(token);
  console.log(`# ${runtimeDescription()}; ${loadedUwsBuild()?.release}; UWS_HTTP_MAX_HEADERS_SIZE=${process.env['UWS_HTTP_MAX_HEADERS_SIZE']}`);
  // Run the slow probes together: each has its own connection.
  const results = await Promise.all(probes.map((p) => probe(port, p)));
  probes.forEach((p, i) => {
    const r = results[i] as Outcome;
    const closed = r.closedAfterMs === null ? 'still open' : `closed after ${(r.closedAfterMs / 1000).toFixed(1)} s`;
    console.log(`${p.name.padEnd(52)} | status ${r.statuses.join(',') || 'none'} | ${closed} | ${r.bytes} B | ${JSON.stringify(r.tail)}`);
  });
  uWS.us_listen_socket_close(token);
  process.exit(0);
});
