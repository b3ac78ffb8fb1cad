/**
 * Portal mode (SPEC §4, §7 "Portal registry", issue 3): routes come from a
 * real Portal and serve `tools/list` / `tools/call`; an unchanged registry
 * costs a 304; routes added or removed by the Portal appear and disappear
 * without a restart; a registry that would remove most routes at once is
 * suspect and ignored (readiness + metric) unless the operator raised
 * `catalog.maxRouteRemovalRatio`; `list-changed` fires only when a route's
 * tools changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixturePortal, type FixturePortal } from '../fixtures/portal.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { eventually } from '../helpers/eventually.js';

interface RouteReadiness {
  state: string;
  toolCount: number;
  revision: string | null;
  source: string | null;
  lastSuccess: string | null;
  lastError: { code: string; message: string } | null;
}
interface Readiness {
  status: string;
  registry: { portalUp: boolean | null; suspect: string | null; revision: string | null; source: string | null };
  routes: Record<string, RouteReadiness>;
}

async function readiness(gw: Gateway): Promise<{ status: number; body: Readiness }> {
  const answer = await httpRequest(gw, '/health/ready');
  return { status: answer.status, body: answer.json as Readiness };
}

async function metric(gw: Gateway, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const answer = await httpRequest(gw, '/metrics');
  expect(answer.status).toBe(200);
  return sampleValue(parsePrometheus(answer.text), name, labels);
}

/** Waits until the gateway has polled the Portal `n` more times (i.e. finished about n refresh cycles). */
async function cycles(portal: FixturePortal, n: number): Promise<void> {
  const target = portal.stats.requests + n;
  await eventually(() => expect(portal.stats.requests).toBeGreaterThanOrEqual(target));
}

function portalMode(portal: FixturePortal, catalog: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    workers: { shards: 2 },
    catalog: { source: 'portal', portal: { url: portal.url, timeoutMs: 500 }, refreshIntervalMs: 100, refreshJitterRatio: 0, manifestMaxBackoffMs: 0, ...catalog },
  };
}

async function toolService(names: string[], services: FixtureToolService[]): Promise<FixtureToolService> {
  const s = await startFixtureToolService();
  s.setManifest(manifestFor(names.map((name) => ({ name }))));
  for (const name of names) s.setBehavior(`/tools/${name}`, { kind: 'echo' });
  services.push(s);
  return s;
}

