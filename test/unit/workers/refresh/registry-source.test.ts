/**
 * The registry source (src/workers/refresh/registry-source.ts) in portal
 * mode, through refresh cycles: registry-status every poll, the route set
 * from the Portal (304 when unchanged), added and removed routes, the
 * mass-removal guard, rejected routes, and a Portal that fails or serves
 * something that is not a registry (docs/contracts/portal-registry-v1.md).
 */
import { describe, expect, it } from 'vitest';
import {
  config,
  doc,
  ERP,
  expectInitialLoadComplete,
  harness,
  hr,
  HR,
  listChanged,
  metaOf,
  ofType,
  OPS,
  portal,
  registryStatus,
  routesOf,
  snapshotFor,
  useRefreshFixtures,
} from './refresh-harness.js';
useRefreshFixtures();

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
    expect(events).toEqual([{ type: 'registry-status', portalUp: false, portalError: expect.stringContaining(problem), redisUp: null, suspect: null, revision: null, source: null }]);
    expect(report).toMatchObject({ registry: 'none', routes: 0, portalError: expect.stringContaining(problem) });
    portal.setMode({ kind: 'ok' });
    ({ events } = await h.cycle());
    expect(ofType(events, 'routes')).toEqual([{ type: 'routes', routeKeys: ['core', 'process'], removed: [] }]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['core', 'process']);
    expectInitialLoadComplete(events);
  });
});
