/**
 * A Tool Service that flaps, for the memory-after-load workload (issue 10):
 * once started it cycles through three phases of `--phase-ms` each —
 *
 *   answer  → manifests and tool calls answered like the echo service
 *   refuse  → the listening socket is closed and every open connection
 *             destroyed: new connections are refused (ECONNREFUSED)
 *   timeout → connections accepted, requests read, nothing answered; the
 *             held requests are destroyed when the phase ends
 *
 * so the gateway exercises its failure paths (connect errors, tool and
 * manifest timeouts, refresh back-off) under load. Plain node:http, so it
 * runs on any Node.
 *
 * Usage: `node dist/bench/flapping-tool-service.js --port P --control-port C
 * [--phase-ms 2000] [--tool-timeout-ms 1000]`. Both ports must be given (the
 * service port is re-bound after each refuse phase). The control port never
 * flaps: `POST /flap/start`, `POST /flap/stop` (back to answer),
 * `POST /flap/set?phase=refuse` (one fixed phase, no cycling),
 * `GET /flap/stats`. Prints `listening <port> control <port>` once accepting.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { generateManifest, type Manifest } from './catalog.js';

const MAX_QUERY_TOOLS = 500;
const PHASES = ['answer', 'refuse', 'timeout'] as const;
type Phase = (typeof PHASES)[number];

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    'control-port': { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    'phase-ms': { type: 'string', default: '2000' },
    'tool-timeout-ms': { type: 'string', default: '1000' },
  },
});
const int = (name: string, raw: string | undefined, min: number, max: number): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: expected an integer ${min}–${max}, got ${JSON.stringify(raw)}`);
  return n;
};
const port = int('port', values.port, 1, 65535);
const controlPort = int('control-port', values['control-port'], 1, 65535);
const phaseMs = int('phase-ms', values['phase-ms'], 50, 600_000);
const toolTimeoutMs = int('tool-timeout-ms', values['tool-timeout-ms'], 1, 600_000);

const manifests = new Map<number, Buffer>();
function manifestBody(tools: number): Buffer {
  let body = manifests.get(tools);
  if (body === undefined) {
    const m: Manifest = generateManifest(tools, { serviceId: 'flapping' });
    // Short tool deadlines, so the timeout phase ends calls in seconds, not the default 30 s.
    for (const t of m.tools) t.timeoutMs = toolTimeoutMs;
    body = Buffer.from(JSON.stringify(m));
    manifests.set(tools, body);
  }
  return body;
}
const okBody = Buffer.from('{"content":[{"type":"text","text":"ok"}]}');

let phase: Phase = 'answer';
let cycles = 0;
let timer: NodeJS.Timeout | undefined;
const stats = { answered: 0, held: 0, refusedPhases: 0 };
const held = new Set<ServerResponse>();
const sockets = new Set<Socket>();

function serve(req: IncomingMessage, res: ServerResponse): void {
  // Read the whole body before anything else, like a real service.
  req.resume();
  req.on('end', () => {
    if (phase === 'timeout') {
      stats.held++;
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/manifest') {
      const tools = Number(url.searchParams.get('tools') ?? '50');
      if (!Number.isInteger(tools) || tools < 0 || tools > MAX_QUERY_TOOLS) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"bad tools"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(manifestBody(tools));
    } else if (req.method === 'POST' && url.pathname.startsWith('/tools/')) {
      stats.answered++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(okBody);
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    }
  });
}

const service = createServer({ keepAliveTimeout: 30_000 }, serve);
service.on('connection', (s: Socket) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
const listen = (): Promise<void> =>
  new Promise((resolve, reject) => {
    service.once('error', reject);
    service.listen(port, values.host, () => {
      service.off('error', reject);
      resolve();
    });
  });

async function enter(next: Phase): Promise<void> {
  const previous = phase;
  if (next === previous) return;
  phase = next;
  if (previous === 'timeout') for (const res of held) res.destroy();
  if (next === 'refuse') {
    stats.refusedPhases++;
    service.close();
    for (const s of sockets) s.destroy();
  } else if (previous === 'refuse') {
    await listen();
  }
}

function schedule(): void {
  timer = setTimeout(() => {
    const next = PHASES[(PHASES.indexOf(phase) + 1) % PHASES.length] ?? 'answer';
    if (next === 'answer') cycles++;
    enter(next).then(schedule, (err: unknown) => {
      console.error(`flapping service: cannot re-listen on ${port}: ${(err as Error).message}`);
      process.exit(1);
    });
  }, phaseMs);
}

const control = createServer((req, res) => {
  const reply = (): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ phase, cycles, ...stats }));
  if (req.method === 'POST' && req.url === '/flap/start') {
    if (timer === undefined) schedule();
    reply();
  } else if (req.method === 'POST' && req.url === '/flap/stop') {
    clearTimeout(timer);
    timer = undefined;
    enter('answer').then(reply, (err: unknown) => void res.writeHead(500).end((err as Error).message));
  } else if (req.method === 'POST' && req.url?.startsWith('/flap/set?phase=') === true) {
    // One fixed phase, no cycling: what a test uses to check each phase on its own.
    const next = req.url.slice('/flap/set?phase='.length) as Phase;
    if (!PHASES.includes(next)) {
      res.writeHead(400).end(`phase must be one of ${PHASES.join(', ')}`);
      return;
    }
    clearTimeout(timer);
    timer = undefined;
    enter(next).then(reply, (err: unknown) => void res.writeHead(500).end((err as Error).message));
  } else if (req.method === 'GET' && req.url === '/flap/stats') {
    reply();
  } else {
    res.writeHead(404).end();
  }
});

await listen();
control.listen(controlPort, values.host, () => console.log(`listening ${port} control ${controlPort}`));
const stop = (): void => process.exit(0);
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
