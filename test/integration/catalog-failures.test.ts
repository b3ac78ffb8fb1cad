/**
 * Failure rules of the catalog lifecycle in portal mode (SPEC §4, §9 defect 1,
 * issue 3 "Failure rules"), against one gateway whose Portal names many
 * routes, each scripted to fail in its own way:
 * - per-route isolation: one route's failure never stops another route's
 *   change from landing in the same cycle;
 * - last-good manifests, and routes not replaced (or 503 when new) while a
 *   Tool Service never had a usable manifest;
 * - invalid registry entries reject only their route; an unreadable registry
 *   is a Portal failure and memory is kept;
 * - conflict and cap refusals are reported per route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixturePortal, type FixturePortal, type PortalMode } from '../fixtures/portal.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';
import { eventually } from '../helpers/eventually.js';

interface RouteReadiness {
  state: string;
  toolCount: number;
  revision: string | null;
  source: string | null;
  lastError: { code: string; message: string } | null;
  conflicts: string[];
}
interface Readiness {
  registry: { portalUp: boolean | null; portalError: string | null; revision: string | null };
  routes: Record<string, RouteReadiness>;
}

async function readiness(gw: Gateway): Promise<{ status: number; body: Readiness }> {
  const answer = await httpRequest(gw, '/health/ready');
  return { status: answer.status, body: answer.json as Readiness };
}

async function route(gw: Gateway, key: string): Promise<RouteReadiness> {
  const s = (await readiness(gw)).body.routes[key];
  if (s === undefined) throw new Error(`route ${key} missing from readiness`);
  return s;
}

/** Waits until the gateway has polled the Portal `n` more times (about n refresh cycles). */
async function cycles(portal: FixturePortal, n: number): Promise<void> {
  const target = portal.stats.requests + n;
  await eventually(() => expect(portal.stats.requests).toBeGreaterThanOrEqual(target));
}

/**
 * Asserts the route answers 503 + Retry-After with its reason code, for list
 * and call alike, and that readiness carries the detail matching `detail`.
 */
async function expectUnavailable(gw: Gateway, key: string, code: string, detail: RegExp): Promise<void> {
  for (const body of [rpc('tools/list'), rpc('tools/call', { name: 'x', arguments: {} })]) {
    const answer = await mcpPost(gw, key, body);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(rpcBody(answer).result).toBeUndefined();
    expect((rpcError(answer) as { data?: { reason?: string } }).data?.reason).toBe(code);
  }
  expect((await route(gw, key)).lastError?.message).toMatch(detail);
}

const MAX_TOOLS = 3;
type Entry = { id: string; baseUrl: string };

