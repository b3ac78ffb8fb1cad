/**
 * Recovery without Redis (SPEC §4, §8, issue 3):
 * - cold start with the Portal down and no Redis: readiness 503 and every
 *   valid route key 503 + Retry-After (the route may well exist: not 404)
 *   until the Portal answers; then the routes serve and readiness turns 200;
 * - the refresh worker crashing: shards keep serving their snapshots the
 *   whole time, the worker is restarted, and later Portal changes arrive.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixturePortal, type FixturePortal } from '../fixtures/portal.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';
import { eventually } from '../helpers/eventually.js';

interface Readiness {
  status: string;
  initialLoadComplete: boolean;
  registry: { portalUp: boolean | null; portalError: string | null; revision: string | null };
  routes: Record<string, { state: string; source: string | null; revision: string | null }>;
}

async function readiness(gw: Gateway): Promise<{ status: number; body: Readiness }> {
  const answer = await httpRequest(gw, '/health/ready');
  return { status: answer.status, body: answer.json as Readiness };
}

/** Waits until the gateway has polled the Portal `n` more times (about n refresh cycles). */
async function cycles(portal: FixturePortal, n: number): Promise<void> {
  const target = portal.stats.requests + n;
  await eventually(() => expect(portal.stats.requests).toBeGreaterThanOrEqual(target));
}

describe('cold start with the Portal down and no Redis, then a refresh-worker crash', { timeout: 60_000 }, () => {
  const services: Record<string, FixtureToolService> = {};
  let routes: Record<string, Array<{ id: string; baseUrl: string }>>;
  let portal: FixturePortal;
  let gw: Gateway;

  const setTools = (id: string, names: string[]): void => {
    const s = services[id] as FixtureToolService;
    s.setManifest(
      manifestFor(
        names.map((name) => ({ name })),
        id,
      ),
    );
    for (const name of names) s.setBehavior(`/tools/${name}`, { kind: 'echo' });
  };

  beforeAll(async () => {
    for (const [id, names] of Object.entries({ core: ['employee_search'], process: ['order_status', 'invoice'], extra: ['extra_tool'] })) {
      services[id] = await startFixtureToolService();
      setTools(id, names);
    }
    routes = {
      core: [{ id: 'core', baseUrl: (services['core'] as FixtureToolService).url }],
      process: [{ id: 'process', baseUrl: (services['process'] as FixtureToolService).url }],
    };
    portal = await startFixturePortal({ revision: 'r1', routes });
    portal.setMode({ kind: 'status', status: 503 });
    gw = await startTestGateway(
      {
        workers: { shards: 2 },
        catalog: { source: 'portal', portal: { url: portal.url, timeoutMs: 500 }, refreshIntervalMs: 100, refreshJitterRatio: 0, manifestMaxBackoffMs: 0 },
      },
      { waitForInitialLoad: false },
    );
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await portal?.close();
    await Promise.all(Object.values(services).map((s) => s.close()));
  }, 30_000);

  it('answers 503 + Retry-After for any valid route key and readiness 503 while the Portal is down', async () => {
    await eventually(async () => expect((await readiness(gw)).body.registry.portalUp).toBe(false), 30_000);
    await cycles(portal, 3);
    const r = await readiness(gw);
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ status: 'not_ready', initialLoadComplete: false });
    expect(r.body.registry.portalError).toMatch(/HTTP 503/);
    // Named by the (unreachable) registry or not: the gateway cannot know yet, so never 404.
    for (const key of ['core', 'process', 'anything-else']) {
      for (const body of [rpc('tools/list'), rpc('tools/call', { name: 'employee_search', arguments: {} })]) {
        const answer = await mcpPost(gw, key, body);
        expect(answer.status).toBe(503);
        expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(rpcBody(answer).result).toBeUndefined();
        expect(rpcError(answer).message).toContain(key);
      }
    }
    // The route-key grammar still applies.
    expect((await mcpPost(gw, 'Not_A_Key', rpc('tools/list'))).status).toBe(400);
  });

  it('serves the routes and turns ready (200) when the Portal comes back', async () => {
    portal.setMode({ kind: 'ok' });
    await eventually(async () => expect((await readiness(gw)).status).toBe(200));
    await gw.initialLoad();
    const r = await readiness(gw);
    expect(r.body).toMatchObject({ status: 'ready', initialLoadComplete: true, registry: { portalUp: true, revision: 'r1' } });
    expect(r.body.routes['core']).toMatchObject({ state: 'ready', source: 'portal' });
    expect(r.body.routes['process']).toMatchObject({ state: 'ready', source: 'portal' });
    expect(await listToolNames(gw, 'core')).toEqual(['employee_search']);
    expect((await listToolNames(gw, 'process')).sort()).toEqual(['invoice', 'order_status']);
    expect(toolResult(await callTool(gw, 'process', 'invoice', { n: 1 })).isError).not.toBe(true);
    // Now the directory is known: a key the Portal does not name is 404.
    expect((await mcpPost(gw, 'anything-else', rpc('tools/list'))).status).toBe(404);
  });

  it('keeps serving the old snapshots while the refresh worker is dead, restarts it, and later changes arrive', async () => {
    const failures: string[] = [];
    let served = 0;
    let stop = false;
    // Two sequential clients hammer both routes (list + call) for the whole crash/restart.
    const client = async (key: string, tool: string): Promise<void> => {
      while (!stop) {
        const list = await mcpPost(gw, key, rpc('tools/list'));
        const names = ((rpcBody(list).result as { tools?: Array<{ name: string }> } | undefined)?.tools ?? []).map((t) => t.name);
        if (list.status !== 200 || !names.includes(tool)) failures.push(`${key} tools/list: HTTP ${list.status} ${list.text.slice(0, 200)}`);
        const call = await callTool(gw, key, tool, {});
        if (call.status !== 200 || rpcBody(call).error !== undefined || toolResult(call).isError === true) failures.push(`${key} tools/call: HTTP ${call.status} ${call.text.slice(0, 200)}`);
        served += 2;
      }
    };
    const clients = [client('core', 'employee_search'), client('process', 'order_status')];
    try {
      await gw.crashRefreshWorker();
      // While it is down, the Portal and a Tool Service change.
      routes = { ...routes, extra: [{ id: 'extra', baseUrl: (services['extra'] as FixtureToolService).url }] };
      portal.setDocument({ revision: 'r2', routes });
      setTools('core', ['employee_search', 'payroll']);
      await eventually(async () => expect(await listToolNames(gw, 'extra')).toEqual(['extra_tool']));
      await eventually(async () => expect((await listToolNames(gw, 'core')).sort()).toEqual(['employee_search', 'payroll']));

      // And it survives a second crash as well.
      const before = served;
      await gw.crashRefreshWorker();
      setTools('process', ['order_status', 'invoice', 'refund']);
      await eventually(async () => expect((await listToolNames(gw, 'process')).sort()).toEqual(['invoice', 'order_status', 'refund']));
      expect(served).toBeGreaterThan(before);
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(0);
    const r = await readiness(gw);
    expect(r.status).toBe(200);
    expect(r.body.registry).toMatchObject({ portalUp: true, revision: 'r2' });
    for (const k of ['core', 'process', 'extra']) expect(r.body.routes[k]).toMatchObject({ state: 'ready', source: 'portal' });
  });
});
