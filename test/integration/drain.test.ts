/**
 * The drain a rollout needs (issue 13; docs/operations.md "Drain sequence"):
 * on SIGTERM readiness turns 503 at once while traffic is still served for
 * `server.drainDelayMs`, then the listeners close, open requests get
 * `server.drainTimeoutMs`, answers carry `Connection: close`, calls still
 * running at the deadline are answered `SHUTTING_DOWN`, a second signal
 * forces the exit. The signal tests run the real CLI (signals, process.exit);
 * the others drive `Gateway.drain()` in-process.
 */
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { eventually, waitUntil } from '../helpers/eventually.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { startGatewayProcess } from '../helpers/gateway-process.js';
import { rpcError } from '../helpers/mcp.js';

const RUNS = 10;
const WORKERS = 8;
/** Bound of each load worker's loop (it normally stops much earlier: at the first refused connection). */
const MAX_CALLS_PER_WORKER = 3_000;
/** Long calls in flight at the signal, answered one by one after the listeners closed (the runtime branch's exit-race scenario). */
const HELD_CALLS = 50;
const DELAY_MS = 300;
const TIMEOUT_MS = 5_000;
/** The CLI's own margin after delay + timeout (cli.ts EXIT_MARGIN_MS). */
const EXIT_MARGIN_MS = 5_000;

let svc: FixtureToolService;
beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'quick' }, { name: 'held' }]));
  svc.setBehavior('/tools/quick', { kind: 'delay', ms: 2, then: { kind: 'echo' } });
  svc.setBehavior('/tools/held', { kind: 'hold', then: { kind: 'echo' } });
});
afterAll(async () => {
  await svc?.close();
});

