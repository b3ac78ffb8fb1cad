/**
 * Redis copies (SPEC §4 "Cold start with the Portal down", §7 "Redis", §9
 * defect 2, issue 3 "Redis"), with a real redis-server:
 * - after a build, `{ns}:portal-registry` and `{ns}:route:{key}` hold the
 *   registry document and every route snapshot;
 * - a cold start with the Portal down and every manifest failing warm-starts
 *   EVERY named route from Redis (source `redis`), and moves to `portal` when
 *   the Portal is back;
 * - corrupt, checksum-mismatched or foreign entries are ignored and
 *   reported, never served; the other routes still warm-start;
 * - Redis killed mid-run: refresh and serving go on; stores resume after a restart.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixturePortal, type FixturePortal } from '../fixtures/portal.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, rpcError, toolResult } from '../helpers/mcp.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { eventually } from '../helpers/eventually.js';

interface RouteReadiness {
  state: string;
  toolCount: number;
  revision: string | null;
  source: string | null;
  lastError: { code: string; message: string } | null;
}
interface Readiness {
  registry: { portalUp: boolean | null; redisUp: boolean | null; redisProblems: Record<string, string>; revision: string | null; source: string | null };
  routes: Record<string, RouteReadiness>;
}

async function readiness(gw: Gateway): Promise<{ status: number; text: string; body: Readiness }> {
  const answer = await httpRequest(gw, '/health/ready');
  return { status: answer.status, text: answer.text, body: answer.json as Readiness };
}

async function metrics(gw: Gateway): Promise<ReturnType<typeof parsePrometheus>> {
  const answer = await httpRequest(gw, '/metrics');
  expect(answer.status).toBe(200);
  return parsePrometheus(answer.text);
}

/** A short-lived raw Redis connection (no retries, no offline queue), for checking what the gateway stored. */
async function withRedis<T>(url: string, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

const ROUTES = ['core', 'process', 'information', 'ops', 'sales'] as const;
const TOOLS: Record<string, string[]> = {
  core: ['employee_search', 'org_chart'],
  process: ['order_status'],
  information: ['news', 'weather', 'holidays'],
  ops: ['deploy_status'],
  sales: ['quote'],
};
const uid = Math.random().toString(36).slice(2, 8);

describe('Redis copies, warm start of every named route, corrupt entries, Redis killed', { timeout: 60_000 }, () => {
  const services: Record<string, FixtureToolService> = {};
  let redis: TestRedis;
  let portal: FixturePortal;
  let registryRoutes: Record<string, Array<{ id: string; baseUrl: string }>>;
  const nsWarm = `test-warm-${uid}`;
  const nsBad = `test-bad-${uid}`;
  const firstRevisions: Record<string, string> = {};
  const seededRevisions: Record<string, string> = {};
  let seed: Gateway | undefined;
  let gwWarm: Gateway | undefined;
  let gwBad: Gateway | undefined;

  const config = (ns: string): Record<string, unknown> => ({
    workers: { shards: 2 },
    catalog: { source: 'portal', portal: { url: portal.url, timeoutMs: 500 }, refreshIntervalMs: 100, refreshJitterRatio: 0, manifestMaxBackoffMs: 0 },
    redis: { url: redis.url, namespace: ns },
  });
  const setTools = (route: string, names: string[], tag = 'seeded'): void => {
    const s = services[route] as FixtureToolService;
    s.setManifest(
      manifestFor(
        names.map((name) => ({ name, description: `${name} ${tag}` })),
        `${route}-tools`,
      ),
    );
    for (const name of names) s.setBehavior(`/tools/${name}`, { kind: 'echo' });
  };

  beforeAll(async () => {
    redis = await startRedis();
    for (const k of ROUTES) {
      services[k] = await startFixtureToolService();
      setTools(k, TOOLS[k] as string[], 'first');
    }
    registryRoutes = Object.fromEntries(ROUTES.map((k) => [k, [{ id: `${k}-tools`, baseUrl: (services[k] as FixtureToolService).url }]]));
    portal = await startFixturePortal({ revision: 'seed-1', routes: registryRoutes });
    seed = await startTestGateway(config(nsWarm));
    const r = await readiness(seed);
    for (const k of ROUTES) firstRevisions[k] = r.body.routes[k]?.revision as string;
  }, 60_000);
  afterAll(async () => {
    await Promise.all([seed?.close(), gwWarm?.close(), gwBad?.close()]);
    await portal?.close();
    await Promise.all(Object.values(services).map((s) => s.close()));
    await redis?.stop();
  }, 30_000);

  it('stores the registry document and every route snapshot after a build (format 1 / "MCPS", the tools inside)', async () => {
    const gw = seed as Gateway;
    // Every route's catalog changes (descriptions) and the Portal publishes a new revision.
    for (const k of ROUTES) setTools(k, TOOLS[k] as string[], 'seeded');
    portal.setDocument({ revision: 'seed-2', routes: registryRoutes });
    await eventually(async () => {
      const r = await readiness(gw);
      expect(r.body.registry.revision).toBe('seed-2');
      for (const k of ROUTES) expect(r.body.routes[k]?.revision).not.toBe(firstRevisions[k]);
    });
    await eventually(() =>
      withRedis(redis.url, async (c) => {
        const copy = JSON.parse((await c.get(`${nsWarm}:portal-registry`)) ?? 'null') as { format: number; document: unknown } | null;
        expect(copy).toEqual({ format: 1, storedAt: expect.any(String), document: { revision: 'seed-2', routes: registryRoutes } });
        for (const k of ROUTES) {
          const bytes = (await c.getBuffer(`${nsWarm}:route:${k}`)) ?? Buffer.alloc(0);
          expect(bytes.subarray(0, 4).toString('latin1')).toBe('MCPS');
          for (const tool of TOOLS[k] as string[]) expect(bytes.includes(Buffer.from(`${tool} seeded`))).toBe(true);
        }
      }),
    );
    const r = await readiness(gw);
    for (const k of ROUTES) seededRevisions[k] = r.body.routes[k]?.revision as string;
    await gw.close();
    seed = undefined;
  });

  it('warm-starts EVERY named route from Redis when the Portal is down and every manifest fails', async () => {
    // The second namespace gets a copy of the first, with three entries spoiled (used by the next test).
    await withRedis(redis.url, async (c) => {
      await c.set(`${nsBad}:portal-registry`, (await c.getBuffer(`${nsWarm}:portal-registry`)) as Buffer);
      for (const k of ROUTES) await c.set(`${nsBad}:route:${k}`, (await c.getBuffer(`${nsWarm}:route:${k}`)) as Buffer);
      await c.set(`${nsBad}:route:core`, Buffer.from('\x00\xffnot a snapshot at all, just garbage bytes\x13\x37'));
      const flipped = Buffer.from((await c.getBuffer(`${nsWarm}:route:process`)) as Buffer);
      const at = flipped.length - 12;
      flipped[at] = (flipped[at] as number) ^ 0x01;
      await c.set(`${nsBad}:route:process`, flipped);
      // A well-formed snapshot stored under the wrong key (route "core" at information's key).
      await c.set(`${nsBad}:route:information`, (await c.getBuffer(`${nsWarm}:route:core`)) as Buffer);
    });
    portal.setMode({ kind: 'status', status: 503 });
    for (const s of Object.values(services)) s.setManifestStatus(500);
    [gwWarm, gwBad] = await Promise.all([startTestGateway(config(nsWarm), { waitForInitialLoad: false }), startTestGateway(config(nsBad), { waitForInitialLoad: false })]);
    const gw = gwWarm;
    const r = await eventually(async () => {
      const x = await readiness(gw);
      expect(x.status).toBe(200);
      for (const k of ROUTES) expect(x.body.routes[k]?.source).toBe('redis');
      return x;
    }, 30_000);
    expect(r.body.registry).toMatchObject({ portalUp: false, source: 'redis', revision: 'seed-2' });
    for (const k of ROUTES) {
      const s = r.body.routes[k] as RouteReadiness;
      expect(['ready', 'stale']).toContain(s.state);
      expect(s.revision).toBe(seededRevisions[k]);
      expect(s.toolCount).toBe((TOOLS[k] as string[]).length);
      expect((await listToolNames(gw, k)).sort()).toEqual([...(TOOLS[k] as string[])].sort());
    }
    // Execution addresses come from the warm snapshot too.
    const call = toolResult(await callTool(gw, 'information', 'weather', { city: 'Seoul' }));
    expect(call.isError).not.toBe(true);
    expect(call.structuredContent).toMatchObject({ name: 'weather' });
  });

  it('ignores corrupt, checksum-mismatched and foreign Redis snapshots (503, never served); the other routes warm-start', async () => {
    const gw = gwBad as Gateway;
    const corrupt = ['core', 'process', 'information'];
    const r = await eventually(async () => {
      const x = await readiness(gw);
      expect(x.status).toBe(200);
      for (const k of ['ops', 'sales']) expect(x.body.routes[k]?.source).toBe('redis');
      return x;
    }, 30_000);
    expect((await listToolNames(gw, 'ops')).sort()).toEqual([...(TOOLS['ops'] as string[])].sort());
    expect(await listToolNames(gw, 'sales')).toEqual(TOOLS['sales']);
    for (const k of corrupt) {
      const s = r.body.routes[k] as RouteReadiness;
      expect(['pending', 'refused']).toContain(s.state);
      expect(s.revision).toBeNull();
      const answer = await mcpPost(gw, k, rpc('tools/list'));
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(rpcError(answer).message).toContain(k);
    }
    expect(Object.values(r.body.registry.redisProblems).join(' ')).toMatch(new RegExp(`${nsBad}:route:(core|process|information)`));
    const failures = sampleValue(await metrics(gw), 'mcp_gateway_refresh_failures_total', { cause: 'REDIS_UNAVAILABLE' });
    expect(failures).toBeGreaterThanOrEqual(corrupt.length);
  });

  it('names every ignored Redis snapshot in readiness, with why it was ignored', async () => {
    const r = await readiness(gwBad as Gateway);
    const why: Record<string, RegExp> = { core: /magic|corrupt|short|length/i, process: /checksum/i, information: /holds route "core"/ };
    for (const [k, reason] of Object.entries(why)) {
      // Either the registry-level Redis report or the route's own status must say so.
      const mentions = [r.body.registry.redisProblems[k] ?? '', r.body.routes[k]?.lastError?.message ?? ''].filter((m) => m.includes(`${nsBad}:route:${k}`));
      expect(mentions, `readiness does not report the ignored Redis snapshot of route "${k}": ${r.text}`).not.toEqual([]);
      expect(mentions.join(' ')).toMatch(reason);
    }
  });

  it('refreshes the warm-started routes to source portal when the Portal and Tool Services are back', async () => {
    const gw = gwWarm as Gateway;
    portal.setMode({ kind: 'ok' });
    for (const k of ROUTES) setTools(k, TOOLS[k] as string[]);
    await eventually(async () => {
      const x = await readiness(gw);
      expect(x.body.registry).toMatchObject({ portalUp: true, source: 'portal' });
      for (const k of ROUTES) expect(x.body.routes[k]).toMatchObject({ state: 'ready', source: 'portal' });
    }, 8_000);
    // The spoiled routes of the other gateway are built from the Portal now.
    await eventually(async () => {
      for (const k of ROUTES) expect((await listToolNames(gwBad as Gateway, k)).sort()).toEqual([...(TOOLS[k] as string[])].sort());
    });
  });

  it('keeps refreshing and serving while Redis is killed (mcp_gateway_redis_up 0)', async () => {
    const gw = gwWarm as Gateway;
    await gwBad?.close();
    gwBad = undefined;
    expect(sampleValue(await metrics(gw), 'mcp_gateway_redis_up', {})).toBe(1);
    await redis.stop(true);
    await eventually(async () => expect(sampleValue(await metrics(gw), 'mcp_gateway_redis_up', {})).toBe(0));
    expect((await readiness(gw)).body.registry.redisUp).toBe(false);
    // A Portal change and a manifest change still land, and every route keeps serving.
    const late = await startFixtureToolService();
    services['late'] = late;
    late.setManifest(manifestFor([{ name: 'late_tool' }], 'late-tools'));
    late.setBehavior('/tools/late_tool', { kind: 'echo' });
    registryRoutes = { ...registryRoutes, late: [{ id: 'late-tools', baseUrl: late.url }] };
    portal.setDocument({ revision: 'no-redis', routes: registryRoutes });
    setTools('sales', ['quote', 'discount']);
    await eventually(async () => expect(await listToolNames(gw, 'late')).toEqual(['late_tool']));
    await eventually(async () => expect((await listToolNames(gw, 'sales')).sort()).toEqual(['discount', 'quote']));
    for (const k of ROUTES) expect((await mcpPost(gw, k, rpc('tools/list'))).status).toBe(200);
    const r = await readiness(gw);
    expect(r.status).toBe(200);
    expect(r.body.registry.revision).toBe('no-redis');
  });

  it('stores the current registry and snapshots again once Redis is back, without waiting for a change', async () => {
    const gw = gwWarm as Gateway;
    await redis.restart();
    await eventually(async () => expect(sampleValue(await metrics(gw), 'mcp_gateway_redis_up', {})).toBe(1));
    // The restarted server is empty; a warm start from it after the next restart would find nothing.
    await eventually(
      () =>
        withRedis(redis.url, async (c) => {
          const missing: string[] = [];
          for (const key of [`${nsWarm}:portal-registry`, ...[...ROUTES, 'late'].map((k) => `${nsWarm}:route:${k}`)]) if ((await c.exists(key)) !== 1) missing.push(key);
          expect(missing, 'not stored although Redis is up again and these are the last good copies').toEqual([]);
        }),
      5_000,
    );
  });

  it('stores new builds once Redis is back', async () => {
    const gw = gwWarm as Gateway;
    portal.setDocument({ revision: 'redis-back', routes: registryRoutes });
    setTools('core', ['employee_search', 'org_chart', 'payroll']);
    await eventually(async () => expect(await listToolNames(gw, 'core')).toContain('payroll'));
    await eventually(() =>
      withRedis(redis.url, async (c) => {
        const copy = JSON.parse((await c.get(`${nsWarm}:portal-registry`)) ?? 'null') as { document: { revision: string } } | null;
        expect(copy?.document.revision).toBe('redis-back');
        expect(((await c.getBuffer(`${nsWarm}:route:core`)) ?? Buffer.alloc(0)).includes(Buffer.from('payroll'))).toBe(true);
      }),
    );
  });
});
