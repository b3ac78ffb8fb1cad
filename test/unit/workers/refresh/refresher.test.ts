/**
 * The refresh cycle's orchestration (src/workers/refresh/refresher.ts):
 * one snapshot per changed route, route-unchanged otherwise, per-route
 * isolation (a failure or a bug in one route never stops another), refused
 * replacements keeping what is served, the tools/list change announcement,
 * the per-route record (pruned with its route), the revisions a restarted
 * worker inherits, and INTERNAL for bugs. Driven directly through `cycle()`
 * (see refresh-harness.ts).
 */
import { describe, expect, it } from 'vitest';
import { GatewayErrorCode } from '../../../../src/shared/errors.js';
import { decodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import type { RefreshEvent } from '../../../../src/shared/threads/messages.js';
import { manifestFor } from '../../../fixtures/tool-service.js';
import type { GatewayConfig } from '../../../../src/shared/config/schema.js';
import {
  config,
  entry,
  erp,
  ERP,
  expectInitialLoadComplete,
  harness,
  hr,
  HR,
  hrManifest,
  listChanged,
  metaOf,
  ofType,
  ops,
  OPS,
  routesOf,
  snapshotFor,
  staticConfig,
  useRefreshFixtures,
  type Ev,
} from './refresh-harness.js';
useRefreshFixtures();

describe('static mode', () => {
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

  it('routes already served (after a refresh-worker restart) are not re-published when unchanged', async () => {
    const first = await harness(staticConfig()).cycle();
    const published = Object.fromEntries(ofType(first.events, 'route-snapshot').map((e) => [e.routeKey, metaOf(e).revision]));
    const { events } = await harness(staticConfig(), { published }).cycle();
    expect(ofType(events, 'route-snapshot')).toEqual([]);
    expect(routesOf(events, 'route-unchanged')).toEqual(['core', 'process']);
  });

  it("route-snapshot carries the snapshot's meta (revision, toolCount, builtAt, source), so no reader decodes the buffer for it", async () => {
    const builtAt = 1_764_496_800_000;
    const h = harness(staticConfig(), { now: () => builtAt });
    const { events } = await h.cycle();
    expect(ofType(events, 'route-snapshot')).toHaveLength(2);
    for (const e of ofType(events, 'route-snapshot')) {
      expect(e.meta).toEqual(decodeSnapshot(e.snapshot, { verifyChecksum: true }).meta);
      expect(e.meta).toMatchObject({ routeKey: e.routeKey, source: 'static', builtAt });
      expect(e.meta.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
    }
    expect(snapshotFor(events, 'core')?.meta.toolCount).toBe(2);
    expect(snapshotFor(events, 'process')?.meta.toolCount).toBe(1);
  });
});

describe('bugs in the refresh path are INTERNAL, not a manifest problem', () => {
  it('an exception thrown while one route is refreshed is INTERNAL for that route and logged; the other routes are published; the route is retried next cycle', async () => {
    const logged: Array<{ details: object; message: string }> = [];
    const bug = new TypeError('emit exploded');
    let explode = true;
    const h = harness(staticConfig(), { log: { error: (details, message) => logged.push({ details, message }) } }, (e: RefreshEvent) => {
      if (explode && e.type === 'route-snapshot' && e.routeKey === 'core') throw bug;
    });
    const { report, events } = await h.cycle();
    expect(ofType(events, 'route-failed')).toEqual([
      { type: 'route-failed', routeKey: 'core', code: GatewayErrorCode.Internal, message: 'refresh of route "core" crashed: TypeError: emit exploded', conflicts: [] },
    ]);
    expect(routesOf(events, 'route-snapshot')).toEqual(['process']);
    expect(report).toMatchObject({ published: 1, failed: 1 });
    expectInitialLoadComplete(events);
    expect(logged).toEqual([{ details: { err: bug, route: 'core' }, message: 'route refresh crashed' }]);

    // The snapshot that never left is not taken for served: the next cycle publishes it.
    explode = false;
    const next = await h.cycle();
    expect(routesOf(next.events, 'route-snapshot')).toEqual(['core']);
    expect(routesOf(next.events, 'route-unchanged')).toEqual(['process']);
    expect(ofType(next.events, 'route-failed')).toEqual([]);
  });

  it('expected refusals keep their own codes (MANIFEST_UNREACHABLE, TOOL_NAME_CONFLICT), and nothing is logged as a bug', async () => {
    const logged: unknown[] = [];
    hr.setManifestStatus(503);
    ops.setManifest(manifestFor([{ name: 'invoice_lookup' }], 'ops-tools'));
    const h = harness(staticConfig({ core: [HR], mixed: [ERP, OPS], process: [ERP] }), { log: { error: (details) => logged.push(details) } });
    const { events } = await h.cycle();
    expect(
      ofType(events, 'route-failed')
        .map((e) => [e.routeKey, e.code])
        .sort(),
    ).toEqual([
      ['core', 'MANIFEST_UNREACHABLE'],
      ['mixed', 'TOOL_NAME_CONFLICT'],
    ]);
    expect(logged).toEqual([]);
  });
});

describe('Refresher: hostile manifests from a real Tool Service', () => {
  const tool = (inputSchema: unknown) => ({ ...(manifestFor([{ name: 'lookup' }], 'hr-tools').tools[0] as unknown as Record<string, unknown>), inputSchema });
  const coreOnly = (): GatewayConfig => config({ source: 'static', routes: { core: [HR] } });

  it('refuses a schema nested 100,000 levels deep as MANIFEST_INVALID naming the service and the tool, not a RangeError', async () => {
    const depth = 100_000;
    const deep = '{"type":"object","properties":{"a":'.repeat(depth) + '{}' + '}}'.repeat(depth);
    const text = JSON.stringify({ service: 'hr-tools', tools: [tool({})] }).replace('"inputSchema":{}', `"inputSchema":${deep}`);
    hr.setManifestRaw(text);
    const { events } = await harness(coreOnly()).cycle();
    const failed = ofType(events, 'route-failed');
    expect(failed).toEqual([
      expect.objectContaining({
        routeKey: 'core',
        code: 'MANIFEST_INVALID',
        message: expect.stringMatching(/Tool Service "hr-tools" manifest is invalid: \/tools\/0 \(lookup@1\.0\.0\): nests deeper than 256 levels/),
      }),
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
    const { events } = await harness(coreOnly()).cycle();
    const message = (ofType(events, 'route-failed')[0] as { message: string }).message;
    expect(message).toMatch(/Tool Service "hr-tools" manifest is invalid: .*\/tools\/0 \(looping@1\.0\.0\)\/inputSchema\/\$defs\/[ab]: \$ref loop/);
    expect(message).toMatch(/\/tools\/1 \(lookahead@1\.0\.0\)\/inputSchema\/properties\/s\/pattern: .* lookahead/);
  });
});
