import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchManifest, manifestUrl } from '../../../../src/workers/refresh/fetch-manifest.js';
import { validateConfig } from '../../../../src/shared/config/load.js';
import type { ServiceEntry } from '../../../../src/shared/config/schema.js';
import { GatewayError } from '../../../../src/shared/errors.js';
import { decodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import type { RefreshEvent } from '../../../../src/shared/threads/messages.js';
import { Refresher } from '../../../../src/workers/refresh/refresher.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../../fixtures/tool-service.js';

/** A TCP server that accepts connections and never answers: a hung Tool Service. */
async function startHungServer(): Promise<{ origin: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An origin on which nothing listens (a port that was just released). */
async function closedOrigin(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

let good: FixtureToolService;
let other: FixtureToolService;
let failing: FixtureToolService;
let brokenJson: FixtureToolService;
let invalid: FixtureToolService;
let huge: FixtureToolService;
let hung: Awaited<ReturnType<typeof startHungServer>>;
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
  invalid.setManifest({ service: 'invalid', tools: [{ name: 'bad name', version: '1', inputSchema: { type: 'object' }, execution: { path: '/x' } }] });
  huge.setManifest(manifestFor([{ name: 'big', description: 'x'.repeat(2000) }]));
  hung = await startHungServer();
  refusedOrigin = await closedOrigin();
});
afterAll(async () => {
  await Promise.all([good, other, failing, brokenJson, invalid, huge].map((s) => s?.close()));
  await hung?.close();
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
      { manifestTimeoutMs: 300 },
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
    expect(reason('invalid')).toMatch(/Tool Service "invalid" manifest is invalid: .*\/tools\/0\/name/);
    expect(reason('refused')).toContain(`Tool Service "refused" manifest at ${refusedOrigin}/manifest: ECONNREFUSED`);
    expect(reason('hung')).toContain(`Tool Service "hung" manifest at ${hung.origin}/manifest: timed out after 300 ms`);
    expect(reason('huge')).toContain(`Tool Service "huge" manifest at ${huge.origin}/manifest: larger than catalog.maxManifestBytes (1024)`);
    const last = snapshotOf(events, 'last');
    expect(last && decodeSnapshot(last.snapshot).catalogTools().map((t) => t.name)).toEqual(['erp_order']);
  });
});

describe('fetchManifest', () => {
  it('returns the parsed manifest and throws coded GatewayErrors', async () => {
    const opts = { timeoutMs: 10_000, maxBytes: 1024 };
    expect(await fetchManifest(entry('good', good.url), opts)).toEqual(manifestFor([{ name: 'employee_search', title: 'Search' }, { name: 'employee_get' }], 'good'));
    const err = await fetchManifest(entry('failing', failing.url), opts).catch((e: unknown) => e);
    expect(GatewayError.is(err) && err.code).toBe('MANIFEST_UNREACHABLE');
    const big = await fetchManifest(entry('huge', huge.url), opts).catch((e: unknown) => e);
    expect(GatewayError.is(big) && big.code).toBe('MANIFEST_UNREACHABLE');
    expect(await fetchManifest(entry('huge', huge.url), { ...opts, maxBytes: 1024 * 1024 })).toMatchObject({ service: 'fixture-tools' });
  });

  it('builds the manifest URL from baseUrl and manifestPath', () => {
    expect(manifestUrl({ id: 'a', baseUrl: 'http://h:1' })).toBe('http://h:1/manifest');
    expect(manifestUrl({ id: 'a', baseUrl: 'http://h:1/' })).toBe('http://h:1/manifest');
    expect(manifestUrl({ id: 'a', baseUrl: 'http://h:1/api', manifestPath: '/v1/manifest.json' })).toBe('http://h:1/api/v1/manifest.json');
  });
});