const routes = (): string => JSON.stringify({ core: [{ id: 'fixture', baseUrl: svc.url }] });

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One `tools/call` through `agent`; rejects with the socket error when there is no complete answer. */
function call(port: number, agent: Agent | false, tool: string, id: number): Promise<Answer> {
  const body = JSON.stringify(rpc('tools/call', { name: tool, arguments: { id } }, id));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp/core',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const answeredOk = (a: Answer): boolean => a.status === 200 && a.body.includes('"result"') && !a.body.includes('"isError":true');

/**
 * A kube-proxy / router stand-in: polls readiness like a kubelet and, once it
 * fails, sends no new connection to this replica (the endpoint was removed).
 * Connections already open stay where they are — which is why every answer
 * during the drain says `Connection: close`.
 */
function endpointRemoval(port: number): { removed(): boolean; stop(): void } {
  let removed = false;
  let stopped = false;
  void (async () => {
    while (!stopped && !removed) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/health/ready`, { headers: { connection: 'close' } });
        await r.arrayBuffer();
        if (r.status === 503) removed = true;
      } catch {
        removed = true; // nothing listens any more
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return { removed: () => removed, stop: () => (stopped = true) };
}

describe('SIGTERM under load (CLI)', () => {
  /** One run: load on WORKERS keep-alive connections + HELD_CALLS long calls, SIGTERM mid-load; returns the tally. */
  async function run(): Promise<{ lost: string[]; okAfterSignal: number; moved: number; refusedAfterClose: boolean; exitCode: number | null; exitMs: number }> {
    svc.hold();
    const gw = await startGatewayProcess({
      MCP_GATEWAY_CATALOG_STATIC_ROUTES: routes(),
      MCP_GATEWAY_SERVER_DRAIN_DELAY_MS: String(DELAY_MS),
      MCP_GATEWAY_SERVER_DRAIN_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    const lb = endpointRemoval(gw.port);
    try {
      const lost: string[] = [];
      let ok = 0;
      let okAfterSignal = 0;
      let moved = 0;
      let signalled = false;
      let id = 0;
      const heldBefore = svc.held;
      const held = Array.from({ length: HELD_CALLS }, () =>
        call(gw.port, false, 'held', ++id).then(
          (a) => (answeredOk(a) ? undefined : lost.push(`held call answered ${a.status} ${a.body}`)),
          (err: Error) => lost.push(`held call: ${err.message}`),
        ),
      );
      await waitUntil(() => svc.held - heldBefore >= HELD_CALLS, 'every held call reached the Tool Service');
      const worker = async (): Promise<void> => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        let needsConnection = true;
        try {
          for (let i = 0; i < MAX_CALLS_PER_WORKER; i++) {
            // A new connection goes to another replica once the endpoint is gone: this worker's share moved.
            if (needsConnection && lb.removed()) {
              moved++;
              return;
            }
            const n = ++id;
            try {
              const a = await call(gw.port, agent, 'quick', n);
              needsConnection = a.headers.connection === 'close';
              if (!answeredOk(a)) lost.push(`call ${n} answered ${a.status} ${a.body}`);
              else {
                ok++;
                if (signalled) okAfterSignal++;
              }
            } catch (err) {
              lost.push(`call ${n}: ${(err as Error).message}`);
              return;
            }
          }
        } finally {
          agent.destroy();
        }
      };
      const workers = Array.from({ length: WORKERS }, () => worker());
      await waitUntil(() => ok >= 50 || lost.length > 0, 'the load is running');
      const signalAt = performance.now();
      gw.child.kill('SIGTERM');
      signalled = true;
      // The held calls are released only once the listeners closed: they outlive the delay and still get their answers.
      await waitUntil(() => gw.stdout().includes('listeners closed'), 'the listeners closed');
      const refusedAfterClose = await call(gw.port, false, 'quick', ++id).then(
        () => false,
        (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED',
      );
      // One by one, each answer in its own event-loop turns, as calls of different lengths end.
      for (let i = 0; i < HELD_CALLS && svc.releaseOne(); i++) await new Promise((r) => setTimeout(r, 2));
      svc.release();
      await Promise.all([...workers, ...held]);
      const exit = await gw.exited;
      return { lost, okAfterSignal, moved, refusedAfterClose, exitCode: exit.code, exitMs: exit.at - signalAt };
    } finally {
      lb.stop();
      gw.kill();
    }
  }

  it(`loses no accepted request and exits 0 within delay + timeout, ${RUNS} runs in a row`, { timeout: 300_000 }, async () => {
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await run());
    expect(runs.flatMap((r) => r.lost)).toEqual([]);
    expect(runs.map((r) => r.exitCode)).toEqual(Array.from({ length: RUNS }, () => 0));
    for (const r of runs) {
      // Calls were still answered after the signal (the delay); every worker's next connection went elsewhere; the listener closed.
      expect(r.okAfterSignal).toBeGreaterThan(0);
      expect(r.moved).toBe(WORKERS);
      expect(r.refusedAfterClose).toBe(true);
      expect(r.exitMs).toBeLessThan(DELAY_MS + TIMEOUT_MS + EXIT_MARGIN_MS);
    }
  });
});

describe('second signal (CLI)', () => {
  // Two acceptor threads: ending a thread that still holds uWS sockets aborts the process (SIGABRT), so the forced exit closes them first.
  it('a second SIGTERM exits at once (status 1) instead of waiting for the drain, with two acceptor threads', { timeout: 60_000 }, async () => {
    svc.hold();
    const gw = await startGatewayProcess({
      MCP_GATEWAY_CATALOG_STATIC_ROUTES: routes(),
      MCP_GATEWAY_WORKERS_ACCEPTORS: '2',
      MCP_GATEWAY_SERVER_DRAIN_DELAY_MS: '0',
      MCP_GATEWAY_SERVER_DRAIN_TIMEOUT_MS: '120000',
    });
    try {
      // Idle keep-alive connections on both threads (fresh connections spread over them), still open at the forced exit.
      const agents = Array.from({ length: 6 }, () => new Agent({ keepAlive: true }));
      for (const [i, agent] of agents.entries()) expect((await call(gw.port, agent, 'quick', 100 + i)).status).toBe(200);
      const heldBefore = svc.held;
      const pending = call(gw.port, false, 'held', 1).catch((err: Error) => err);
      await waitUntil(() => svc.held > heldBefore, 'the call reached the Tool Service');
      gw.child.kill('SIGTERM');
      await waitUntil(() => gw.stderr().includes('SIGTERM received, draining'), 'the drain started');
      gw.child.kill('SIGTERM');
      const exit = await gw.exited;
      for (const agent of agents) agent.destroy();
      expect(exit).toMatchObject({ code: 1, signal: null });
      expect(gw.stderr()).toContain('received again: exiting without waiting for the drain');
      // The held call was still held: the exit did not wait for it (nor for the 120 s drain timeout).
      expect(svc.held).toBeGreaterThan(heldBefore);
      await pending;
    } finally {
      gw.kill();
      svc.release();
    }
  });
});

describe('drain steps (in-process)', () => {
  const gateways: Gateway[] = [];
  afterAll(async () => {
    svc.release();
    await Promise.all(gateways.map((g) => g.close(0)));
  });

  async function gateway(server: Record<string, unknown>, workers: Record<string, unknown> = {}): Promise<Gateway> {
    const gw = await startTestGateway({ server, workers, catalog: { static: { routes: { core: [{ id: 'fixture', baseUrl: svc.url }] } } } });
    gateways.push(gw);
    return gw;
  }

  it('readiness is 503 on every acceptor thread during the delay while tools/call is still served there', async () => {
    const gw = await gateway({ drainDelayMs: 60_000 }, { acceptors: 2 });
    expect((await httpRequest(gw, '/health/ready')).status).toBe(200);
    const drained = gw.drain();
    // Fresh connections spread over both acceptor threads (SO_REUSEPORT): every one says 503 and still serves calls.
    for (let i = 0; i < 20; i++) {
      const ready = await httpRequest(gw, '/health/ready', { headers: { connection: 'close' } });
      expect(ready.status).toBe(503);
      expect((ready.json as { status: string; draining: boolean }).status).toBe('draining');
      const answer = await mcpPost(gw, 'core', rpc('tools/call', { name: 'quick', arguments: {} }, i), { connection: 'close' });
      expect(answer.status).toBe(200);
    }
    expect(gw.readiness().status).toBe(503);
    void drained;
  });

  it('answers during the drain carry Connection: close, and a kept-alive connection takes nothing new after its answer', async () => {
    const gw = await gateway({ drainDelayMs: 60_000 });
    const socket = await open(gw.port);
    try {
      const before = await exchange(socket, gw.port, 1);
      expect(before.head).not.toMatch(/^connection: close/im);
      void gw.drain();
      await eventually(() => expect(gw.readiness().status).toBe(503));
      const during = await exchange(socket, gw.port, 2);
      expect(during.head).toMatch(/^HTTP\/1\.1 200/);
      expect(during.head).toMatch(/^connection: close/im);
      // The server closes the connection after that answer: a third request on it gets nothing.
      await waitUntil(() => socket.readableEnded || socket.destroyed, 'the server closed the kept-alive connection');
    } finally {
      socket.destroy();
    }
  });

  it('a call still running at the deadline is answered SHUTTING_DOWN (-32603, never cut) and cancelled upstream', async () => {
    svc.hold();
    const gw = await gateway({ drainDelayMs: 0, drainTimeoutMs: 300 });
    const before = svc.requests.length;
    const heldBefore = svc.held;
    const pending = mcpPost(gw, 'core', rpc('tools/call', { name: 'held', arguments: {} }, 'late-1'));
    await waitUntil(() => svc.held > heldBefore, 'the call reached the Tool Service');
    await gw.drain();
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect((answer.json as { id: string }).id).toBe('late-1');
    const error = rpcError(answer);
    expect(error.code).toBe(-32603);
    expect(error.data).toEqual({ reason: 'SHUTTING_DOWN' });
    expect(answer.headers.get('connection')).toBe('close');
    // The Tool Service request was aborted, not left running.
    await waitUntil(() => svc.requests[before]?.closed === true, 'the upstream request was closed');
    expect(svc.requests[before]?.complete).toBe(false);
  });
});

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** One tools/call on an open keep-alive socket; resolves with the head of the answer once its body arrived. */
function exchange(socket: Socket, port: number, id: number): Promise<{ head: string; body: string }> {
  const body = JSON.stringify(rpc('tools/call', { name: 'quick', arguments: {} }, id));
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (chunk: Buffer): void => {
      buf += chunk.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.slice(0, end);
      const length = Number(/^content-length: (\d+)/im.exec(head)?.[1] ?? -1);
      if (buf.length - end - 4 < length) return;
      socket.off('data', onData);
      resolve({ head, body: buf.slice(end + 4, end + 4 + length) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`POST /mcp/core HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json\r\n` + `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}
