/**
 * The manifest cache (src/workers/refresh/manifest-cache.ts) through refresh
 * cycles: a Tool Service shared by several routes is fetched once per cycle,
 * `catalog.manifestConcurrency` bounds the fetches, a failing Tool Service
 * backs off (an injected clock drives the backoff, never the wall clock)
 * while its last good manifest keeps serving, and an unexpected exception
 * while loading is INTERNAL.
 */
import { describe, expect, it } from 'vitest';
import { fetchManifestIfChanged } from '../../../../src/workers/refresh/fetch-manifest.js';
import { manifestFor, startFixtureToolService } from '../../../fixtures/tool-service.js';
import {
  closeAfterTest,
  entry,
  erp,
  ERP,
  expectInitialLoadComplete,
  harness,
  hr,
  HR,
  hrManifest,
  ofType,
  ops,
  OPS,
  routesOf,
  snapshotFor,
  staticConfig,
  useRefreshFixtures,
} from './refresh-harness.js';
useRefreshFixtures();

describe('manifest cache', () => {
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
    const before = { hr: hr.manifestRequests, erp: erp.manifestRequests, ops: ops.manifestRequests };
    const { report, events } = await h.cycle();
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'mixed', 'ops', 'people', 'process']);
    expect(report).toMatchObject({ routes: 5, published: 5, failed: 0 });
    expect([hr.manifestRequests - before.hr, erp.manifestRequests - before.erp, ops.manifestRequests - before.ops]).toEqual([1, 1, 1]);
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

  it('an invalid manifest of a Tool Service with a last good one: the last good serves, with a warning', async () => {
    const h = harness(staticConfig());
    await h.cycle();
    hr.setManifest(manifestFor([{ name: 'bad_schema', inputSchema: { type: 'string' } }], 'hr-tools'));
    const { events } = await h.cycle();
    expect(ofType(events, 'route-failed')).toEqual([]);
    expect(ofType(events, 'route-unchanged').find((e) => e.routeKey === 'core')?.warning).toMatch(/^serving last good manifest: Tool Service "hr-tools" manifest is invalid: /);
  });

  it('an unexpected exception while loading a manifest is INTERNAL and logged, not MANIFEST_UNREACHABLE; the other routes are built', async () => {
    const logged: Array<{ details: object; message: string }> = [];
    const bug = new RangeError('fetch bug');
    const fetchManifest: typeof fetchManifestIfChanged = async (e, options) => {
      if (e.id === 'hr-tools') throw bug;
      return fetchManifestIfChanged(e, options);
    };
    const h = harness(staticConfig(), { fetchManifest, log: { error: (details, message) => logged.push({ details, message }) } });
    const { events } = await h.cycle();
    expect(ofType(events, 'route-failed')).toEqual([
      {
        type: 'route-failed',
        routeKey: 'core',
        code: 'INTERNAL',
        message: 'route "core" not replaced: Tool Service "hr-tools" manifest could not be loaded: internal error (RangeError: fetch bug)',
        conflicts: [],
      },
    ]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['process']);
    expect(logged).toEqual([{ details: { err: bug, service: 'hr-tools' }, message: 'unexpected exception while loading a manifest' }]);
  });

  it('ETag: an unchanged manifest costs a 304 and keeps serving the tools it had; a changed one is fetched in full', async () => {
    const svc = await startFixtureToolService({ etag: true });
    closeAfterTest(() => svc.close());
    svc.setManifest(manifestFor([{ name: 'tagged' }], 'etag-tools'));
    const h = harness(staticConfig({ tagged: [entry(svc, 'etag-tools')] }));
    expect(routesOf((await h.cycle()).events, 'route-snapshot')).toEqual(['tagged']);
    expect(svc.manifestNotModified).toBe(0);
    const { events } = await h.cycle();
    expect(svc.manifestNotModified).toBe(1);
    expect(ofType(events, 'route-unchanged')).toEqual([{ type: 'route-unchanged', routeKey: 'tagged', source: 'static', warning: null }]);
    svc.setManifest(manifestFor([{ name: 'tagged' }, { name: 'more' }], 'etag-tools'));
    const changed = await h.cycle();
    expect(svc.manifestNotModified).toBe(1);
    expect(snapshotFor(changed.events, 'tagged')?.meta.toolCount).toBe(2);
  });
});
