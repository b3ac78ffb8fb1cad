/**
 * Catalog rules at start (SPEC §4, §8): a route whose first catalog is
 * refused — invalid, unreachable or conflicting manifests, or more tools than
 * `catalog.maxToolsPerRoute` — answers 503 with Retry-After and the reason,
 * readiness names it `refused` with its last error, and every other route is
 * ready and serves. Readiness is 200 after the initial load by default and
 * strict with `health.readiness: all-routes`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';
import { closedOrigin } from '../helpers/ports.js';

const MAX_TOOLS = 3;

interface RouteReadiness {
  state: string;
  shard: number;
  toolCount: number;
  revision: string | null;
  source: string | null;
  lastSuccess: string | null;
  lastError: { code: string; message: string; at: string } | null;
}

interface Readiness {
  status: string;
  routes: Record<string, RouteReadiness>;
}

async function readiness(gw: Gateway): Promise<{ status: number; body: Readiness }> {
  const answer = await httpRequest(gw, '/health/ready');
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  return { status: answer.status, body: answer.json as Readiness };
}

/** Fixture services and the routes they make up, shared by the describe blocks below. */
interface Setup {
  services: FixtureToolService[];
  routes: Record<string, Array<{ id: string; baseUrl: string }>>;
}

async function setUp(): Promise<Setup> {
  const services: FixtureToolService[] = [];
  const service = async (tools: Parameters<typeof manifestFor>[0]): Promise<FixtureToolService> => {
    const s = await startFixtureToolService();
    s.setManifest(manifestFor(tools));
    for (const t of tools) s.setBehavior(`/tools/${t.name}`, { kind: 'echo' });
    services.push(s);
    return s;
  };
  const good = await service([{ name: 'shared_tool' }, { name: 'lookup' }]);
  const atCap = await service([
    { name: 't1' },
    { name: 't2' },
    { name: 't3', version: '2.0.0' },
    // An inactive version is not exposed, so it does not count against the cap.
    { name: 't3', version: '1.0.0', active: false },
  ]);
  const overCap = await service([{ name: 't1' }, { name: 't2' }, { name: 't3' }, { name: 't4' }]);
  const conflictA = await service([{ name: 'shared_tool' }]);
  const conflictB = await service([{ name: 'shared_tool' }, { name: 'other' }]);
  const badSchema = await service([{ name: 'bad_schema', inputSchema: { type: 'string' } }]);
  const badJson = await service([]);
  badJson.setManifestRaw('{"service": "broken", "tools": [');
  const ssrf = await service([{ name: 'metadata', execution: { url: 'http://169.254.169.254/latest/meta-data' } }]);
  const manifest500 = await service([{ name: 'x' }]);
  manifest500.setManifestStatus(500);
  const dead = await closedOrigin();
  return {
    services,
    routes: {
      core: [{ id: 'good', baseUrl: good.url }],
      'at-cap': [{ id: 'at-cap', baseUrl: atCap.url }],
      'over-cap': [{ id: 'over-cap', baseUrl: overCap.url }],
      conflict: [
        { id: 'conflict-a', baseUrl: conflictA.url },
        { id: 'conflict-b', baseUrl: conflictB.url },
      ],
      'bad-schema': [{ id: 'bad-schema', baseUrl: badSchema.url }],
      'bad-json': [{ id: 'bad-json', baseUrl: badJson.url }],
      ssrf: [{ id: 'ssrf', baseUrl: ssrf.url }],
      'manifest-500': [{ id: 'manifest-500', baseUrl: manifest500.url }],
      unreachable: [{ id: 'dead', baseUrl: dead }],
    },
  };
}

/** Refused routes, the error code readiness must report and what the reason must say. */
const REFUSED: Array<[string, string, RegExp]> = [
  ['over-cap', 'TOOL_CAP_EXCEEDED', /4 tools.*catalog\.maxToolsPerRoute \(3\)/],
  ['conflict', 'TOOL_NAME_CONFLICT', /shared_tool.*conflict-a.*conflict-b/],
  ['bad-schema', 'MANIFEST_INVALID', /bad-schema.*invalid/],
  ['bad-json', 'MANIFEST_INVALID', /bad-json.*not JSON/],
  ['ssrf', 'MANIFEST_INVALID', /ssrf.*execution.*169\.254\.169\.254/],
  ['manifest-500', 'MANIFEST_UNREACHABLE', /manifest-500.*HTTP 500/],
  ['unreachable', 'MANIFEST_UNREACHABLE', /dead.*ECONNREFUSED/],
];