describe('portal mode: serving, 304, live route changes, list-changed', { timeout: 60_000 }, () => {
  const services: FixtureToolService[] = [];
  let portal: FixturePortal;
  let gw: Gateway;
  let hr: FixtureToolService;
  let erp: FixtureToolService;
  let info: FixtureToolService;
  let routes: Record<string, Array<{ id: string; baseUrl: string; manifestPath?: string }>>;

  beforeAll(async () => {
    hr = await toolService(['employee_search', 'lookup'], services);
    erp = await toolService(['order_status'], services);
    info = await toolService(['news'], services);
    routes = {
      core: [{ id: 'hr-tools', baseUrl: hr.url, manifestPath: '/manifest' }],
      process: [{ id: 'erp-tools', baseUrl: erp.url }],
    };
    portal = await startFixturePortal({ revision: 'r1', routes });
    gw = await startTestGateway(portalMode(portal));
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await portal?.close();
    await Promise.all(services.map((s) => s.close()));
  }, 30_000);

  it('serves tools/list and tools/call for the routes the Portal names', async () => {
    expect((await listToolNames(gw, 'core')).sort()).toEqual(['employee_search', 'lookup']);
    expect(await listToolNames(gw, 'process')).toEqual(['order_status']);
    const call = await callTool(gw, 'core', 'employee_search', { query: 'kim' });
    expect(call.status).toBe(200);
    const result = toolResult(call);
    expect(result.isError).not.toBe(true);
    expect(result.structuredContent).toMatchObject({ name: 'employee_search', arguments: { query: 'kim' } });
    expect(hr.requests.at(-1)?.headers['x-mcp-route']).toBe('core');
    // A route the Portal does not name is unknown.
    expect((await mcpPost(gw, 'information', rpc('tools/list'))).status).toBe(404);
  });

  it('reports every route in readiness: ready, tool count, revision, source portal, last success', async () => {
    const r = await readiness(gw);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.routes).sort()).toEqual(['core', 'process']);
    for (const [route, count] of [
      ['core', 2],
      ['process', 1],
    ] as const) {
      const s = r.body.routes[route] as RouteReadiness;
      expect(s.state).toBe('ready');
      expect(s.toolCount).toBe(count);
      expect(s.revision).toEqual(expect.any(String));
      expect(s.source).toBe('portal');
      expect(Number.isNaN(Date.parse(s.lastSuccess ?? ''))).toBe(false);
      expect(s.lastError).toBeNull();
    }
    expect(r.body.registry).toMatchObject({ portalUp: true, revision: 'r1', source: 'portal', suspect: null });
    expect(await metric(gw, 'mcp_gateway_portal_up')).toBe(1);
  });

  it('polls an unchanged registry with If-None-Match and gets 304', async () => {
    const before = portal.stats.notModified;
    await eventually(() => expect(portal.stats.notModified).toBeGreaterThanOrEqual(before + 2));
    expect((await readiness(gw)).body.registry.revision).toBe('r1');
  });

  it('emits list-changed when a route’s tools change, and not for cycles that produce the same catalog', async () => {
    const events: Array<{ route: string; revision: string; served: string | null | undefined; list: Promise<string> }> = [];
    const onChange = (route: string, revision: string): void => {
      // What a push channel would do on this event: tell clients, who then fetch tools/list again.
      const served = (JSON.parse(gw.readiness().body) as Readiness).routes[route]?.revision;
      const list = mcpPost(gw, route, rpc('tools/list')).then((a) => a.text);
      events.push({ route, revision, served, list });
    };
    gw.events.on('list-changed', onChange);
    try {
      await cycles(portal, 4);
      expect(events).toEqual([]);
      // A new registry document (new revision, new ETag) that leaves every route's tools alone.
      portal.setDocument({ revision: 'r1-same-routes', routes });
      await eventually(async () => expect((await readiness(gw)).body.registry.revision).toBe('r1-same-routes'));
      await cycles(portal, 3);
      expect(events).toEqual([]);

      const before = (await readiness(gw)).body.routes['core']?.revision;
      hr.setManifest(manifestFor([{ name: 'employee_search', description: 'Find employees (v2).' }, { name: 'lookup' }]));
      await eventually(() => expect(events.length).toBeGreaterThan(0));
      const event = events[0] as (typeof events)[number];
      expect(event.route).toBe('core');
      expect(event.revision).not.toBe(before);
      await eventually(async () => expect((await readiness(gw)).body.routes['core']?.revision).toBe(event.revision));
      const list = rpcBody(await mcpPost(gw, 'core', rpc('tools/list'))).result as { tools: Array<{ name: string; description: string }> };
      expect(list.tools.find((t) => t.name === 'employee_search')?.description).toBe('Find employees (v2).');

      // Nothing changes any more: no further events.
      await cycles(portal, 4);
      expect(events).toHaveLength(1);

      // When the event fires, the new catalog is already what the route serves: a client told
      // "list changed" that fetches tools/list at once gets the new list, not the old one.
      const listedAtEvent = (await event.list).includes('Find employees (v2).') ? 'new list' : 'old list';
      expect({ servedRevision: event.served, listedAtEvent }).toEqual({ servedRevision: event.revision, listedAtEvent: 'new list' });
    } finally {
      gw.events.off('list-changed', onChange);
    }
  });

  it('starts serving a route the Portal adds, without a restart', async () => {
    const first = await mcpPost(gw, 'information', rpc('tools/list'));
    expect([404, 503]).toContain(first.status);
    routes = { ...routes, information: [{ id: 'info-tools', baseUrl: info.url }] };
    portal.setDocument({ revision: 'r2', routes });
    const seen = new Set<number>();
    await eventually(async () => {
      const answer = await mcpPost(gw, 'information', rpc('tools/list'));
      seen.add(answer.status);
      expect(answer.status).toBe(200);
    });
    // Before the cycle that adds it: 404 (unknown) or 503 (known, catalog loading); never anything else.
    expect([...seen].filter((s) => s !== 200 && s !== 404 && s !== 503)).toEqual([]);
    expect(await listToolNames(gw, 'information')).toEqual(['news']);
    expect(toolResult(await callTool(gw, 'information', 'news', {})).isError).not.toBe(true);
    const s = (await readiness(gw)).body.routes['information'];
    expect(s).toMatchObject({ state: 'ready', toolCount: 1, source: 'portal' });
  });

  it('stops serving a route the Portal removes (404) and drops it from readiness', async () => {
    const { process: _removed, ...rest } = routes;
    routes = rest;
    portal.setDocument({ revision: 'r3', routes });
    await eventually(async () => expect((await mcpPost(gw, 'process', rpc('tools/list'))).status).toBe(404));
    const answer = await callTool(gw, 'process', 'order_status', {});
    expect(answer.status).toBe(404);
    expect(rpcError(answer).message).toContain('process');
    const r = await readiness(gw);
    expect(Object.keys(r.body.routes).sort()).toEqual(['core', 'information']);
    expect(r.status).toBe(200);
    // The others are untouched.
    expect((await listToolNames(gw, 'core')).sort()).toEqual(['employee_search', 'lookup']);
    expect(await listToolNames(gw, 'information')).toEqual(['news']);
  });

  it('ignores a registry that would remove 3 of 4 routes (default maxRouteRemovalRatio 0.5): all serve, readiness and metric say suspect', async () => {
    const shared = await toolService(['ping_tool'], services);
    routes = { ...routes, a: [{ id: 'shared', baseUrl: shared.url }], b: [{ id: 'shared', baseUrl: shared.url }] };
    portal.setDocument({ revision: 'four', routes });
    await eventually(async () => {
      for (const k of ['a', 'b']) expect(await listToolNames(gw, k)).toEqual(['ping_tool']);
    });
    const four = Object.keys(routes).sort();
    expect(four).toHaveLength(4);
    expect(await metric(gw, 'mcp_gateway_registry_suspect')).toBe(0);
    portal.setDocument({ revision: 'only-core', routes: { core: routes['core'] } });
    const suspect = await eventually(async () => {
      const s = (await readiness(gw)).body.registry.suspect;
      expect(s).toEqual(expect.any(String));
      return s as string;
    });
    expect(suspect).toMatch(/only-core/);
    expect(suspect).toMatch(/3 of 4/);
    expect(suspect).toMatch(/maxRouteRemovalRatio/);
    expect(await metric(gw, 'mcp_gateway_registry_suspect')).toBe(1);
    // The guard holds cycle after cycle.
    await cycles(portal, 3);
    const r = await readiness(gw);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.routes).sort()).toEqual(four);
    expect(r.body.registry.revision).toBe('four');
    for (const k of four) expect((await mcpPost(gw, k, rpc('tools/list'))).status).toBe(200);
    expect(await listToolNames(gw, 'a')).toEqual(['ping_tool']);

    // A sane document clears the suspicion.
    portal.setDocument({ revision: 'four-again', routes });
    await eventually(async () => expect((await readiness(gw)).body.registry).toMatchObject({ suspect: null, revision: 'four-again' }));
    expect(await metric(gw, 'mcp_gateway_registry_suspect')).toBe(0);
  });
});

