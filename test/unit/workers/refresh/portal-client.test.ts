import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../../src/shared/errors.js';
import { PortalClient } from '../../../../src/workers/refresh/portal-client.js';
import { startFixturePortal, type FixturePortal } from '../../../fixtures/portal.js';

const doc1 = { revision: 'r1', routes: { core: [{ id: 'hr-tools', baseUrl: 'http://hr-tools:8080' }] } };
const doc2 = { revision: 'r2', routes: { core: [{ id: 'hr-tools', baseUrl: 'http://hr-tools:8080' }], process: [{ id: 'erp', baseUrl: 'http://erp:9000' }] } };

let portal: FixturePortal;
beforeAll(async () => {
  portal = await startFixturePortal(doc1);
});
afterAll(async () => {
  await portal.close();
});
beforeEach(() => {
  portal.setDocument(doc1);
  portal.setMode({ kind: 'ok' });
});

const client = (over: Partial<{ url: string; timeoutMs: number; maxBytes: number }> = {}): PortalClient => new PortalClient({ url: portal.url, timeoutMs: 2_000, maxBytes: 1024 * 1024, ...over });

async function failure(c: PortalClient): Promise<GatewayError> {
  try {
    await c.poll();
  } catch (err) {
    if (GatewayError.is(err)) return err;
    throw err;
  }
  throw new Error('poll succeeded');
}

describe('PortalClient', () => {
  it('fetches the document with its ETag, then sends If-None-Match and gets 304 (unchanged)', async () => {
    const c = client();
    const before = { ...portal.stats };
    const first = await c.poll();
    expect(first).toEqual({ kind: 'document', document: doc1, etag: expect.stringMatching(/^".+"$/) });
    expect(await c.poll()).toEqual({ kind: 'unchanged' });
    expect(await c.poll()).toEqual({ kind: 'unchanged' });
    expect(portal.stats.requests - before.requests).toBe(3);
    expect(portal.stats.notModified - before.notModified).toBe(2);
  });

  it('fetches a changed document in full, with its new ETag', async () => {
    const c = client();
    const first = await c.poll();
    portal.setDocument(doc2);
    const second = await c.poll();
    expect(second.kind).toBe('document');
    if (second.kind !== 'document' || first.kind !== 'document') return;
    expect(second.document).toEqual(doc2);
    expect(second.etag).not.toBe(first.etag);
    expect(await c.poll()).toEqual({ kind: 'unchanged' });
  });

  it('resetEtag: the next poll fetches the whole document instead of trusting a 304', async () => {
    const c = client();
    await c.poll();
    c.resetEtag();
    const notModified = portal.stats.notModified;
    expect(await c.poll()).toMatchObject({ kind: 'document', document: doc1 });
    expect(portal.stats.notModified).toBe(notModified);
  });

  it('two clients keep their own ETag', async () => {
    const a = client();
    const b = client();
    await a.poll();
    expect((await b.poll()).kind).toBe('document');
    expect((await a.poll()).kind).toBe('unchanged');
  });

  it('a failed poll keeps the last ETag: after an outage an unchanged document is a 304', async () => {
    const c = client();
    await c.poll();
    portal.setMode({ kind: 'status', status: 503 });
    expect((await failure(c)).code).toBe('PORTAL_UNREACHABLE');
    portal.setMode({ kind: 'ok' });
    expect(await c.poll()).toEqual({ kind: 'unchanged' });
  });

  it.each([500, 503, 404, 401, 204])('HTTP %i is PORTAL_UNREACHABLE naming the status', async (status) => {
    portal.setMode({ kind: 'status', status });
    const err = await failure(client());
    expect(err.code).toBe('PORTAL_UNREACHABLE');
    expect(err.message).toBe(`Portal ${portal.url}: HTTP ${status}`);
  });

  it('no answer within timeoutMs is PORTAL_UNREACHABLE "timed out"', async () => {
    portal.setMode({ kind: 'hang' });
    const err = await failure(client({ timeoutMs: 150 }));
    expect(err.code).toBe('PORTAL_UNREACHABLE');
    expect(err.message).toBe(`Portal ${portal.url}: timed out after 150 ms`);
  });

  it('a reset connection is PORTAL_UNREACHABLE', async () => {
    portal.setMode({ kind: 'destroy' });
    const err = await failure(client());
    expect(err.code).toBe('PORTAL_UNREACHABLE');
    expect(err.message).toMatch(new RegExp(`^Portal ${portal.url}: \\S+`));
  });

  it('a refused connection is PORTAL_UNREACHABLE', async () => {
    const closed = await startFixturePortal(doc1);
    const url = closed.url;
    await closed.close();
    const err = await failure(new PortalClient({ url, timeoutMs: 2_000, maxBytes: 1024 }));
    expect(err.code).toBe('PORTAL_UNREACHABLE');
    expect(err.message).toContain('ECONNREFUSED');
  });

  it('a document larger than maxBytes is PORTAL_UNREACHABLE naming catalog.portal.maxBytes', async () => {
    const big = { revision: 'big', routes: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`r${i}`, [{ id: 's', baseUrl: 'http://s:1' }]])) };
    portal.setDocument(big);
    const size = JSON.stringify(big).length;
    const err = await failure(client({ maxBytes: size - 1 }));
    expect(err.code).toBe('PORTAL_UNREACHABLE');
    expect(err.message).toBe(`Portal ${portal.url}: document larger than catalog.portal.maxBytes (${size - 1})`);
    // Exactly maxBytes is fine.
    expect(await client({ maxBytes: size }).poll()).toMatchObject({ kind: 'document', document: big });
  });

  it.each([
    ['HTML', '<html>maintenance</html>'],
    ['truncated JSON', '{"revision":"r1","routes":{'],
    ['an empty body', ''],
  ])('a body that is not JSON (%s) is PORTAL_INVALID', async (_name, body) => {
    portal.setMode({ kind: 'raw', body });
    const err = await failure(client());
    expect(err.code).toBe('PORTAL_INVALID');
    expect(err.message).toBe(`Portal ${portal.url}: the registry document is not JSON`);
  });

  it("returns JSON that is not a registry as a document (validation is parseRegistry's job)", async () => {
    portal.setMode({ kind: 'raw', body: '[1,2]' });
    expect(await client().poll()).toEqual({ kind: 'document', document: [1, 2], etag: null });
  });
});

