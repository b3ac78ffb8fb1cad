import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchManifestIfChanged, manifestUrl } from '../../../../src/workers/refresh/fetch-manifest.js';
import { validateConfig } from '../../../../src/shared/config/load.js';
import type { ServiceEntry } from '../../../../src/shared/config/schema.js';
import { GatewayError } from '../../../../src/shared/errors.js';
import { decodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import type { RefreshEvent } from '../../../../src/shared/threads/messages.js';
import { Refresher } from '../../../../src/workers/refresh/refresher.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../../fixtures/tool-service.js';
import { closedOrigin } from '../../../helpers/ports.js';

let good: FixtureToolService;
let other: FixtureToolService;
let failing: FixtureToolService;
let brokenJson: FixtureToolService;
let invalid: FixtureToolService;
let huge: FixtureToolService;
/** Accepts the manifest request and never answers. */
let hung: FixtureToolService;
let refusedOrigin: string;

beforeAll(async () => {
  good = await startFixtureToolService();
  other = await startFixtureToolService();
  failing = await startFixtureToolService();
  brokenJson = await startFixtureToolService();
  invalid = await startFixtureToolService();
  huge = await startFixtureToolService();
  good.setManifest(manifestFor([{ name: 'employee_search', title: 'Search' }, { name: 'employee_get' }], 'good'));
  other.setManifest(manifestFor([{ name: 'erp_order' }], 'other'));
  failing.setManifest(manifestFor([{ name: 'x' }]));
  failing.setManifestStatus(500);
  brokenJson.setManifestRaw('{"service": "broken", "tools": [');
  invalid.setManifest({ service: 'invalid', tools: [{ name: 'bad_schema', version: '1', inputSchema: { type: 'string' }, execution: { path: '/x' } }] });
  huge.setManifest(manifestFor([{ name: 'big', description: 'x'.repeat(2000) }]));
  hung = await startFixtureToolService();
  hung.setManifestAnswer({ kind: 'hang' });
  refusedOrigin = await closedOrigin();
});
afterAll(async () => {
  await Promise.all([good, other, failing, brokenJson, invalid, huge, hung].map((s) => s?.close()));
});

const entry = (id: string, baseUrl: string): ServiceEntry => ({ id, baseUrl });

/** One refresh cycle of static `routes` through the refresh worker's own Refresher; its events. */
async function cycle(routes: Record<string, ServiceEntry[]>, catalog: Record<string, unknown> = {}): Promise<RefreshEvent[]> {
  const events: RefreshEvent[] = [];
  const config = validateConfig({ catalog: { manifestTimeoutMs: 10_000, maxManifestBytes: 1024, manifestMaxBackoffMs: 0, ...catalog, static: { routes } } });
  await new Refresher({ config, emit: (e) => events.push(e), portal: null, redis: null }).cycle();
  return events;
}

const snapshotOf = (events: RefreshEvent[], routeKey: string) => {
  const e = events.find((x) => x.type === 'route-snapshot' && x.routeKey === routeKey);
  return e?.type === 'route-snapshot' ? e : undefined;
};
const failureOf = (events: RefreshEvent[], routeKey: string) => {
  const e = events.find((x) => x.type === 'route-failed' && x.routeKey === routeKey);
  return e?.type === 'route-failed' ? e : undefined;
};

describe('a route built from manifests (Refresher)', () => {
  it('builds a snapshot from real Tool Service manifests', async () => {
    const events = await cycle({ core: [entry('good', good.url), entry('other', other.url)] });
    const snap = snapshotOf(events, 'core');
    if (!snap) throw new Error(JSON.stringify(events));
    const view = decodeSnapshot(snap.snapshot, { verifyChecksum: true });
    expect(view.catalogTools().map((t) => `${t.serviceId}:${t.name}`)).toEqual(['good:employee_get', 'good:employee_search', 'other:erp_order']);
    expect(view.catalogTools()[1]?.executionUrl).toBe(`${good.origin}/tools/employee_search`);
    expect(view.meta).toMatchObject({ routeKey: 'core', source: 'static', toolCount: 3 });
  });

  it('refuses a route whose services conflict, with TOOL_NAME_CONFLICT', async () => {
    const events = await cycle({ core: [entry('a', good.url), entry('b', good.url)] });
    expect(failureOf(events, 'core')).toMatchObject({ code: 'TOOL_NAME_CONFLICT' });
    expect(snapshotOf(events, 'core')).toBeUndefined();
  });

  it('refuses a route over the tool cap, with TOOL_CAP_EXCEEDED', async () => {
    const events = await cycle({ core: [entry('good', good.url)] }, { maxToolsPerRoute: 1 });
    expect(failureOf(events, 'core')).toMatchObject({ code: 'TOOL_CAP_EXCEEDED' });
  });

  it('fails the route when any one of its services fails', async () => {
    const events = await cycle({ core: [entry('good', good.url), entry('failing', failing.url)] });
    expect(failureOf(events, 'core')).toMatchObject({ code: 'MANIFEST_UNREACHABLE' });
    expect(snapshotOf(events, 'core')).toBeUndefined();
  });

  it('uses manifestPath when given', async () => {
    const events = await cycle({ core: [{ id: 'good', baseUrl: good.url, manifestPath: '/elsewhere' }] });
    // The fixture serves only /manifest; GET elsewhere answers 405.
    expect(failureOf(events, 'core')?.message).toContain(`${good.origin}/elsewhere: HTTP 405`);
  });
});

describe('routes are isolated (Refresher)', () => {
  it('builds the good routes whatever happens to the others, with each failure coded', async () => {
    const events = await cycle(
      {
        first: [entry('good', good.url)],
        status: [entry('failing', failing.url)],
        broken: [entry('broken', brokenJson.url)],
        invalid: [entry('invalid', invalid.url)],
        refused: [entry('refused', refusedOrigin)],
        hung: [entry('hung', hung.origin)],
        huge: [entry('huge', huge.url)],
        last: [entry('other', other.url)],
      },
      { manifestTimeoutMs: 1_000 }, // the hung service costs this much; shorter fails fast services on a loaded machine
    );
    const outcome = (key: string): string => (snapshotOf(events, key) ? 'ok' : (failureOf(events, key)?.code ?? 'none'));
    expect(['first', 'status', 'broken', 'invalid', 'refused', 'hung', 'huge', 'last'].map((k) => [k, outcome(k)])).toEqual([
      ['first', 'ok'],
      ['status', 'MANIFEST_UNREACHABLE'],
      ['broken', 'MANIFEST_INVALID'],
      ['invalid', 'MANIFEST_INVALID'],
      ['refused', 'MANIFEST_UNREACHABLE'],
      ['hung', 'MANIFEST_UNREACHABLE'],
      ['huge', 'MANIFEST_UNREACHABLE'],
      ['last', 'ok'],
    ]);
    const reason = (key: string): string => failureOf(events, key)?.message ?? '';
    expect(reason('status')).toContain(`Tool Service "failing" manifest at ${failing.origin}/manifest: HTTP 500`);
    expect(reason('broken')).toContain(`Tool Service "broken" manifest at ${brokenJson.origin}/manifest: body is not JSON`);
    expect(reason('invalid')).toMatch(/Tool Service "invalid" manifest is invalid: .*\/tools\/0 \(bad_schema@1\)\/inputSchema/);
    expect(reason('refused')).toContain(`Tool Service "refused" manifest at ${refusedOrigin}/manifest: ECONNREFUSED`);
    expect(reason('hung')).toContain(`Tool Service "hung" manifest at ${hung.origin}/manifest: timed out after 1000 ms`);
    expect(reason('huge')).toContain(`Tool Service "huge" manifest at ${huge.origin}/manifest: larger than catalog.maxManifestBytes (1024)`);
    const last = snapshotOf(events, 'last');
    expect(
      last &&
        decodeSnapshot(last.snapshot)
          .catalogTools()
          .map((t) => t.name),
    ).toEqual(['erp_order']);
  });
});

describe('fetchManifestIfChanged', () => {
  it('returns the parsed manifest and throws coded GatewayErrors', async () => {
    const opts = { timeoutMs: 10_000, maxBytes: 1024, etag: null };
    expect(await fetchManifestIfChanged(entry('good', good.url), opts)).toEqual({
      kind: 'manifest',
      manifest: manifestFor([{ name: 'employee_search', title: 'Search' }, { name: 'employee_get' }], 'good'),
      etag: null,
    });
    const err = await fetchManifestIfChanged(entry('failing', failing.url), opts).catch((e: unknown) => e);
    expect(GatewayError.is(err) && err.code).toBe('MANIFEST_UNREACHABLE');
    const big = await fetchManifestIfChanged(entry('huge', huge.url), opts).catch((e: unknown) => e);
    expect(GatewayError.is(big) && big.code).toBe('MANIFEST_UNREACHABLE');
    expect(await fetchManifestIfChanged(entry('huge', huge.url), { ...opts, maxBytes: 1024 * 1024 })).toMatchObject({ kind: 'manifest', manifest: { service: 'fixture-tools' } });
  });

  it('sends If-None-Match with a known ETag: 304 is not-modified, a changed manifest comes with its new ETag', async () => {
    const svc = await startFixtureToolService({ etag: true });
    try {
      svc.setManifest(manifestFor([{ name: 'a' }], 'etagged'));
      const e = entry('etagged', svc.url);
      const opts = { timeoutMs: 10_000, maxBytes: 1024 * 1024 };
      const first = await fetchManifestIfChanged(e, { ...opts, etag: null });
      expect(first).toMatchObject({ kind: 'manifest', manifest: { service: 'etagged' }, etag: expect.stringMatching(/^".+"$/) });
      const etag = first.kind === 'manifest' ? first.etag : null;
      expect(await fetchManifestIfChanged(e, { ...opts, etag })).toEqual({ kind: 'not-modified' });
      expect(svc.manifestNotModified).toBe(1);
      svc.setManifest(manifestFor([{ name: 'a' }, { name: 'b' }], 'etagged'));
      const changed = await fetchManifestIfChanged(e, { ...opts, etag });
      expect(changed).toMatchObject({ kind: 'manifest', manifest: { tools: [{ name: 'a' }, { name: 'b' }] } });
      expect(changed.kind === 'manifest' ? changed.etag : null).not.toBe(etag);
      expect(svc.manifestNotModified).toBe(1);
    } finally {
      await svc.close();
    }
  });

  it('builds the manifest URL from baseUrl and manifestPath', () => {
    expect(manifestUrl({ id: 'a', baseUrl: 'http://h:1' })).toBe('http://h:1/manifest');
    expect(manifestUrl({ id: 'a', baseUrl: 'http://h:1/' })).toBe('http://h:1/manifest');
    expect(manifestUrl({ id: 'a', baseUrl: 'http://h:1/api', manifestPath: '/v1/manifest.json' })).toBe('http://h:1/api/v1/manifest.json');
  });
});
