/**
 * The test suite's own Tool Services (test/fixtures/): the configurable
 * fixture every test scripts, and the conformance Tool Service built on it.
 * Real HTTP on 127.0.0.1. The fixture runs on this thread, so its delays run
 * on vitest fake timers here: a delay is proven by advancing a clock, not by
 * measuring one.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONFORMANCE_SERVICE, conformanceManifest, startConformanceToolService } from '../fixtures/conformance-tool-service.js';
import { manifestFor, startFixtureToolService, type FixtureToolService, type RecordedRequest } from '../fixtures/tool-service.js';
import { waitUntil } from '../helpers/eventually.js';
import { openExchange, type OpenExchange } from '../helpers/mcp-client.js';

async function callTool(baseUrl: string, name: string, args: unknown, version = '1.0.0'): Promise<Response> {
  return fetch(`${baseUrl}/tools/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, application/x-ndjson' },
    body: JSON.stringify({ name, version, arguments: args }),
  });
}

/** A tool call over node:http (which uses no global timer, so it works under fake timers). */
function post(svc: FixtureToolService, name: string): OpenExchange {
  return openExchange(svc, { method: 'POST', path: `/tools/${name}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, version: '1.0.0', arguments: {} }) });
}

/** One turn of the event loop for I/O (setImmediate is not faked). */
const ioTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('fixture tool service', () => {
  let fixture: FixtureToolService;

  beforeAll(async () => {
    fixture = await startFixtureToolService();
  });
  afterAll(async () => {
    await fixture.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Sends `name` and returns the exchange and the fixture's record of it. */
  async function started(name: string): Promise<{ call: OpenExchange; record: RecordedRequest }> {
    const before = fixture.requests.length;
    const call = post(fixture, name);
    await fixture.whenRequests(before + 1);
    return { call, record: fixture.requests[before] as RecordedRequest };
  }

  it('serves the scripted manifest, status and raw body', async () => {
    const manifest = manifestFor([{ name: 'alpha' }, { name: 'beta', version: '2.0.0', timeoutMs: 100 }]);
    fixture.setManifest(manifest);
    expect(manifest.tools[0]).toEqual({
      name: 'alpha',
      version: '1.0.0',
      active: true,
      description: 'Fixture tool alpha.',
      inputSchema: { type: 'object' },
      execution: { path: '/tools/alpha' },
    });
    expect(manifest.tools[1]).toMatchObject({ name: 'beta', version: '2.0.0', timeoutMs: 100 });

    const before = fixture.manifestRequests;
    expect(await (await fetch(`${fixture.url}/manifest`)).json()).toEqual(manifest);

    fixture.setManifestStatus(503);
    expect((await fetch(`${fixture.url}/manifest`)).status).toBe(503);

    fixture.setManifestRaw('{"service":');
    const raw = await fetch(`${fixture.url}/manifest`);
    expect(raw.status).toBe(503);
    expect(await raw.text()).toBe('{"service":');

    fixture.setManifest(manifest);
    expect((await fetch(`${fixture.url}/manifest`)).status).toBe(200);
    expect(fixture.manifestRequests).toBe(before + 4);
    expect(fixture.origin).toBe(`http://127.0.0.1:${fixture.port}`);
  });

  it('answers the manifest request with a scripted behaviour until the next setManifest', async () => {
    fixture.setManifestAnswer({ kind: 'destroy' });
    await expect(fetch(`${fixture.url}/manifest`)).rejects.toThrow();
    fixture.setManifestAnswer({ kind: 'json', status: 502, body: { down: true } });
    const bad = await fetch(`${fixture.url}/manifest`);
    expect([bad.status, await bad.json()]).toEqual([502, { down: true }]);
    fixture.setManifest(manifestFor([{ name: 'back' }]));
    expect(await (await fetch(`${fixture.url}/manifest`)).json()).toMatchObject({ tools: [{ name: 'back' }] });
  });

  it('with etag: serves an ETag and answers a matching If-None-Match with 304', async () => {
    const svc = await startFixtureToolService({ etag: true });
    try {
      svc.setManifest(manifestFor([{ name: 'a' }]));
      const first = await fetch(`${svc.url}/manifest`);
      const etag = first.headers.get('etag') ?? '';
      expect(etag).toMatch(/^"[0-9a-f]{16}"$/);
      expect((await fetch(`${svc.url}/manifest`, { headers: { 'if-none-match': etag } })).status).toBe(304);
      svc.setManifestStatus(500); // a failing manifest is never "not modified"
      expect((await fetch(`${svc.url}/manifest`, { headers: { 'if-none-match': etag } })).status).toBe(500);
      expect([svc.manifestRequests, svc.manifestNotModified]).toEqual([3, 1]);
    } finally {
      await svc.close();
    }
  });

  it('answers json and raw behaviours', async () => {
    fixture.setBehavior('/tools/j', { kind: 'json', status: 500, body: { oops: true } });
    const j = await callTool(fixture.url, 'j', {});
    expect(j.status).toBe(500);
    expect(await j.json()).toEqual({ oops: true });

    fixture.setBehavior('/tools/r', { kind: 'raw', contentType: 'text/plain', body: 'not json' });
    const r = await callTool(fixture.url, 'r', {});
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain');
    expect(await r.text()).toBe('not json');

    expect((await callTool(fixture.url, 'unscripted', {})).status).toBe(404);
  });

  it('streams ndjson lines with delays (advanced on fake timers)', async () => {
    fixture.setBehavior('/tools/n', {
      kind: 'ndjson',
      delayMs: 20,
      firstDelayMs: 30,
      headers: { 'x-stream': 'yes' },
      lines: [{ type: 'progress', progress: 1, total: 2 }, '{broken', { type: 'result', result: { content: [] } }],
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { call, record } = await started('n');
    const head = await call.head; // flushed before the first line
    expect(head.headers['content-type']).toBe('application/x-ndjson');
    expect(head.headers['x-stream']).toBe('yes');
    await vi.advanceTimersByTimeAsync(29);
    await ioTurn();
    expect(call.text()).toBe(''); // nothing before firstDelayMs
    await vi.advanceTimersByTimeAsync(1 + 20 + 19);
    await ioTurn();
    expect(record.closed).toBe(false); // the last line is still 1 ms away
    await vi.advanceTimersByTimeAsync(1);
    expect(await call.done).toEqual({ complete: true });
    expect(call.text().split('\n')).toEqual(['{"type":"progress","progress":1,"total":2}', '{broken', '{"type":"result","result":{"content":[]}}', '']);
  });

  it('delays, then answers with the wrapped behaviour (advanced on fake timers)', async () => {
    fixture.setBehavior('/tools/d', { kind: 'delay', ms: 100, then: { kind: 'json', body: { late: true } } });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { call, record } = await started('d');
    await vi.advanceTimersByTimeAsync(99);
    await ioTurn();
    expect(record.closed).toBe(false); // not answered before its delay
    await vi.advanceTimersByTimeAsync(1);
    expect(await call.done).toEqual({ complete: true });
    expect(JSON.parse(call.text())).toEqual({ late: true });
    expect(record).toMatchObject({ closed: true, complete: true });
  });

  it('holds calls until release(), lets later calls through, and holds again after hold()', async () => {
    fixture.setBehavior('/tools/h', { kind: 'hold', then: { kind: 'echo' } });
    const a = await started('h');
    const b = await started('h');
    expect(fixture.held).toBe(2);
    expect([a.record.closed, b.record.closed]).toEqual([false, false]);
    fixture.release();
    expect(fixture.held).toBe(0);
    for (const { call } of [a, b]) {
      expect(await call.done).toEqual({ complete: true });
      expect(JSON.parse(call.text())).toMatchObject({ structuredContent: { name: 'h' } });
    }
    const c = await started('h'); // released: answered at once
    expect(await c.call.done).toEqual({ complete: true });
    fixture.hold();
    const d = await started('h');
    expect(fixture.held).toBe(1);
    fixture.release();
    expect(await d.call.done).toEqual({ complete: true });
    fixture.hold();
  });

  it('streams endless progress until the client leaves; the record says closed, not complete', async () => {
    fixture.setBehavior('/tools/e', { kind: 'endless', intervalMs: 5 });
    const { call, record } = await started('e');
    await waitUntil(() => call.text().split('\n').length > 3, 'three progress lines');
    expect(
      call
        .text()
        .split('\n')
        .slice(0, 3)
        .map((l) => JSON.parse(l) as unknown),
    ).toEqual([1, 2, 3].map((n) => ({ type: 'progress', progress: n, message: `tick ${n}` })));
    expect(fixture.activeCalls).toBeGreaterThanOrEqual(1);
    call.disconnect();
    await waitUntil(() => record.closed, 'the fixture saw the request closed');
    expect(record.complete).toBe(false);
  });

  it('hang reads the request and never answers', async () => {
    fixture.setBehavior('/tools/hang', { kind: 'hang' });
    const { call, record } = await started('hang');
    expect(record.body).toEqual({ name: 'hang', version: '1.0.0', arguments: {} });
    await ioTurn();
    expect(record.closed).toBe(false);
    call.disconnect();
    expect(await call.done).toMatchObject({ complete: false });
  });

  it('destroys the socket without answering', async () => {
    fixture.setBehavior('/tools/x', { kind: 'destroy' });
    await expect(callTool(fixture.url, 'x', {})).rejects.toThrow();
  });

  it('echoes the body and records headers', async () => {
    fixture.setBehavior('/tools/e', { kind: 'echo' });
    const sent = { name: 'e', version: '1.0.0', arguments: { q: 1 } };
    const res = await fetch(`${fixture.url}/tools/e`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-42', 'x-mcp-route': 'core' },
      body: JSON.stringify(sent),
    });
    const body = (await res.json()) as {
      content: Array<{ type: string; text: string }>;
      structuredContent: unknown;
      _meta: { headers: Record<string, unknown> };
    };
    expect(body.content).toEqual([{ type: 'text', text: JSON.stringify(sent) }]);
    expect(body.structuredContent).toEqual(sent);
    expect(body._meta.headers['x-request-id']).toBe('req-42');

    const recorded = fixture.requests.at(-1);
    expect(recorded?.path).toBe('/tools/e');
    expect(recorded?.body).toEqual(sent);
    expect(recorded?.headers['x-request-id']).toBe('req-42');
    expect(recorded?.headers['x-mcp-route']).toBe('core');
    await waitUntil(() => recorded?.closed === true, 'the echo exchange closed');
    expect(recorded?.complete).toBe(true);
  });

  it('close() does not wait for delayed or held calls, and rejects pending whenRequests', async () => {
    const other = await startFixtureToolService();
    other.setBehavior('/tools/slow', { kind: 'delay', ms: 60_000, then: { kind: 'json', body: {} } });
    other.setBehavior('/tools/held', { kind: 'hold', then: { kind: 'json', body: {} } });
    /** The settled value or the error, caught at once (a rejection must not go unhandled while close() runs). */
    const settled = (p: Promise<unknown>): Promise<unknown> =>
      p.then(
        (v) => v,
        (err: unknown) => err,
      );
    const slow = settled(callTool(other.url, 'slow', {}));
    const held = settled(callTool(other.url, 'held', {}));
    await other.whenRequests(2);
    const never = settled(other.whenRequests(3));
    // Were close() to wait for the 60 s delay or the release, this test would time out.
    await other.close();
    expect(await slow).toBeInstanceOf(Error);
    expect(await held).toBeInstanceOf(Error);
    expect(String(await never)).toBe('Error: fixture tool service closed with 2 of 3 requests received');
    expect(other.held).toBe(0);
  });
});

describe('conformance tool service (the fixture with a fixed script)', () => {
  it('serves its manifest and the scripted JSON and NDJSON answers, and counts calls per tool', async () => {
    const svc = await startConformanceToolService({ frameDelayMs: 1 });
    try {
      expect(await (await fetch(`${svc.url}/manifest`)).json()).toEqual(conformanceManifest());
      const text = await callTool(svc.url, 'test_simple_text', {});
      expect(await text.json()).toEqual({ content: [{ type: 'text', text: 'This is a simple text response for testing.' }] });
      const logged = await callTool(svc.url, 'test_tool_with_logging', {});
      expect(logged.headers.get('content-type')).toBe('application/x-ndjson');
      const frames = (await logged.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; logger?: string });
      expect(frames.map((f) => f.type)).toEqual(['log', 'log', 'log', 'result']);
      expect(frames[0]?.logger).toBe(CONFORMANCE_SERVICE);
      await callTool(svc.url, 'test_simple_text', {});
      expect([...svc.calls]).toEqual([
        ['test_simple_text', 2],
        ['test_tool_with_logging', 1],
      ]);
      expect(svc.url).toBe(`http://127.0.0.1:${svc.port}`);
    } finally {
      await svc.close();
    }
  });
});