describe('catalog failure rules in portal mode (one gateway, many routes)', { timeout: 60_000 }, () => {
  const services: FixtureToolService[] = [];
  const svc: Record<string, FixtureToolService> = {};
  const manifests: Record<string, string[]> = {
    a1: ['a_one'],
    a2: ['a_two'],
    b: ['b_one'],
    k: ['k_one', 'k_two'],
    g1: ['g_one'],
    g2: ['g_two'],
    f1: ['f_one'],
    f2: ['f_two'],
    c1: ['dup'],
    c2: ['dup', 'c_other'],
    cap: ['t1', 't2', 't3', 't4'],
    cg: ['u1', 'u2', 'u3'],
  };
  let routes: Record<string, Entry[]>;
  let portal: FixturePortal;
  let gw: Gateway;
  let revision = 0;

  const entry = (id: string): Entry => ({ id, baseUrl: (svc[id] as FixtureToolService).url });
  const setTools = (id: string, names: string[]): void => {
    const s = svc[id] as FixtureToolService;
    s.setManifest(
      manifestFor(
        names.map((name) => ({ name })),
        id,
      ),
    );
    for (const name of names) s.setBehavior(`/tools/${name}`, { kind: 'echo' });
  };
  const publish = (): void => portal.setDocument({ revision: `rev-${++revision}`, routes });

  beforeAll(async () => {
    for (const [id, names] of Object.entries(manifests)) {
      const s = await startFixtureToolService();
      services.push(s);
      svc[id] = s;
      setTools(id, names);
    }
    // g2 and f2 never had a usable manifest.
    svc['g2']?.setManifestStatus(500);
    svc['f2']?.setManifestRaw('{"service": "f2", "tools": [');
    routes = {
      alpha: [entry('a1'), entry('a2')],
      beta: [entry('b')],
      keep: [entry('k')],
      grow: [entry('g1')],
      conflict: [entry('c1'), entry('c2')],
      cap: [entry('cap')],
      'cap-grow': [entry('cg')],
      ftp: [{ id: 'ftp', baseUrl: 'ftp://x' }],
      Bad_Key: [entry('b')],
    };
    portal = await startFixturePortal({ revision: 'rev-0', routes });
    gw = await startTestGateway({
      workers: { shards: 2 },
      catalog: {
        source: 'portal',
        portal: { url: portal.url, timeoutMs: 500 },
        refreshIntervalMs: 100,
        refreshJitterRatio: 0,
        manifestMaxBackoffMs: 0,
        manifestTimeoutMs: 1_000,
        maxToolsPerRoute: MAX_TOOLS,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await portal?.close();
    await Promise.all(services.map((s) => s.close()));
  }, 30_000);

  it('rejects only the routes whose registry entry is invalid; the others serve', async () => {
    const r = await readiness(gw);
    expect(r.status).toBe(200);
    const ftp = r.body.routes['ftp'];
    expect(ftp).toMatchObject({ state: 'refused', revision: null, toolCount: 0, lastError: { code: 'ROUTE_ENTRY_INVALID' } });
    expect(ftp?.lastError?.message).toMatch(/baseUrl/);
    await expectUnavailable(gw, 'ftp', 'ROUTE_ENTRY_INVALID', /ftp.*baseUrl/);
    expect(r.body.routes['Bad_Key']).toMatchObject({ state: 'refused', lastError: { code: 'ROUTE_ENTRY_INVALID' } });
    expect(r.body.routes['Bad_Key']?.lastError?.message).toMatch(/route key/);
    // Not a valid route key on the wire either: 400, never served.
    expect((await mcpPost(gw, 'Bad_Key', rpc('tools/list'))).status).toBe(400);
    expect((await listToolNames(gw, 'alpha')).sort()).toEqual(['a_one', 'a_two']);
    expect(await listToolNames(gw, 'beta')).toEqual(['b_one']);
    expect((await listToolNames(gw, 'keep')).sort()).toEqual(['k_one', 'k_two']);
    for (const k of ['alpha', 'beta', 'keep', 'grow', 'cap-grow']) expect(r.body.routes[k]).toMatchObject({ state: 'ready', source: 'portal', lastError: null });
  });

  it('refuses a route whose first catalog has a tool-name conflict, listing the conflicts', async () => {
    const s = await route(gw, 'conflict');
    expect(s).toMatchObject({ state: 'refused', revision: null, lastError: { code: 'TOOL_NAME_CONFLICT' } });
    expect(s.conflicts).toHaveLength(1);
    expect(s.conflicts[0]).toMatch(/"dup".*"c1".*"c2"/);
    await expectUnavailable(gw, 'conflict', 'TOOL_NAME_CONFLICT', /dup/);
  });

  it('refuses a route whose first catalog exceeds catalog.maxToolsPerRoute', async () => {
    const s = await route(gw, 'cap');
    expect(s).toMatchObject({ state: 'refused', revision: null, lastError: { code: 'TOOL_CAP_EXCEEDED' }, conflicts: [] });
    expect(s.lastError?.message).toMatch(/4 tools.*maxToolsPerRoute \(3\)/);
    await expectUnavailable(gw, 'cap', 'TOOL_CAP_EXCEEDED', /maxToolsPerRoute/);
  });

  it('keeps an existing route’s snapshot when a refresh would exceed the cap, reported per route, others unaffected', async () => {
    const before = await route(gw, 'cap-grow');
    setTools('cg', ['u1', 'u2', 'u3', 'u4']);
    setTools('b', ['b_one', 'b_cap']);
    await eventually(async () => expect(await listToolNames(gw, 'beta')).toContain('b_cap'));
    const s = await eventually(async () => {
      const x = await route(gw, 'cap-grow');
      expect(x).toMatchObject({ state: 'stale', lastError: { code: 'TOOL_CAP_EXCEEDED' } });
      return x;
    });
    expect(s.revision).toBe(before.revision);
    expect((await listToolNames(gw, 'cap-grow')).sort()).toEqual(['u1', 'u2', 'u3']);
    setTools('cg', ['u1', 'u2', 'u3']);
    await eventually(async () => expect((await route(gw, 'cap-grow')).state).toBe('ready'));
  });

  const BREAKS: Array<[string, () => void, RegExp, string | null]> = [
    ['manifest HTTP 500', () => svc['a1']?.setManifestStatus(500), /"a1".*HTTP 500/, null],
    ['manifest not JSON', () => svc['a1']?.setManifestRaw('{"service": "a1", "tools": ['), /"a1".*not JSON/, null],
    ['invalid manifest', () => svc['a1']?.setManifest(manifestFor([{ name: 'bad_schema', inputSchema: { type: 'string' } }], 'a1')), /"a1".*invalid/, null],
    ['tool-name conflict', () => svc['a2']?.setManifest(manifestFor([{ name: 'a_two' }, { name: 'a_one' }], 'a2')), /a_one/, 'TOOL_NAME_CONFLICT'],
  ];

  it.each(BREAKS)('isolates the routes: alpha fails (%s) while beta’s change lands in the same cycle', async (_what, breakAlpha, reason, code) => {
    const before = await route(gw, 'alpha');
    const fresh = `b_${Math.random().toString(36).slice(2, 8)}`;
    breakAlpha();
    setTools('b', ['b_one', fresh]);
    await eventually(async () => expect((await listToolNames(gw, 'beta')).sort()).toEqual(['b_one', fresh].sort()));
    const s = await eventually(async () => {
      const x = await route(gw, 'alpha');
      expect(x.state).toBe('stale');
      expect(x.lastError?.message).toMatch(reason);
      return x;
    });
    if (code !== null) {
      expect(s.lastError?.code).toBe(code);
      expect(s.conflicts.join(' ')).toMatch(/a_one.*a1.*a2/);
    }
    // alpha keeps serving what it served before.
    expect(s.revision).toBe(before.revision);
    expect((await listToolNames(gw, 'alpha')).sort()).toEqual(['a_one', 'a_two']);
    expect(toolResult(await callTool(gw, 'alpha', 'a_one', {})).isError).not.toBe(true);
    setTools('a1', ['a_one']);
    setTools('a2', ['a_two']);
    await eventually(async () => expect((await route(gw, 'alpha')).state).toBe('ready'));
  });

  it('serves a failing Tool Service’s last good manifest: tools unchanged, route stale with the error', async () => {
    const before = await route(gw, 'keep');
    svc['k']?.setManifestStatus(503);
    const s = await eventually(async () => {
      const x = await route(gw, 'keep');
      expect(x.state).toBe('stale');
      expect(x.lastError?.message).toMatch(/"k".*HTTP 503/);
      return x;
    });
    expect(s).toMatchObject({ revision: before.revision, toolCount: 2, source: 'portal' });
    await cycles(portal, 3);
    expect((await listToolNames(gw, 'keep')).sort()).toEqual(['k_one', 'k_two']);
    const call = toolResult(await callTool(gw, 'keep', 'k_two', { q: 1 }));
    expect(call.isError).not.toBe(true);
    expect(call.structuredContent).toMatchObject({ name: 'k_two' });
    setTools('k', ['k_one', 'k_two']);
    await eventually(async () => expect((await route(gw, 'keep')).state).toBe('ready'));
  });

  it('does not replace a route while one of its Tool Services never had a usable manifest; a new such route answers 503', async () => {
    const before = await route(gw, 'grow');
    // grow gains g2 (manifest always 500) while g1 gains a tool; fresh is a new route with f2 (broken JSON).
    routes = { ...routes, grow: [entry('g1'), entry('g2')], fresh: [entry('f1'), entry('f2')] };
    setTools('g1', ['g_one', 'g_new']);
    publish();
    const grow = await eventually(async () => {
      const x = await route(gw, 'grow');
      expect(x.state).toBe('stale');
      expect(x.lastError?.message).toMatch(/"g2".*HTTP 500/);
      return x;
    });
    expect(grow.revision).toBe(before.revision);
    const fresh = await eventually(async () => {
      const x = await route(gw, 'fresh');
      expect(x.state).toBe('refused');
      return x;
    });
    expect(fresh).toMatchObject({ revision: null, toolCount: 0 });
    expect(fresh.lastError?.message).toMatch(/"f2".*not JSON/);
    for (let i = 0; i < 3; i++) {
      expect(await listToolNames(gw, 'grow')).toEqual(['g_one']);
      await expectUnavailable(gw, 'fresh', 'MANIFEST_INVALID', /f2/);
      await cycles(portal, 1);
    }
    // Once the missing manifests exist, both routes are built from every Tool Service.
    setTools('g2', ['g_two']);
    setTools('f2', ['f_two']);
    await eventually(async () => expect((await listToolNames(gw, 'grow')).sort()).toEqual(['g_new', 'g_one', 'g_two']));
    await eventually(async () => expect((await listToolNames(gw, 'fresh')).sort()).toEqual(['f_one', 'f_two']));
    expect(await route(gw, 'fresh')).toMatchObject({ state: 'ready', toolCount: 2 });
  });

  const UNREADABLE: Array<[string, PortalMode, RegExp]> = [
    ['HTTP 500', { kind: 'status', status: 500 }, /HTTP 500/],
    ['not JSON', { kind: 'raw', body: '<html>oops</html>' }, /not JSON/],
    ['JSON that is not a registry', { kind: 'raw', body: '{"routes": []}' }, /not a v1 registry/],
    ['an empty object', { kind: 'raw', body: '{}' }, /not a v1 registry/],
    ['a hung connection', { kind: 'hang' }, /timed out/],
    ['a reset connection', { kind: 'destroy' }, /Portal/],
  ];

  it.each(UNREADABLE)('treats an unreadable registry (%s) as a Portal failure: memory kept, everything keeps serving', async (_what, mode, reason) => {
    const before = await readiness(gw);
    portal.setMode(mode);
    const r = await eventually(async () => {
      const x = await readiness(gw);
      expect(x.body.registry.portalUp).toBe(false);
      expect(x.body.registry.portalError).toMatch(reason);
      return x;
    });
    expect(r.status).toBe(200);
    expect(r.body.registry.revision).toBe(before.body.registry.revision);
    expect(Object.keys(r.body.routes).sort()).toEqual(Object.keys(before.body.routes).sort());
    // Routes keep refreshing from the registry in memory: a manifest change still lands.
    const fresh = `b_${Math.random().toString(36).slice(2, 8)}`;
    setTools('b', ['b_one', fresh]);
    await eventually(async () => expect(await listToolNames(gw, 'beta')).toContain(fresh));
    for (const k of ['alpha', 'keep', 'grow', 'fresh', 'cap-grow']) expect((await mcpPost(gw, k, rpc('tools/list'))).status).toBe(200);
    portal.setMode({ kind: 'ok' });
    await eventually(async () => expect((await readiness(gw)).body.registry).toMatchObject({ portalUp: true, portalError: null }));
  });
});