describe('catalog rules at start (readiness: initial-load, the default)', () => {
  let setup: Setup;
  let gw: Gateway;

  beforeAll(async () => {
    setup = await setUp();
    gw = await startTestGateway({ catalog: { maxToolsPerRoute: MAX_TOOLS, static: { routes: setup.routes } } });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(setup?.services.map((s) => s.close()) ?? []);
  });

  it('is ready (200) after the initial load although some routes are refused', async () => {
    const r = await readiness(gw);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ready');
    expect(Object.keys(r.body.routes).sort()).toEqual(Object.keys(setup.routes).sort());
    expect(gw.readiness().status).toBe(200);
  });

  it('serves the healthy routes, including one with exactly catalog.maxToolsPerRoute tools', async () => {
    const r = await readiness(gw);
    for (const [route, count] of [
      ['core', 2],
      ['at-cap', MAX_TOOLS],
    ] as const) {
      const status = r.body.routes[route] as RouteReadiness;
      expect(status.state).toBe('ready');
      expect(status.toolCount).toBe(count);
      expect(status.revision).toEqual(expect.any(String));
      expect(status.source).toBe('static');
      expect(status.lastSuccess).toEqual(expect.any(String));
      expect(status.lastError).toBeNull();
    }
    expect((await listToolNames(gw, 'core')).sort()).toEqual(['lookup', 'shared_tool']);
    expect((await listToolNames(gw, 'at-cap')).sort()).toEqual(['t1', 't2', 't3']);
    // The same tool name in two routes is fine; the one in "core" is callable.
    const call = await callTool(gw, 'core', 'shared_tool', { ok: 1 });
    expect(toolResult(call).isError).not.toBe(true);
  });

  it.each(REFUSED)('route %s is refused in readiness with %s and the reason', async (route, code, reason) => {
    const status = (await readiness(gw)).body.routes[route] as RouteReadiness;
    expect(status.state).toBe('refused');
    expect(status.toolCount).toBe(0);
    expect(status.revision).toBeNull();
    expect(status.lastError?.code).toBe(code);
    expect(status.lastError?.message).toMatch(reason);
    expect(status.lastError?.at).toEqual(expect.any(String));
  });

  it.each(REFUSED)('route %s answers 503 + Retry-After with its reason code and no internal detail, never a list or 404', async (route, code, detail) => {
    for (const body of [rpc('tools/list', undefined, 1), rpc('tools/call', { name: 'shared_tool', arguments: {} }, 2), rpc('ping', undefined, 3)]) {
      const answer = await mcpPost(gw, route, body);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      const error = rpcError(answer);
      expect(error.message).toContain(route);
      expect(error.message).toContain(code);
      expect((error as { data?: { reason?: string } }).data?.reason).toBe(code);
      // The detail (addresses, upstream errors) stays in readiness and logs (server.exposeErrorDetails is off).
      expect(error.message).not.toMatch(detail);
      expect(rpcBody(answer).result).toBeUndefined();
    }
    // The healthy route is unaffected.
    expect(await listToolNames(gw, 'core')).toHaveLength(2);
  });
});

describe('catalog rules at start (readiness: all-routes)', () => {
  let setup: Setup;
  let strict: Gateway;

  beforeAll(async () => {
    setup = await setUp();
    strict = await startTestGateway({ catalog: { maxToolsPerRoute: MAX_TOOLS, static: { routes: setup.routes } }, health: { readiness: 'all-routes' } });
  });
  afterAll(async () => {
    await strict?.close();
    await Promise.all(setup?.services.map((s) => s.close()) ?? []);
  });

  // The 200 side of `all-routes` (every route has a snapshot) is in call-context.test.ts, whose gateway is strict too.
  it('is 503 while any route lacks a usable snapshot, and still serves the healthy routes', async () => {
    const r = await readiness(strict);
    expect(r.status).toBe(503);
    expect(r.body.status).toBe('not_ready');
    expect(r.body.routes['core']?.state).toBe('ready');
    expect(r.body.routes['over-cap']?.state).toBe('refused');
    expect(await listToolNames(strict, 'core')).toHaveLength(2);
    expect((await mcpPost(strict, 'conflict', rpc('tools/list'))).status).toBe(503);
  });
});
