import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContextFromConfig, buildRoute, buildRoutes, fetchManifest, manifestUrl, type BuildContext } from '../../../../src/shared/catalog/build.js';
import { validateConfig } from '../../../../src/shared/config/load.js';
import type { ServiceEntry } from '../../../../src/shared/config/schema.js';
import { GatewayError } from '../../../../src/shared/errors.js';
import { decodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
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

const config = () => validateConfig({ catalog: { manifestTimeoutMs: 10_000, maxManifestBytes: 1024 } });
const entry = (id: string, baseUrl: string): ServiceEntry => ({ id, baseUrl });

describe('buildRoute', () => {
  it('builds a snapshot from real Tool Service manifests', async () => {
    const ctx = buildContextFromConfig(config(), 'static');
    const result = await buildRoute('core', [entry('good', good.url), entry('other', other.url)], ctx);
    if (!result.ok) throw new Error(result.reason);
    expect(result.catalog.tools.map((t) => `${t.serviceId}:${t.name}`)).toEqual(['good:employee_get', 'good:employee_search', 'other:erp_order']);
    expect(result.catalog.tools[1]?.executionUrl).toBe(`${good.origin}/tools/employee_search`);
    const view = decodeSnapshot(result.snapshot, { verifyChecksum: true });
    expect(view.meta).toMatchObject({ routeKey: 'core', source: 'static', toolCount: 3, revision: result.catalog.revision });
    expect(view.catalogTools()).toEqual(result.catalog.tools);
  });

  it('refuses a route whose services conflict, with TOOL_NAME_CONFLICT', async () => {
    const ctx = buildContextFromConfig(config(), 'static');
    const result = await buildRoute('core', [entry('a', good.url), entry('b', good.url)], ctx);
    expect(result).toMatchObject({ routeKey: 'core', ok: false, code: 'TOOL_NAME_CONFLICT' });
  });

  it('refuses a route over the tool cap, with TOOL_CAP_EXCEEDED', async () => {
    const ctx = buildContextFromConfig(validateConfig({ catalog: { maxToolsPerRoute: 1 } }), 'static');
    expect(await buildRoute('core', [entry('good', good.url)], ctx)).toMatchObject({ ok: false, code: 'TOOL_CAP_EXCEEDED' });
  });

  it('fails the route when any one of its services fails', async () => {
    const ctx = buildContextFromConfig(config(), 'static');
    const result = await buildRoute('core', [entry('good', good.url), entry('failing', failing.url)], ctx);
    expect(result).toMatchObject({ ok: false, code: 'MANIFEST_UNREACHABLE' });
  });

  it('uses manifestPath when given', async () => {
    const ctx = buildContextFromConfig(config(), 'static');
    const result = await buildRoute('core', [{ id: 'good', baseUrl: good.url, manifestPath: '/elsewhere' }], ctx);
    // The fixture serves only /manifest; GET elsewhere answers 405.
    expect(result).toMatchObject({ ok: false, code: 'MANIFEST_UNREACHABLE' });
    if (!result.ok) expect(result.reason).toContain(`${good.origin}/elsewhere: HTTP 405`);
  });
});

describe('buildRoutes isolates routes', () => {
  it('builds the good routes whatever happens to the others, with each failure coded', async () => {
    const base = buildContextFromConfig(config(), 'portal');
    // The real fetcher, with a tiny timeout only for the hung service.
    const ctx: BuildContext = {
      ...base,
      fetchManifest: (e) => fetchManifest(e, { timeoutMs: e.id === 'hung' ? 50 : 10_000, maxBytes: 1024 }),
    };
    const results = await buildRoutes(
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
      ctx,
    );
    expect(results.map((r) => [r.routeKey, r.ok ? 'ok' : r.code])).toEqual([
      ['first', 'ok'],
      ['status', 'MANIFEST_UNREACHABLE'],
      ['broken', 'MANIFEST_INVALID'],
      ['invalid', 'MANIFEST_INVALID'],
      ['refused', 'MANIFEST_UNREACHABLE'],
      ['hung', 'MANIFEST_UNREACHABLE'],
      ['huge', 'MANIFEST_UNREACHABLE'],
      ['last', 'ok'],
    ]);
    const reason = (key: string) => {
      const r = results.find((x) => x.routeKey === key);
      return r && !r.ok ? r.reason : '';
    };
    expect(reason('status')).toBe(`Tool Service "failing" manifest at ${failing.origin}/manifest: HTTP 500`);
    expect(reason('broken')).toBe(`Tool Service "broken" manifest at ${brokenJson.origin}/manifest: body is not JSON`);
    expect(reason('invalid')).toMatch(/^Tool Service "invalid" manifest is invalid: .*\/tools\/0\/name/);
    expect(reason('refused')).toBe(`Tool Service "refused" manifest at ${refusedOrigin}/manifest: ECONNREFUSED`);
    expect(reason('hung')).toBe(`Tool Service "hung" manifest at ${hung.origin}/manifest: timed out after 50 ms`);
    expect(reason('huge')).toBe(`Tool Service "huge" manifest at ${huge.origin}/manifest: larger than catalog.maxManifestBytes (1024)`);
    const first = results[0];
    expect(first?.ok && decodeSnapshot(first.snapshot).meta).toMatchObject({ routeKey: 'first', source: 'portal', toolCount: 2 });
    const last = results[7];
    expect(last?.ok && last.catalog.tools.map((t) => t.name)).toEqual(['erp_order']);
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
