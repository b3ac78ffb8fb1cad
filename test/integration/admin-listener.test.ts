/**
 * The admin listener and the readiness floor (issue 13: `/metrics` and
 * `/health/ready` — which shows internal manifest URLs and errors — were
 * served on the MCP port; with `health.readiness: initial-load` readiness
 * said 200 even when every route was refused).
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { waitUntil } from '../helpers/eventually.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';

let svc: FixtureToolService;
const gateways: Gateway[] = [];
beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'slow' }]));
  svc.setBehavior('/tools/echo', { kind: 'echo' });
  svc.setBehavior('/tools/slow', { kind: 'hold', then: { kind: 'echo' } });
});
afterAll(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close(0)));
  await svc?.close();
});

async function gateway(overrides: Record<string, unknown>, options: { waitForInitialLoad?: boolean } = {}): Promise<Gateway> {
  const gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'fixture', baseUrl: svc.url }] } } }, ...overrides }, options);
  gateways.push(gw);
  return gw;
}

async function admin(gw: Gateway, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${gw.adminPort}${path}`);
  return { status: res.status, text: await res.text() };
}

describe('server.admin.port set', () => {
  it.each([1, 2])('serves health and metrics there, and only /mcp/* on the traffic port (%i acceptor threads)', async (acceptors) => {
    const gw = await gateway({ server: { admin: { port: 0 } }, workers: { acceptors } });
    expect(gw.adminPort).toEqual(expect.any(Number));
    expect(gw.adminPort).not.toBe(gw.port);
    expect(await admin(gw, '/health/live')).toEqual({ status: 200, text: '{"status":"live"}' });
    const ready = await admin(gw, '/health/ready');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toMatchObject({ status: 'ready', routes: { core: { state: 'ready' } } });
    const metrics = await admin(gw, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('mcp_gateway_routes{state="ready"} 1');
    expect((await admin(gw, '/mcp/core')).status).toBe(404);
    // The traffic port: MCP only; fresh connections reach every acceptor thread.
    for (let i = 0; i < 6; i++) {
      for (const path of ['/health/live', '/health/ready', '/metrics']) {
        expect((await httpRequest(gw, path, { headers: { connection: 'close' } })).status, path).toBe(404);
      }
      expect((await mcpPost(gw, 'core', rpc('tools/list'), { connection: 'close' })).status).toBe(200);
    }
  });

  it('keeps answering probes during the drain: readiness 503 "draining", liveness 200, after the traffic listener closed', async () => {
    const gw = await gateway({ server: { admin: { port: 0 }, drainDelayMs: 0, drainTimeoutMs: 60_000 } });
    svc.hold();
    try {
      // A call held open keeps the drain in its timeout phase: traffic listener closed, admin listener still up.
      const heldBefore = svc.held;
      const pending = mcpPost(gw, 'core', rpc('tools/call', { name: 'slow', arguments: {} }));
      await waitUntil(() => svc.held > heldBefore, 'the call is held by the Tool Service');
      const drained = gw.drain();
      await waitUntil(
        () =>
          fetch(`http://127.0.0.1:${gw.port}/mcp/core`).then(
            () => false,
            () => true,
          ),
        'the traffic listener closed',
      );
      const ready = await admin(gw, '/health/ready');
      expect(ready.status).toBe(503);
      expect(JSON.parse(ready.text)).toMatchObject({ status: 'draining' });
      expect((await admin(gw, '/health/live')).status).toBe(200);
      expect((await admin(gw, '/metrics')).status).toBe(200);
      svc.release();
      expect((await pending).status).toBe(200);
      await drained;
      // Closed last, with everything else.
      await expect(fetch(`http://127.0.0.1:${gw.adminPort}/health/live`)).rejects.toThrow();
    } finally {
      svc.release();
    }
  });

  it('refuses to start when the admin port is in use, naming server.admin.port (LISTEN_FAILED)', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const err = await startTestGateway({ server: { admin: { port: taken } }, catalog: { static: { routes: { core: [{ id: 'fixture', baseUrl: svc.url }] } } } }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'LISTEN_FAILED' });
      expect((err as Error).message).toMatch(/^server\.admin\.port: 127\.0\.0\.1:\d+ is already in use/);
    } finally {
      await new Promise<void>((r) => blocker.close(() => r()));
    }
  });
});

describe('server.admin.port unset (the default)', () => {
  it('serves health and metrics on the traffic port, as before', async () => {
    const gw = await gateway({});
    expect(gw.adminPort).toBeNull();
    expect((await httpRequest(gw, '/health/live')).status).toBe(200);
    expect((await httpRequest(gw, '/health/ready')).status).toBe(200);
    expect((await httpRequest(gw, '/metrics')).status).toBe(200);
  });
});

describe('readiness floor (health.minUsableRoutes)', () => {
  it('initial-load: a replica whose every route is refused is not ready (it was 200 before)', async () => {
    const gw = await gateway({ catalog: { static: { routes: { a: [{ id: 'down', baseUrl: 'http://127.0.0.1:1' }], b: [{ id: 'down', baseUrl: 'http://127.0.0.1:1' }] } } } });
    const ready = await httpRequest(gw, '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.json).toMatchObject({ status: 'not_ready', initialLoadComplete: true, usableRoutes: 0, routes: { a: { state: 'refused' }, b: { state: 'refused' } } });
  });

  it('minUsableRoutes 0 keeps the old rule', async () => {
    const gw = await gateway({ health: { minUsableRoutes: 0 }, catalog: { static: { routes: { a: [{ id: 'down', baseUrl: 'http://127.0.0.1:1' }] } } } });
    expect((await httpRequest(gw, '/health/ready')).status).toBe(200);
  });
});
