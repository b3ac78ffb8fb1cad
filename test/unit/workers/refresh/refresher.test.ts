/**
 * The refresh cycle (SPEC §4, issue 3), driven directly: a `Refresher` with
 * `emit` collecting its events, a real `PortalClient` against the Portal
 * fixture, a real `RedisStore` against a real redis-server (or none), and
 * real fixture Tool Services.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceEntry } from '../../../../src/shared/config/schema.js';
import { validateConfig } from '../../../../src/shared/config/load.js';
import type { GatewayConfig } from '../../../../src/shared/config/schema.js';
import { decodeSnapshot, type SnapshotMeta } from '../../../../src/shared/snapshot/layout.js';
import type { RefreshEvent } from '../../../../src/shared/threads/messages.js';
import { PortalClient } from '../../../../src/workers/refresh/portal-client.js';
import { RedisStore } from '../../../../src/workers/refresh/redis-store.js';
import { Refresher, type CycleReport } from '../../../../src/workers/refresh/refresher.js';
import { startFixturePortal, type FixturePortal } from '../../../fixtures/portal.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../../fixtures/tool-service.js';
import { startRedis, type TestRedis } from '../../../helpers/redis.js';

// ---------------------------------------------------------------- fixtures

let hr: FixtureToolService;
let erp: FixtureToolService;
let ops: FixtureToolService;
let portal: FixturePortal;
let redisServer: TestRedis;
let raw: Redis;
const closers: Array<() => Promise<void>> = [];

const hrManifest = manifestFor([{ name: 'employee_search' }, { name: 'leave_request' }], 'hr-tools');
const erpManifest = manifestFor([{ name: 'invoice_lookup' }], 'erp-tools');
const opsManifest = manifestFor([{ name: 'restart_pod' }], 'ops-tools');

const entry = (svc: FixtureToolService, id: string): ServiceEntry => ({ id, baseUrl: svc.url });
let HR: ServiceEntry;
let ERP: ServiceEntry;
let OPS: ServiceEntry;

beforeAll(async () => {
  [hr, erp, ops, portal, redisServer] = await Promise.all([
    startFixtureToolService(),
    startFixtureToolService(),
    startFixtureToolService(),
    startFixturePortal(),
    startRedis(),
  ]);
  HR = entry(hr, 'hr-tools');
  ERP = entry(erp, 'erp-tools');
  OPS = entry(ops, 'ops-tools');
  raw = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  raw?.disconnect();
  await Promise.all([hr?.close(), erp?.close(), ops?.close(), portal?.close(), redisServer?.stop()]);
});
beforeEach(() => {
  hr.setManifest(hrManifest);
  erp.setManifest(erpManifest);
  ops.setManifest(opsManifest);
  portal.setMode({ kind: 'ok' });
  portal.setDocument(doc('r1', { core: [HR], process: [ERP] }));
});
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.();
});

// ---------------------------------------------------------------- helpers

const doc = (revision: string, routes: Record<string, unknown>): { revision: string; routes: Record<string, unknown> } => ({ revision, routes });

let nsCounter = 0;
/** A Redis namespace of its own for each test. */
const freshNamespace = (): string => `refresher-${process.pid}-${++nsCounter}`;

interface ConfigOptions {
  source?: 'static' | 'portal';
  routes?: Record<string, ServiceEntry[]>;
  catalog?: Record<string, unknown>;
  redisNamespace?: string;
}

function config(o: ConfigOptions = {}): GatewayConfig {
  return validateConfig({
    catalog: {
      source: o.source ?? 'portal',
      static: { routes: o.routes ?? { core: [HR], process: [ERP] } },
      portal: { url: portal.url, timeoutMs: 1_000, maxBytes: 1024 * 1024 },
      refreshIntervalMs: 60_000,
      manifestTimeoutMs: 2_000,
      ...o.catalog,
    },
    redis: { url: o.redisNamespace !== undefined ? redisServer.url : null, namespace: o.redisNamespace ?? 'unused', commandTimeoutMs: 1_000 },
    log: { level: 'silent' },
  });
}

/** A store of the test Redis; `wait` waits until it is connected. */
async function store(namespace: string, wait = true, url = redisServer.url, timeoutMs = 1_000): Promise<RedisStore> {
  const s = new RedisStore(url, namespace, timeoutMs);
  closers.push(() => s.close());
  if (wait) await until(() => s.connected, 'the Redis store to connect');
  return s;
}

interface Harness {
  refresher: Refresher;
  events: RefreshEvent[];
  /** Runs one cycle; returns its report and the events it emitted. */
  cycle(): Promise<{ report: CycleReport; events: RefreshEvent[] }>;
}