describe('mass-removal guard raised by the operator (maxRouteRemovalRatio 0.8)', { timeout: 60_000 }, () => {
  const services: FixtureToolService[] = [];
  let fourRoutes: Record<string, Array<{ id: string; baseUrl: string }>>;
  let portal: FixturePortal;
  let gw: Gateway;

  beforeAll(async () => {
    const shared = await toolService(['ping_tool'], services);
    fourRoutes = Object.fromEntries(['a', 'b', 'c', 'd'].map((k) => [k, [{ id: 'shared', baseUrl: shared.url }]]));
    portal = await startFixturePortal({ revision: 'four', routes: fourRoutes });
    gw = await startTestGateway(portalMode(portal, { maxRouteRemovalRatio: 0.8 }));
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await portal?.close();
    await Promise.all(services.map((s) => s.close()));
  }, 30_000);

  it('obeys a registry that removes 3 of 4 routes at once', async () => {
    for (const k of Object.keys(fourRoutes)) expect(await listToolNames(gw, k)).toEqual(['ping_tool']);
    portal.setDocument({ revision: 'only-a', routes: { a: fourRoutes['a'] } });
    await eventually(async () => {
      for (const k of ['b', 'c', 'd']) expect((await mcpPost(gw, k, rpc('tools/list'))).status).toBe(404);
    });
    const r = await readiness(gw);
    expect(Object.keys(r.body.routes)).toEqual(['a']);
    expect(r.body.registry).toMatchObject({ suspect: null, revision: 'only-a' });
    expect(await listToolNames(gw, 'a')).toEqual(['ping_tool']);
    expect(await metric(gw, 'mcp_gateway_registry_suspect')).toBe(0);
  });
});