describe('PortalClient against a hand-written Portal', () => {
  let server: Server;
  let url: string;
  const seen: Array<Record<string, string | string[] | undefined>> = [];
  let answer: { status: number; headers: Record<string, string>; body: string } = { status: 200, headers: {}, body: '{}' };
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ ...req.headers });
      res.writeHead(answer.status, answer.headers).end(answer.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const a = server.address();
    url = `http://127.0.0.1:${typeof a === 'object' && a !== null ? a.port : 0}/v1/registry?env=prod`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it('asks for JSON, and echoes a weak ETag verbatim', async () => {
    seen.length = 0;
    answer = { status: 200, headers: { etag: 'W/"abc"' }, body: JSON.stringify(doc1) };
    const c = new PortalClient({ url, timeoutMs: 2_000, maxBytes: 4096 });
    expect(await c.poll()).toEqual({ kind: 'document', document: doc1, etag: 'W/"abc"' });
    answer = { status: 304, headers: {}, body: '' };
    expect(await c.poll()).toEqual({ kind: 'unchanged' });
    expect(seen[0]?.['accept']).toBe('application/json');
    expect(seen[0]?.['if-none-match']).toBeUndefined();
    expect(seen[1]?.['if-none-match']).toBe('W/"abc"');
  });

  it('without an ETag every poll is a full fetch; a 304 to a request without If-None-Match is a failure', async () => {
    seen.length = 0;
    answer = { status: 200, headers: {}, body: JSON.stringify(doc1) };
    const c = new PortalClient({ url, timeoutMs: 2_000, maxBytes: 4096 });
    expect(await c.poll()).toEqual({ kind: 'document', document: doc1, etag: null });
    answer = { status: 304, headers: {}, body: '' };
    const err = await failure(c);
    expect(err.code).toBe('PORTAL_UNREACHABLE');
    expect(err.message).toContain('HTTP 304');
    expect(seen.every((h) => h['if-none-match'] === undefined)).toBe(true);
  });
});