function harness(cfg: GatewayConfig, deps: { portal?: PortalClient | null; redis?: RedisStore | null; now?: () => number; published?: Record<string, string> } = {}): Harness {
  const events: RefreshEvent[] = [];
  const portalClient =
    deps.portal !== undefined ? deps.portal : cfg.catalog.source === 'portal' ? new PortalClient({ url: portal.url, timeoutMs: cfg.catalog.portal.timeoutMs, maxBytes: cfg.catalog.portal.maxBytes }) : null;
  const refresher = new Refresher({
    config: cfg,
    emit: (e) => events.push(e),
    portal: portalClient,
    redis: deps.redis ?? null,
    ...(deps.now ? { now: deps.now } : {}),
    ...(deps.published ? { published: deps.published } : {}),
  });
  return {
    refresher,
    events,
    async cycle() {
      const from = events.length;
      const report = await refresher.cycle();
      return { report, events: events.slice(from) };
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

type Ev<T extends RefreshEvent['type']> = Extract<RefreshEvent, { type: T }>;
const ofType = <T extends RefreshEvent['type']>(events: RefreshEvent[], type: T): Array<Ev<T>> => events.filter((e): e is Ev<T> => e.type === type);
const types = (events: RefreshEvent[]): string[] => events.map((e) => e.type);
const routesOf = (events: RefreshEvent[], type: 'route-snapshot' | 'route-unchanged' | 'route-failed'): string[] =>
  ofType(events, type)
    .map((e) => e.routeKey)
    .sort();
const metaOf = (e: Ev<'route-snapshot'>): SnapshotMeta => decodeSnapshot(e.snapshot, { verifyChecksum: true }).meta;
const snapshotFor = (events: RefreshEvent[], routeKey: string): Ev<'route-snapshot'> | undefined => ofType(events, 'route-snapshot').find((e) => e.routeKey === routeKey);
/** Routes whose new snapshot announces a tools/list change. */
const listChanged = (events: RefreshEvent[]): string[] =>
  ofType(events, 'route-snapshot')
    .filter((e) => e.listChanged)
    .map((e) => e.routeKey)
    .sort();
/** Redis problems raised (a `null` message clears a subject's problem). */
const redisProblems = (events: RefreshEvent[]): Array<Ev<'redis-problem'>> => ofType(events, 'redis-problem').filter((e) => e.message !== null);
/** initial-load-complete was emitted once, after every route of the cycle was tried. */
function expectInitialLoadComplete(events: RefreshEvent[]): void {
  expect(types(events).filter((t) => t === 'initial-load-complete'), 'initial-load-complete').toHaveLength(1);
  const at = types(events).indexOf('initial-load-complete');
  const lastRoute = Math.max(...events.map((e, i) => (e.type.startsWith('route') ? i : -1)));
  expect(at, 'initial-load-complete follows every route event').toBeGreaterThan(lastRoute);
}
const registryStatus = (events: RefreshEvent[]): Ev<'registry-status'> => {
  const all = ofType(events, 'registry-status');
  expect(all, 'one registry-status per cycle').toHaveLength(1);
  return all[0] as Ev<'registry-status'>;
};

// ---------------------------------------------------------------- static mode

describe('static mode', () => {
  const staticConfig = (routes: Record<string, ServiceEntry[]> = { core: [HR], process: [ERP] }, catalog: Record<string, unknown> = {}): GatewayConfig =>
    config({ source: 'static', routes, catalog });

  it('first cycle: the route set, one snapshot per route, then initial-load-complete', async () => {
    const h = harness(staticConfig());
    const { report, events } = await h.cycle();
    expect(events[0]).toEqual({ type: 'routes', routeKeys: ['core', 'process'], removed: [] });
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'process']);
    for (const e of ofType(events, 'route-snapshot')) {
      expect(e.source).toBe('static');
      expect(e.warning).toBeNull();
    }
    const core = snapshotFor(events, 'core');
    expect(core && metaOf(core)).toMatchObject({ routeKey: 'core', source: 'static', toolCount: 2 });
    const process_ = snapshotFor(events, 'process');
    expect(process_ && metaOf(process_)).toMatchObject({ routeKey: 'process', source: 'static', toolCount: 1 });
    expectInitialLoadComplete(events);
    // A first publication is not a change; static mode has no registry to report on.
    expect(listChanged(events)).toEqual([]);
    expect(ofType(events, 'route-failed')).toEqual([]);
    expect(ofType(events, 'registry-status')).toEqual([]);
    expect(report).toEqual({ registry: 'static', routes: 2, published: 2, failed: 0, portalError: null, suspect: null });
  });

  it('second cycle with unchanged manifests: route-unchanged, no snapshot, nothing else', async () => {
    const h = harness(staticConfig());
    await h.cycle();
    const before = { hr: hr.manifestRequests, erp: erp.manifestRequests };
    const { report, events } = await h.cycle();
    expect(hr.manifestRequests - before.hr).toBe(1); // manifests are fetched again every cycle
    expect(erp.manifestRequests - before.erp).toBe(1);
    expect(events.map((e) => e.type).sort()).toEqual(['route-unchanged', 'route-unchanged']);
    expect(ofType(events, 'route-unchanged')).toEqual(
      expect.arrayContaining([
        { type: 'route-unchanged', routeKey: 'core', source: 'static', warning: null },
        { type: 'route-unchanged', routeKey: 'process', source: 'static', warning: null },
      ]),
    );
    expect(report).toMatchObject({ registry: 'static', routes: 2, published: 0, failed: 0 });
  });

  it('a manifest change re-publishes that route, announcing a tools/list change; the other route is unchanged', async () => {
    const h = harness(staticConfig());
    const first = await h.cycle();
    hr.setManifest(manifestFor([{ name: 'employee_search' }, { name: 'leave_request' }, { name: 'payslip' }], 'hr-tools'));
    const { report, events } = await h.cycle();
    expect(routesOf(events, 'route-snapshot')).toEqual(['core']);
    const snap = snapshotFor(events, 'core') as Ev<'route-snapshot'>;
    const meta = metaOf(snap);
    expect(meta.toolCount).toBe(3);
    expect(meta.revision).not.toBe(metaOf(snapshotFor(first.events, 'core') as Ev<'route-snapshot'>).revision);
    expect(snap.listChanged).toBe(true);
    expect(routesOf(events, 'route-unchanged')).toEqual(['process']);
    expect(report.published).toBe(1);
  });

  it('a change that leaves the tools/list bytes as they were (a timeout) is re-published without announcing a list change', async () => {
    const h = harness(staticConfig());
    await h.cycle();
    hr.setManifest(manifestFor([{ name: 'employee_search', timeoutMs: 1234 }, { name: 'leave_request' }], 'hr-tools'));
    const { events } = await h.cycle();
    // The shard must get the new timeout...
    expect(routesOf(events, 'route-snapshot')).toEqual(['core']);
    // ...but clients must not be told that the tool list changed when its bytes did not (issue 3:
    // "when a route's tools/list bytes change, emit an internal list-changed event").
    expect(snapshotFor(events, 'core')?.listChanged).toBe(false);
  });

  it('a Tool Service shared by two routes is fetched once per cycle', async () => {
    const h = harness(staticConfig({ core: [HR], people: [HR], process: [ERP] }));
    for (let i = 0; i < 3; i++) {
      const before = hr.manifestRequests;
      const { events } = await h.cycle();
      expect(hr.manifestRequests - before, `cycle ${i + 1}`).toBe(1);
      expect([...routesOf(events, 'route-snapshot'), ...routesOf(events, 'route-unchanged')].sort()).toEqual(['core', 'people', 'process']);
    }
  });

  it('manifestConcurrency 1 still completes every route', async () => {
    const h = harness(staticConfig({ core: [HR, OPS], people: [HR], process: [ERP], ops: [OPS], mixed: [ERP, OPS] }, { manifestConcurrency: 1 }));
    const before = [hr.manifestRequests, erp.manifestRequests, ops.manifestRequests];
    const { report, events } = await h.cycle();
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'mixed', 'ops', 'people', 'process']);
    expect(report).toMatchObject({ routes: 5, published: 5, failed: 0 });
    expect([hr.manifestRequests - before[0]!, erp.manifestRequests - before[1]!, ops.manifestRequests - before[2]!]).toEqual([1, 1, 1]);
    expectInitialLoadComplete(events);
  });

  it('backoff: a failing Tool Service with a last good manifest is not refetched until its backoff ends, and says so', async () => {
    let clock = 1_000_000;
    const h = harness(staticConfig(undefined, { refreshIntervalMs: 60_000, manifestMaxBackoffMs: 600_000 }), { now: () => clock });
    await h.cycle();
    hr.setManifestStatus(500);

    // First failure: fetched, the last good manifest serves, the route is unchanged with a warning.
    let before = hr.manifestRequests;
    let { events } = await h.cycle();
    expect(hr.manifestRequests - before).toBe(1);
    const first = ofType(events, 'route-unchanged').find((e) => e.routeKey === 'core');
    expect(first?.warning).toMatch(/^serving last good manifest: .*hr-tools.*HTTP 500/);
    expect(ofType(events, 'route-unchanged').find((e) => e.routeKey === 'process')?.warning).toBeNull();
    expect(ofType(events, 'route-failed')).toEqual([]);

    // Next cycle inside the backoff (one refresh interval): not fetched, still a warning.
    clock += 30_000;
    before = hr.manifestRequests;
    ({ events } = await h.cycle());
    expect(hr.manifestRequests - before).toBe(0);
    expect(ofType(events, 'route-unchanged').find((e) => e.routeKey === 'core')?.warning).toMatch(/hr-tools.*backing off after: .*HTTP 500/);
    expect(ofType(events, 'route-snapshot')).toEqual([]);

    // Backoff over: fetched again; the second failure doubles the backoff (2 intervals).
    clock += 30_001;
    before = hr.manifestRequests;
    await h.cycle();
    expect(hr.manifestRequests - before).toBe(1);
    clock += 60_001;
    before = hr.manifestRequests;
    await h.cycle();
    expect(hr.manifestRequests - before).toBe(0);
    clock += 60_000;
    before = hr.manifestRequests;
    hr.setManifest(hrManifest);
    ({ events } = await h.cycle());
    expect(hr.manifestRequests - before).toBe(1);
    // Recovered with the same manifest: unchanged, and the warning is gone.
    expect(ofType(events, 'route-unchanged').find((e) => e.routeKey === 'core')?.warning).toBeNull();
  });

  it('backoff is capped by manifestMaxBackoffMs', async () => {
    let clock = 0;
    const h = harness(staticConfig({ core: [HR] }, { refreshIntervalMs: 60_000, manifestMaxBackoffMs: 1_000 }), { now: () => clock });
    await h.cycle();
    hr.setManifestStatus(503);
    for (let i = 0; i < 4; i++) {
      clock += 1_001;
      const before = hr.manifestRequests;
      await h.cycle();
      expect(hr.manifestRequests - before, `failure ${i + 1}`).toBe(1);
    }
  });

  it('a failing Tool Service without a last good manifest refuses its route only, and is retried every cycle', async () => {
    hr.setManifestStatus(500);
    const h = harness(staticConfig());
    const { report, events } = await h.cycle();
    expect(ofType(events, 'route-failed')).toEqual([
      { type: 'route-failed', routeKey: 'core', code: 'MANIFEST_UNREACHABLE', message: expect.stringMatching(/^route "core" not replaced: .*hr-tools.*HTTP 500/), conflicts: [] },
    ]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['process']); // per-route isolation (SPEC §9 defect 1)
    expectInitialLoadComplete(events); // every route was tried once
    expect(report).toMatchObject({ published: 1, failed: 1 });
    const before = hr.manifestRequests;
    await h.cycle();
    expect(hr.manifestRequests - before).toBe(1);
    hr.setManifest(hrManifest);
    const recovered = await h.cycle();
    expect(routesOf(recovered.events, 'route-snapshot')).toEqual(['core']);
    expect(listChanged(recovered.events)).toEqual([]); // its first catalog
  });

  it('an invalid first manifest, a tool-name conflict and the per-route cap refuse their route only', async () => {
    hr.setManifestRaw('{"service":"hr-tools","tools":[');
    ops.setManifest(manifestFor([{ name: 'invoice_lookup' }], 'ops-tools')); // the name erp-tools offers too
    const h = harness(staticConfig({ core: [HR], mixed: [ERP, OPS], process: [ERP], big: [OPS, entry(hr, 'hr-again')] }, { maxToolsPerRoute: 1 }));
    const { events } = await h.cycle();
    const failed = Object.fromEntries(ofType(events, 'route-failed').map((e) => [e.routeKey, e]));
    expect(failed['core']).toMatchObject({ code: 'MANIFEST_INVALID', message: expect.stringMatching(/^route "core" not replaced: .*hr-tools.*not JSON/) });
    expect(failed['mixed']).toMatchObject({ code: 'TOOL_NAME_CONFLICT', conflicts: ['tool "invoice_lookup" is offered by both "erp-tools" and "ops-tools"'] });
    expect(failed['big']?.code).toBe('MANIFEST_INVALID'); // hr-again shares the broken manifest
    expect(routesOf(events, 'route-snapshot')).toEqual(['process']);
    expectInitialLoadComplete(events);
  });

  it('a refused replacement (conflict, cap) keeps the old snapshot: no route-snapshot, route-failed instead', async () => {
    const h = harness(staticConfig({ mixed: [ERP, OPS], process: [ERP] }, { maxToolsPerRoute: 2 }));
    await h.cycle();
    ops.setManifest(manifestFor([{ name: 'invoice_lookup' }], 'ops-tools'));
    let { events } = await h.cycle();
    expect(ofType(events, 'route-failed')).toEqual([
      {
        type: 'route-failed',
        routeKey: 'mixed',
        code: 'TOOL_NAME_CONFLICT',
        message: 'route "mixed": tool "invoice_lookup" is offered by both "erp-tools" and "ops-tools"',
        conflicts: ['tool "invoice_lookup" is offered by both "erp-tools" and "ops-tools"'],
      },
    ]);
    expect(ofType(events, 'route-snapshot')).toEqual([]);
    expect(routesOf(events, 'route-unchanged')).toEqual(['process']);

    ops.setManifest(manifestFor([{ name: 'restart_pod' }, { name: 'scale' }], 'ops-tools'));
    ({ events } = await h.cycle());
    expect(ofType(events, 'route-failed').map((e) => [e.routeKey, e.code, e.message])).toEqual([
      ['mixed', 'TOOL_CAP_EXCEEDED', 'route "mixed" would expose 3 tools, more than catalog.maxToolsPerRoute (2)'],
    ]);
    expect(ofType(events, 'route-snapshot')).toEqual([]);
  });

  it('an invalid manifest of a Tool Service with a last good one: the last good serves, with a warning', async () => {
    const h = harness(staticConfig());
    await h.cycle();
    hr.setManifest(manifestFor([{ name: 'bad name!' }], 'hr-tools'));
    const { events } = await h.cycle();
    expect(ofType(events, 'route-failed')).toEqual([]);
    expect(ofType(events, 'route-unchanged').find((e) => e.routeKey === 'core')?.warning).toMatch(/^serving last good manifest: Tool Service "hr-tools" manifest is invalid: /);
  });

  it('routes already served (after a refresh-worker restart) are not re-published when unchanged', async () => {
    const first = await harness(staticConfig()).cycle();
    const published = Object.fromEntries(ofType(first.events, 'route-snapshot').map((e) => [e.routeKey, metaOf(e).revision]));
    const { events } = await harness(staticConfig(), { published }).cycle();
    expect(ofType(events, 'route-snapshot')).toEqual([]);
    expect(routesOf(events, 'route-unchanged')).toEqual(['core', 'process']);
  });
});

