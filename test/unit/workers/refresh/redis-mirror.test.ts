/**
 * The Redis mirror (src/workers/refresh/redis-mirror.ts) and what the cycle
 * does with Redis (docs/contracts/redis-v1.md): the registry copy and every
 * published snapshot stored (again after a reconnection, never for a route
 * that is gone), the registry copy read at a cold start with the Portal
 * down, warm starts from route snapshots, and corrupt or foreign copies
 * reported and never served. A real redis-server per file.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startRedis } from '../../../helpers/redis.js';
import { waitUntil } from '../../../helpers/eventually.js';
import {
  closeAfterTest,
  config,
  doc,
  erp,
  ERP,
  expectInitialLoadComplete,
  freshNamespace,
  harness,
  hr,
  HR,
  hrManifest,
  metaOf,
  ofType,
  portal,
  raw,
  redisProblems,
  redisServer,
  registryStatus,
  routesOf,
  snapshotFor,
  store,
  types,
  useRefreshFixtures,
  type Ev,
} from './refresh-harness.js';
useRefreshFixtures();

describe('with Redis', () => {
  /** Runs a first gateway life with Redis so that the registry copy and every route snapshot are stored. */
  async function seed(namespace: string, document = doc('r1', { core: [HR], process: [ERP] })): Promise<Record<string, Ev<'route-snapshot'>>> {
    portal.setDocument(document);
    const s = await store(namespace);
    const h = harness(config({ redisNamespace: namespace }), { redis: s });
    const { events } = await h.cycle();
    const snaps = Object.fromEntries(ofType(events, 'route-snapshot').map((e) => [e.routeKey, e]));
    // Writes are part of the cycle: once it returned, Redis holds the copies.
    for (const routeKey of Object.keys(snaps)) expect(await raw.exists(`${namespace}:route:${routeKey}`), `the snapshot of ${routeKey} in Redis`).toBe(1);
    expect(await raw.exists(`${namespace}:portal-registry`), 'the registry copy in Redis').toBe(1);
    return snaps;
  }

  it('stores the accepted registry and every published snapshot; a 304 and an unchanged route write nothing', async () => {
    const ns = freshNamespace();
    const s = await store(ns);
    const h = harness(config({ redisNamespace: ns }), { redis: s });
    const { events } = await h.cycle();
    expect(registryStatus(events).redisUp).toBe(true);
    expect(await raw.exists(`${ns}:route:core`, `${ns}:route:process`, `${ns}:portal-registry`), 'the Redis copies, written within the cycle').toBe(3);
    const copy = JSON.parse((await raw.get(`${ns}:portal-registry`)) ?? 'null') as { format: number; storedAt: string; document: unknown };
    expect(copy).toMatchObject({ format: 1, document: doc('r1', { core: [HR], process: [ERP] }) });
    const core = snapshotFor(events, 'core') as Ev<'route-snapshot'>;
    expect((await raw.getBuffer(`${ns}:route:core`))?.equals(Buffer.from(new Uint8Array(core.snapshot)))).toBe(true);

    await raw.del(`${ns}:route:core`);
    await h.cycle(); // 304 and unchanged routes; writes, if any, would be done when the cycle returns
    expect(await raw.exists(`${ns}:route:core`)).toBe(0);
    expect(JSON.parse((await raw.get(`${ns}:portal-registry`)) ?? 'null')).toEqual(copy);
  });

  it('Portal down at a cold start: the route set comes from the Redis registry copy (source redis)', async () => {
    const ns = freshNamespace();
    await seed(ns);
    portal.setMode({ kind: 'status', status: 503 });
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    let { report, events } = await h.cycle();
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'process'], removed: [] }]);
    expect(registryStatus(events)).toEqual({
      type: 'registry-status',
      portalUp: false,
      portalError: expect.stringContaining('HTTP 503'),
      redisUp: true,
      suspect: null,
      revision: 'r1',
      source: 'redis',
    });
    expect(report).toMatchObject({ registry: 'redis', routes: 2 });
    // The Tool Services answer, so both routes are built.
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'process']);
    expectInitialLoadComplete(events);

    // The Portal keeps being polled; when it answers, its registry takes over.
    portal.setMode({ kind: 'ok' });
    ({ report, events } = await h.cycle());
    expect(registryStatus(events)).toMatchObject({ portalUp: true, source: 'portal', revision: 'r1' });
    expect(report.registry).toBe('portal');
  });

  it('Portal down at a cold start: the Redis registry copy is read even when the store was created just before the first cycle', async () => {
    // The refresh worker creates its RedisStore and starts its first cycle at once; a refused Portal
    // connection fails within milliseconds, before the Redis connection is up.
    const ns = freshNamespace();
    await seed(ns);
    portal.setMode({ kind: 'status', status: 503 });
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns, false, redisServer.url, 5_000) });
    const { events } = await h.cycle();
    expect(registryStatus(events)).toMatchObject({ source: 'redis', revision: 'r1' });
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'process'], removed: [] }]);
  });

  it('warm start: every named route without a usable manifest serves its Redis snapshot, once per route', async () => {
    const ns = freshNamespace();
    const seeded = await seed(ns);
    portal.setMode({ kind: 'status', status: 503 });
    hr.setManifestStatus(500);
    erp.setManifestStatus(500);
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    let { events } = await h.cycle();
    expect(
      ofType(events, 'route-snapshot')
        .map((e) => [e.routeKey, e.source, e.warning])
        .sort(),
    ).toEqual([
      ['core', 'redis', 'warm start from the Redis copy'],
      ['process', 'redis', 'warm start from the Redis copy'],
    ]);
    for (const e of ofType(events, 'route-snapshot')) {
      // Exactly the bytes published by the previous life.
      expect(Buffer.from(new Uint8Array(e.snapshot)).equals(Buffer.from(new Uint8Array((seeded[e.routeKey] as Ev<'route-snapshot'>).snapshot)))).toBe(true);
      // The route still reports why it could not be refreshed, after its warm-start snapshot.
      const failed = events.findIndex((f) => f.type === 'route-failed' && f.routeKey === e.routeKey);
      expect(failed).toBeGreaterThan(events.indexOf(e));
    }
    expect(routesOf(events, 'route-failed')).toEqual(['core', 'process']);
    expectInitialLoadComplete(events);

    // Later cycles do not warm-start again.
    for (let i = 0; i < 2; i++) {
      ({ events } = await h.cycle());
      expect(ofType(events, 'route-snapshot')).toEqual([]);
      expect(routesOf(events, 'route-failed')).toEqual(['core', 'process']);
    }
  });

  it('warm start does not need the Portal to be down: a route whose Tool Service is down at start uses its Redis snapshot', async () => {
    const ns = freshNamespace();
    await seed(ns);
    hr.setManifestStatus(500);
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const { events } = await h.cycle();
    expect(registryStatus(events)).toMatchObject({ portalUp: true, source: 'portal' });
    expect(
      ofType(events, 'route-snapshot')
        .map((e) => [e.routeKey, e.source])
        .sort(),
    ).toEqual([
      ['core', 'redis'],
      ['process', 'portal'],
    ]);
    expect(routesOf(events, 'route-failed')).toEqual(['core']);
  });

  it('a warm-started route is re-published from its Tool Service once that answers again, even with the same tools', async () => {
    const ns = freshNamespace();
    await seed(ns);
    hr.setManifestStatus(500);
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    await h.cycle();
    hr.setManifest(hrManifest); // back, with exactly the tools of the Redis copy
    const { events } = await h.cycle();
    // Readiness must stop saying "redis warm start" once the route is fresh again: either a new
    // snapshot or an unchanged catalog now attributed to the Portal, without the warm-start warning.
    const core = events.filter((e): e is Ev<'route-snapshot'> | Ev<'route-unchanged'> => (e.type === 'route-snapshot' || e.type === 'route-unchanged') && e.routeKey === 'core');
    expect(core.map((e) => ({ source: e.source, warning: e.warning }))).toEqual([{ source: 'portal', warning: null }]);
    expect(ofType(events, 'route-failed')).toEqual([]);
  });

  it('a corrupt Redis snapshot is reported (redis-problem) and never served', async () => {
    const ns = freshNamespace();
    await seed(ns);
    const bytes = (await raw.getBuffer(`${ns}:route:core`)) as Buffer;
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 3) ^ 0xff, bytes.length - 3);
    await raw.set(`${ns}:route:core`, bytes);
    hr.setManifestStatus(500);
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const { events } = await h.cycle();
    expect(redisProblems(events)).toEqual([{ type: 'redis-problem', subject: 'core', message: expect.stringMatching(/^snapshot of route "core" .*checksum mismatch/) }]);
    expect(snapshotFor(events, 'core')).toBeUndefined();
    expect(routesOf(events, 'route-failed')).toEqual(['core']);
  });

  it("a snapshot of another route under this route's key is reported and never served", async () => {
    const ns = freshNamespace();
    await seed(ns);
    await raw.set(`${ns}:route:core`, (await raw.getBuffer(`${ns}:route:process`)) as Buffer);
    hr.setManifestStatus(500);
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const { events } = await h.cycle();
    expect(redisProblems(events)).toEqual([{ type: 'redis-problem', subject: 'core', message: expect.stringContaining(`${ns}:route:core holds route "process"`) }]);
    expect(snapshotFor(events, 'core')).toBeUndefined();
  });

  it('a corrupt registry copy is reported and not used: without the Portal no route is known', async () => {
    const ns = freshNamespace();
    await raw.set(`${ns}:portal-registry`, JSON.stringify({ format: 9, storedAt: 'x', document: doc('r1', { core: [HR] }) }));
    portal.setMode({ kind: 'status', status: 500 });
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const { events } = await h.cycle();
    expect(redisProblems(events)).toEqual([{ type: 'redis-problem', subject: 'registry', message: expect.stringContaining('registry copy unusable') }]);
    expect(ofType(events, 'routes')).toEqual([]);
    expect(registryStatus(events)).toMatchObject({ portalUp: false, source: null, revision: null });
    expect(types(events)).not.toContain('initial-load-complete');
  });

  it('a registry copy holding an invalid document is reported and not used', async () => {
    const ns = freshNamespace();
    await raw.set(`${ns}:portal-registry`, JSON.stringify({ format: 1, storedAt: new Date().toISOString(), document: { revision: 'r1' } }));
    portal.setMode({ kind: 'status', status: 500 });
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const { events } = await h.cycle();
    expect(redisProblems(events)).toEqual([{ type: 'redis-problem', subject: 'registry', message: expect.stringContaining('registry copy rejected: registry document is not a v1 registry') }]);
    expect(ofType(events, 'routes')).toEqual([]);
  });

  it('Redis down: cycles publish as usual with redisUp false; the copies are stored once Redis is back', async () => {
    const own = await startRedis();
    closeAfterTest(() => own.stop());
    const ns = freshNamespace();
    const s = await store(ns, true, own.url, 200);
    await own.stop();
    await waitUntil(() => !s.connected, 'the store noticed');
    const h = harness(config({ redisNamespace: ns }), { redis: s });
    let { events } = await h.cycle();
    expect(registryStatus(events)).toMatchObject({ portalUp: true, redisUp: false, source: 'portal' });
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'process']);
    expectInitialLoadComplete(events);

    await own.restart();
    await waitUntil(() => s.connected, 'the store reconnected');
    ({ events } = await h.cycle()); // nothing changed: the copies are caught up anyway
    expect(registryStatus(events).redisUp).toBe(true);
    expect(redisProblems(events)).toEqual([]);
    const check = new Redis(own.url, { maxRetriesPerRequest: 1 });
    try {
      expect(await check.exists(`${ns}:portal-registry`, `${ns}:route:core`, `${ns}:route:process`), 'the copies in Redis, written within the cycle').toBe(3);
    } finally {
      check.disconnect();
    }
  });

  it('Redis down and Portal down at a cold start: no routes, reported, no crash', async () => {
    const gone = await startRedis();
    await gone.stop();
    portal.setMode({ kind: 'status', status: 502 });
    const h = harness(config({ redisNamespace: 'down' }), { redis: await store('down', false, gone.url, 200) });
    const { report, events } = await h.cycle();
    expect(report).toMatchObject({ registry: 'none', routes: 0 });
    expect(redisProblems(events)).toEqual([{ type: 'redis-problem', subject: 'registry', message: 'registry copy unusable: redis did not answer' }]);
    expect(registryStatus(events)).toMatchObject({ portalUp: false, redisUp: false, source: null });
  });

  it('a removed route leaves no Redis state behind: re-added with the same catalog, its snapshot is stored again', async () => {
    const ns = freshNamespace();
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const first = await h.cycle();
    const published = snapshotFor(first.events, 'process') as Ev<'route-snapshot'>;
    expect(await raw.exists(`${ns}:route:process`)).toBe(1);

    portal.setDocument(doc('r2', { core: [HR] })); // removes 1 of 2 = 50%: obeyed
    expect(ofType((await h.cycle()).events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core'], removed: ['process'] }]);
    // Whatever happens to the key of a route the registry no longer names (an operator, an eviction, another replica)...
    await raw.del(`${ns}:route:process`);

    portal.setDocument(doc('r3', { core: [HR], process: [ERP] }));
    const { events } = await h.cycle();
    const again = snapshotFor(events, 'process') as Ev<'route-snapshot'>;
    expect(metaOf(again).revision).toBe(metaOf(published).revision); // the same catalog
    // ...the route comes back as a new route: nothing remembered says "Redis already holds this revision".
    expect(redisProblems(events)).toEqual([]);
    expect((await raw.getBuffer(`${ns}:route:process`))?.equals(Buffer.from(new Uint8Array(again.snapshot)))).toBe(true);
  });
});
