/**
 * Shared set-up of the refresher tests (`refresher`, `manifest-cache`,
 * `registry-source`, `redis-mirror`.test.ts): the refresh cycle is driven
 * directly — a `Refresher` with `emit` collecting its events, a real
 * `PortalClient` against the Portal fixture, a real `RedisStore` against a
 * real redis-server (or none), and real fixture Tool Services. Each module's
 * behaviour is observed where its contract is: in the events of `cycle()`.
 *
 * {@link useRefreshFixtures} registers the hooks; the fixtures are live
 * bindings filled in by its `beforeAll`.
 */
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { validateConfig } from '../../../../src/shared/config/load.js';
import type { GatewayConfig, ServiceEntry } from '../../../../src/shared/config/schema.js';
import { decodeSnapshot, type SnapshotMeta } from '../../../../src/shared/snapshot/layout.js';
import type { RefreshEvent } from '../../../../src/shared/threads/messages.js';
import { PortalClient } from '../../../../src/workers/refresh/portal-client.js';
import { RedisStore } from '../../../../src/workers/refresh/redis-store.js';
import { Refresher, type CycleReport, type RefresherDeps } from '../../../../src/workers/refresh/refresher.js';
import { startFixturePortal, type FixturePortal } from '../../../fixtures/portal.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../../fixtures/tool-service.js';
import { waitUntil } from '../../../helpers/eventually.js';
import { startRedis, type TestRedis } from '../../../helpers/redis.js';

// ---------------------------------------------------------------- fixtures

export let hr: FixtureToolService;
export let erp: FixtureToolService;
export let ops: FixtureToolService;
export let portal: FixturePortal;
export let redisServer: TestRedis;
/** A plain client of the test Redis, to look at and tamper with what the gateway stored. */
export let raw: Redis;
export let HR: ServiceEntry;
export let ERP: ServiceEntry;
export let OPS: ServiceEntry;
const closers: Array<() => Promise<void>> = [];

export const hrManifest = manifestFor([{ name: 'employee_search' }, { name: 'leave_request' }], 'hr-tools');
export const erpManifest = manifestFor([{ name: 'invoice_lookup' }], 'erp-tools');
export const opsManifest = manifestFor([{ name: 'restart_pod' }], 'ops-tools');

export const entry = (svc: FixtureToolService, id: string): ServiceEntry => ({ id, baseUrl: svc.url });

/**
 * Starts three Tool Services (hr, erp, ops), a Portal and a redis-server for
 * the test file; before each test the manifests are reset and the Portal
 * serves `r1 = {core: [HR], process: [ERP]}`; after each test the stores and
 * servers a test opened ({@link closeAfterTest}) are closed.
 */