// ---------------------------------------------------------------- portal mode

describe('portal mode', () => {
  it('first cycle: registry-status, the route set from the Portal, snapshots with source portal', async () => {
    const h = harness(config());
    const { report, events } = await h.cycle();
    expect(registryStatus(events)).toEqual({ type: 'registry-status', portalUp: true, portalError: null, redisUp: null, suspect: null, revision: 'r1', source: 'portal' });
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'process'], removed: [] }]);
    expect(ofType(events, 'route-snapshot').map((e) => [e.routeKey, e.source, metaOf(e).source])).toEqual(
      expect.arrayContaining([
        ['core', 'portal', 'portal'],
        ['process', 'portal', 'portal'],
      ]),
    );
    expectInitialLoadComplete(events);
    expect(report).toEqual({ registry: 'portal', routes: 2, published: 2, failed: 0, portalError: null, suspect: null });
  });

  it('an unchanged registry costs a 304; the routes are still refreshed from their manifests', async () => {
    const h = harness(config());
    await h.cycle();
    const notModified = portal.stats.notModified;
    const before = hr.manifestRequests;
    const { report, events } = await h.cycle();
    expect(portal.stats.notModified - notModified).toBe(1);
    expect(report.registry).toBe('unchanged');
    expect(registryStatus(events)).toMatchObject({ portalUp: true, portalError: null, revision: 'r1', source: 'portal', suspect: null });
    expect(ofType(events, 'routes')).toEqual([]);
    expect(routesOf(events, 'route-unchanged')).toEqual(['core', 'process']);
    expect(hr.manifestRequests - before).toBe(1);
  });

  it('a changed registry adds and removes routes (within the removal ratio)', async () => {
    const h = harness(config());
    await h.cycle();
    portal.setDocument(doc('r2', { core: [HR], ops: [OPS] })); // removes 1 of 2 = 50%: obeyed
    let { events } = await h.cycle();
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'ops'], removed: ['process'] }]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['ops']);
    expect(routesOf(events, 'route-unchanged')).toEqual(['core']);
    expect(registryStatus(events)).toMatchObject({ revision: 'r2', suspect: null });

    // A removed route that comes back is a new route: published again, no list change announced.
    portal.setDocument(doc('r3', { core: [HR], ops: [OPS], process: [ERP] }));
    ({ events } = await h.cycle());
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'ops', 'process'], removed: [] }]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['process']);
    expect(listChanged(events)).toEqual([]);
  });

  it('a route whose entry changes is rebuilt from its new Tool Services', async () => {
    const h = harness(config());
    await h.cycle();
    portal.setDocument(doc('r2', { core: [HR, OPS], process: [ERP] }));
    const { events } = await h.cycle();
    const snap = snapshotFor(events, 'core');
    expect(snap && metaOf(snap).toolCount).toBe(3);
    expect(listChanged(events)).toEqual(['core']);
  });

  describe('mass-removal guard (catalog.maxRouteRemovalRatio)', () => {
    // A function: the fixtures' URLs exist only once beforeAll ran.
    const four = (): ReturnType<typeof doc> => doc('r4', { a: [HR], b: [HR], c: [ERP], d: [OPS] });

    it('a registry removing most routes is suspect: registry-status says so, no routes event, every route keeps refreshing', async () => {
      portal.setDocument(four());
      const h = harness(config());
      await h.cycle();
      portal.setDocument(doc('r5', { a: [HR] }));
      let { report, events } = await h.cycle();
      const status = registryStatus(events);
      expect(status.suspect).toBe('registry revision "r5" would remove 3 of 4 routes (75% > catalog.maxRouteRemovalRatio 50%); ignored');
      expect(status).toMatchObject({ portalUp: true, revision: 'r4', source: 'portal' });
      expect(report.suspect).toBe(status.suspect);
      expect(ofType(events, 'routes')).toEqual([]);
      expect(routesOf(events, 'route-unchanged')).toEqual(['a', 'b', 'c', 'd']);

      // The suspect document is fetched in full again next time (no 304 hides it), and is still suspect.
      const notModified = portal.stats.notModified;
      ({ events } = await h.cycle());
      expect(portal.stats.notModified).toBe(notModified);
      expect(registryStatus(events).suspect).toContain('would remove 3 of 4 routes');
      expect(ofType(events, 'routes')).toEqual([]);

      // An acceptable document clears the state.
      portal.setDocument(four());
      ({ events } = await h.cycle());
      expect(registryStatus(events)).toMatchObject({ suspect: null, portalUp: true });
    });

    it('an empty registry from a broken Portal is suspect', async () => {
      const h = harness(config());
      await h.cycle();
      portal.setDocument(doc('empty', {}));
      const { events } = await h.cycle();
      expect(registryStatus(events).suspect).toContain('would remove 2 of 2 routes (100%');
      expect(ofType(events, 'routes')).toEqual([]);
      expect(routesOf(events, 'route-unchanged')).toEqual(['core', 'process']);
    });

    it('removing exactly the ratio is obeyed', async () => {
      portal.setDocument(four());
      const h = harness(config());
      await h.cycle();
      portal.setDocument(doc('r6', { a: [HR], b: [HR] }));
      const { events } = await h.cycle();
      expect(registryStatus(events).suspect).toBeNull();
      expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['a', 'b'], removed: ['c', 'd'] }]);
    });

    it('an operator can accept a real mass removal by raising the ratio', async () => {
      const h = harness(config({ catalog: { maxRouteRemovalRatio: 1 } }));
      await h.cycle();
      portal.setDocument(doc('empty', {}));
      const { events } = await h.cycle();
      expect(registryStatus(events).suspect).toBeNull();
      expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: [], removed: ['core', 'process'] }]);
    });
  });

  it('rejected registry routes emit route-failed ROUTE_ENTRY_INVALID every cycle; the other routes are served', async () => {
    portal.setDocument(doc('r1', { core: [HR], Bad: [HR], broken: [{ id: 'x', baseUrl: 'ftp://x' }] }));
    const h = harness(config());
    for (let i = 0; i < 2; i++) {
      const { report, events } = await h.cycle();
      const failed = ofType(events, 'route-failed').sort((a, b) => a.routeKey.localeCompare(b.routeKey));
      expect(failed).toEqual([
        { type: 'route-failed', routeKey: 'Bad', code: 'ROUTE_ENTRY_INVALID', message: 'route "Bad": route key is not a lowercase DNS label', conflicts: [] },
        { type: 'route-failed', routeKey: 'broken', code: 'ROUTE_ENTRY_INVALID', message: 'route "broken": invalid registry entry: /0/baseUrl must be an absolute http(s) URL', conflicts: [] },
      ]);
      expect([...routesOf(events, 'route-snapshot'), ...routesOf(events, 'route-unchanged')]).toEqual(['core']);
      expect(report).toMatchObject({ routes: 1, failed: 2 });
      if (i === 0) {
        // Rejected routes stay known (readiness lists them as refused), they are not unknown routes.
        expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['Bad', 'broken', 'core'], removed: [] }]);
        expectInitialLoadComplete(events);
      }
    }
  });

  it('an unreadable Portal document is a Portal failure: the registry in memory is kept and refreshed', async () => {
    const h = harness(config());
    await h.cycle();
    portal.setMode({ kind: 'raw', body: '<html>maintenance</html>' });
    const { report, events } = await h.cycle();
    expect(registryStatus(events)).toMatchObject({ portalUp: false, portalError: expect.stringContaining('not JSON'), revision: 'r1', source: 'portal' });
    expect(report).toMatchObject({ registry: 'memory', portalError: expect.stringContaining('not JSON') });
    expect(ofType(events, 'routes')).toEqual([]);
    expect(routesOf(events, 'route-unchanged')).toEqual(['core', 'process']);
    portal.setMode({ kind: 'ok' });
    expect(registryStatus((await h.cycle()).events)).toMatchObject({ portalUp: true, portalError: null });
  });

  it('a JSON document that is not a registry is reported on every poll, not hidden by a 304 of it', async () => {
    const h = harness(config());
    await h.cycle();
    portal.setDocument({ revision: 'r2' }); // JSON, served with an ETag, but no routes: PORTAL_INVALID
    for (let i = 0; i < 3; i++) {
      const { report, events } = await h.cycle();
      expect(registryStatus(events), `poll ${i + 1}`).toMatchObject({ portalUp: false, portalError: expect.stringContaining('not a v1 registry'), revision: 'r1' });
      expect(report.registry, `poll ${i + 1}`).toBe('memory');
      expect(routesOf(events, 'route-unchanged')).toEqual(['core', 'process']);
    }
  });

  it.each([
    ['an HTTP 503', { kind: 'status', status: 503 }, 'HTTP 503'],
    ['no answer', { kind: 'hang' }, 'timed out after 200 ms'],
  ] as const)('Portal down at a cold start without Redis (%s): no routes, no initial-load-complete; recovery when it returns', async (_name, mode, problem) => {
    portal.setMode(mode);
    const h = harness(config({ catalog: { portal: { url: portal.url, timeoutMs: 200 } } }));
    let { report, events } = await h.cycle();
    expect(events).toEqual([
      { type: 'registry-status', portalUp: false, portalError: expect.stringContaining(problem), redisUp: null, suspect: null, revision: null, source: null },
    ]);
    expect(report).toMatchObject({ registry: 'none', routes: 0, portalError: expect.stringContaining(problem) });
    portal.setMode({ kind: 'ok' });
    ({ events } = await h.cycle());
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'process'], removed: [] }]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'process']);
    expectInitialLoadComplete(events);
  });
});