export function useRefreshFixtures(): void {
  beforeAll(async () => {
    [hr, erp, ops, portal, redisServer] = await Promise.all([startFixtureToolService(), startFixtureToolService(), startFixtureToolService(), startFixturePortal(), startRedis()]);
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
}

/** Closes `close` after the current test. */
export function closeAfterTest(close: () => Promise<void>): void {
  closers.push(close);
}

// ---------------------------------------------------------------- configuration and harness

/** A registry document v1. */
export const doc = (revision: string, routes: Record<string, unknown>): { revision: string; routes: Record<string, unknown> } => ({ revision, routes });

let nsCounter = 0;
/** A Redis namespace of its own for each test. */
export const freshNamespace = (): string => `refresher-${process.pid}-${++nsCounter}`;

export interface ConfigOptions {
  source?: 'static' | 'portal';
  routes?: Record<string, ServiceEntry[]>;
  catalog?: Record<string, unknown>;
  redisNamespace?: string;
}

/** A validated config: portal mode against the fixture Portal unless `source: 'static'`; Redis only with a namespace. */
export function config(o: ConfigOptions = {}): GatewayConfig {
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

/** Static mode with `routes` (default core: [HR], process: [ERP]). */
export const staticConfig = (routes: Record<string, ServiceEntry[]> = { core: [HR], process: [ERP] }, catalog: Record<string, unknown> = {}): GatewayConfig =>
  config({ source: 'static', routes, catalog });

/** A store of the test Redis (or of `url`), closed after the test; `wait` waits until it is connected. */
export async function store(namespace: string, wait = true, url = redisServer.url, timeoutMs = 1_000): Promise<RedisStore> {
  const s = new RedisStore(url, namespace, timeoutMs);
  closeAfterTest(() => s.close());
  if (wait) await waitUntil(() => s.connected, 'the Redis store connected');
  return s;
}

/** A refresher and the events it emitted. */
export interface Harness {
  refresher: Refresher;
  events: RefreshEvent[];
  /** Runs one cycle; returns its report and the events it emitted. */
  cycle(): Promise<{ report: CycleReport; events: RefreshEvent[] }>;
}

/** Extra dependencies of a harness's refresher; `portal` defaults to a client of the fixture Portal in portal mode. */
export type HarnessDeps = Partial<Omit<RefresherDeps, 'config' | 'emit'>>;

/** A refresher for `cfg` whose events are collected; `emitHook` runs on each event before it is collected (it may throw). */
export function harness(cfg: GatewayConfig, deps: HarnessDeps = {}, emitHook?: (e: RefreshEvent) => void): Harness {
  const events: RefreshEvent[] = [];
  const portalClient =
    deps.portal !== undefined
      ? deps.portal
      : cfg.catalog.source === 'portal'
        ? new PortalClient({ url: portal.url, timeoutMs: cfg.catalog.portal.timeoutMs, maxBytes: cfg.catalog.portal.maxBytes })
        : null;
  const refresher = new Refresher({
    ...deps,
    config: cfg,
    emit: (e) => {
      emitHook?.(e);
      events.push(e);
    },
    portal: portalClient,
    redis: deps.redis ?? null,
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

// ---------------------------------------------------------------- event views

export type Ev<T extends RefreshEvent['type']> = Extract<RefreshEvent, { type: T }>;
export const ofType = <T extends RefreshEvent['type']>(events: RefreshEvent[], type: T): Array<Ev<T>> => events.filter((e): e is Ev<T> => e.type === type);
export const types = (events: RefreshEvent[]): string[] => events.map((e) => e.type);
export const routesOf = (events: RefreshEvent[], type: 'route-snapshot' | 'route-unchanged' | 'route-failed'): string[] =>
  ofType(events, type)
    .map((e) => e.routeKey)
    .sort();

/** The meta section of a published snapshot, decoded with its checksum verified; it must equal the event's `meta`. */
export function metaOf(e: Ev<'route-snapshot'>): SnapshotMeta {
  const meta = decodeSnapshot(e.snapshot, { verifyChecksum: true }).meta;
  expect(e.meta, `route-snapshot ${e.routeKey}: meta carried by the event`).toEqual(meta);
  return meta;
}

export const snapshotFor = (events: RefreshEvent[], routeKey: string): Ev<'route-snapshot'> | undefined => ofType(events, 'route-snapshot').find((e) => e.routeKey === routeKey);

/** Routes whose new snapshot announces a tools/list change. */
export const listChanged = (events: RefreshEvent[]): string[] =>
  ofType(events, 'route-snapshot')
    .filter((e) => e.listChanged)
    .map((e) => e.routeKey)
    .sort();

/** Redis problems raised (a `null` message clears a subject's problem). */
export const redisProblems = (events: RefreshEvent[]): Array<Ev<'redis-problem'>> => ofType(events, 'redis-problem').filter((e) => e.message !== null);

/** initial-load-complete was emitted once, after every route of the cycle was tried. */
export function expectInitialLoadComplete(events: RefreshEvent[]): void {
  expect(
    types(events).filter((t) => t === 'initial-load-complete'),
    'initial-load-complete',
  ).toHaveLength(1);
  const at = types(events).indexOf('initial-load-complete');
  const lastRoute = Math.max(...events.map((e, i) => (e.type.startsWith('route') ? i : -1)));
  expect(at, 'initial-load-complete follows every route event').toBeGreaterThan(lastRoute);
}

/** The one registry-status event of a cycle. */
export function registryStatus(events: RefreshEvent[]): Ev<'registry-status'> {
  const all = ofType(events, 'registry-status');
  expect(all, 'one registry-status per cycle').toHaveLength(1);
  return all[0] as Ev<'registry-status'>;
}