// ---------------------------------------------------------------- Redis

describe('with Redis', () => {
  /** Runs a first gateway life with Redis so that the registry copy and every route snapshot are stored. */
  async function seed(namespace: string, document = doc('r1', { core: [HR], process: [ERP] })): Promise<Record<string, Ev<'route-snapshot'>>> {
    portal.setDocument(document);
    const s = await store(namespace);
    const h = harness(config({ redisNamespace: namespace }), { redis: s });
    const { events } = await h.cycle();
    const snaps = Object.fromEntries(ofType(events, 'route-snapshot').map((e) => [e.routeKey, e]));
    for (const routeKey of Object.keys(snaps)) {
      await until(async () => (await raw.exists(`${namespace}:route:${routeKey}`)) === 1, `the snapshot of ${routeKey} in Redis`);
    }
    await until(async () => (await raw.exists(`${namespace}:portal-registry`)) === 1, 'the registry copy in Redis');
    return snaps;
  }

  it('stores the accepted registry and every published snapshot; a 304 and an unchanged route write nothing', async () => {
    const ns = freshNamespace();
    const s = await store(ns);
    const h = harness(config({ redisNamespace: ns }), { redis: s });
    const { events } = await h.cycle();
    expect(registryStatus(events).redisUp).toBe(true);
    await until(async () => (await raw.exists(`${ns}:route:core`, `${ns}:route:process`, `${ns}:portal-registry`)) === 3, 'the Redis copies');
    const copy = JSON.parse((await raw.get(`${ns}:portal-registry`)) ?? 'null') as { format: number; storedAt: string; document: unknown };
    expect(copy).toMatchObject({ format: 1, document: doc('r1', { core: [HR], process: [ERP] }) });
    const core = snapshotFor(events, 'core') as Ev<'route-snapshot'>;
    expect((await raw.getBuffer(`${ns}:route:core`))?.equals(Buffer.from(new Uint8Array(core.snapshot)))).toBe(true);

    await raw.del(`${ns}:route:core`);
    await h.cycle(); // 304 and unchanged routes
    await sleep(100);
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
    expect(registryStatus(events)).toEqual({ type: 'registry-status', portalUp: false, portalError: expect.stringContaining('HTTP 503'), redisUp: true, suspect: null, revision: 'r1', source: 'redis' });
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
    expect(ofType(events, 'route-snapshot').map((e) => [e.routeKey, e.source, e.warning]).sort()).toEqual([
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
    expect(ofType(events, 'route-snapshot').map((e) => [e.routeKey, e.source]).sort()).toEqual([
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
    bytes[bytes.length - 3] = bytes[bytes.length - 3]! ^ 0xff;
    await raw.set(`${ns}:route:core`, bytes);
    hr.setManifestStatus(500);
    const h = harness(config({ redisNamespace: ns }), { redis: await store(ns) });
    const { events } = await h.cycle();
    expect(redisProblems(events)).toEqual([{ type: 'redis-problem', subject: 'core', message: expect.stringMatching(/^snapshot of route "core" .*checksum mismatch/) }]);
    expect(snapshotFor(events, 'core')).toBeUndefined();
    expect(routesOf(events, 'route-failed')).toEqual(['core']);
  });

  it('a snapshot of another route under this route\'s key is reported and never served', async () => {
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
    closers.push(() => own.stop());
    const ns = freshNamespace();
    const s = await store(ns, true, own.url, 200);
    await own.stop();
    await until(() => !s.connected, 'the store to notice');
    const h = harness(config({ redisNamespace: ns }), { redis: s });
    let { events } = await h.cycle();
    expect(registryStatus(events)).toMatchObject({ portalUp: true, redisUp: false, source: 'portal' });
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'process']);
    expectInitialLoadComplete(events);

    await own.restart();
    await until(() => s.connected, 'the store to reconnect');
    ({ events } = await h.cycle()); // nothing changed: the copies are caught up anyway
    expect(registryStatus(events).redisUp).toBe(true);
    expect(redisProblems(events)).toEqual([]);
    const check = new Redis(own.url, { maxRetriesPerRequest: 1 });
    try {
      await until(async () => (await check.exists(`${ns}:portal-registry`, `${ns}:route:core`, `${ns}:route:process`)) === 3, 'the copies in Redis');
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
});

describe('Refresher: hostile manifests from a real Tool Service (issue 11 #1, #8)', () => {
  const tool = (inputSchema: unknown) => ({ ...(manifestFor([{ name: 'lookup' }], 'hr-tools').tools[0] as unknown as Record<string, unknown>), inputSchema });
  const staticConfig = (): GatewayConfig => config({ source: 'static', routes: { core: [HR] } });

  it('refuses a schema nested 100,000 levels deep as MANIFEST_INVALID naming the service and the tool, not a RangeError', async () => {
    const depth = 100_000;
    const deep = '{"type":"object","properties":{"a":'.repeat(depth) + '{}' + '}}'.repeat(depth);
    const text = JSON.stringify({ service: 'hr-tools', tools: [tool({})] }).replace('"inputSchema":{}', `"inputSchema":${deep}`);
    hr.setManifestRaw(text);
    const { events } = await harness(staticConfig()).cycle();
    const failed = ofType(events, 'route-failed');
    expect(failed).toEqual([
      expect.objectContaining({ routeKey: 'core', code: 'MANIFEST_INVALID', message: expect.stringMatching(/Tool Service "hr-tools" manifest is invalid: \/tools\/0 \(lookup@1\.0\.0\): nests deeper than 256 levels/) }),
    ]);
    expect((failed[0] as { message: string }).message).not.toMatch(/RangeError|call stack/);
  });

  it('refuses a $ref loop and a backtracking pattern, naming the service, tool and place', async () => {
    hr.setManifest({
      service: 'hr-tools',
      tools: [
        { ...tool({ type: 'object', properties: { x: { $ref: '#/$defs/a' } }, $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } }), name: 'looping' },
        { ...tool({ type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)(a+)+$' } } }), name: 'lookahead' },
      ],
    });
    const { events } = await harness(staticConfig()).cycle();
    const message = (ofType(events, 'route-failed')[0] as { message: string }).message;
    expect(message).toMatch(/Tool Service "hr-tools" manifest is invalid: .*\/tools\/0 \(looping@1\.0\.0\)\/inputSchema\/\$defs\/[ab]: \$ref loop/);
    expect(message).toMatch(/\/tools\/1 \(lookahead@1\.0\.0\)\/inputSchema\/properties\/s\/pattern: .* lookahead/);
  });
});
