/**
 * `workers.acceptors: 2` (SPEC §2: several acceptor threads share the port)
 * and the operating surface (SPEC §8): both acceptor threads answer, health
 * and `/metrics` work from either, Prometheus counters aggregate every
 * thread, and `close()` finishes.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, MCP_HEADERS, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';
import { parsePrometheus, sampleValue, samplesOf } from '../helpers/prometheus.js';

/** POSTs a JSON-RPC body on a fresh connection (`connection: close`), so the kernel picks an acceptor each time. */
function postFresh(gw: Gateway, route: string, body: unknown): Promise<RawAnswer> {
  const text = JSON.stringify(body);
  return rawRequest(gw.port, {
    method: 'POST',
    path: `/mcp/${route}`,
    headers: { ...MCP_HEADERS, 'content-length': String(Buffer.byteLength(text)) },
    body: [text],
  });
}

function getFresh(gw: Gateway, path: string): Promise<RawAnswer> {
  return rawRequest(gw.port, { method: 'GET', path });
}

/** Runs `fn` for 0..n-1, at most `width` at a time. */
async function inBatches<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < n; start += width) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, n - start) }, (_, k) => fn(start + k)))));
  }
  return out;
}

describe('two acceptor threads on one port', () => {
  let svc: FixtureToolService;
  let metered: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    [svc, metered] = await Promise.all([startFixtureToolService(), startFixtureToolService()]);
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    metered.setManifest(manifestFor([{ name: 'echo' }, { name: 'fails' }]));
    metered.setBehavior('/tools/echo', { kind: 'echo' });
    metered.setBehavior('/tools/fails', { kind: 'json', status: 500, body: { error: 'boom' } });
    // Port 0 (the helper's default): the ephemeral port must be shared by both acceptor threads.
    gw = await startTestGateway({
      workers: { shards: 2, acceptors: 2 },
      catalog: {
        static: {
          routes: {
            core: [{ id: 'svc', baseUrl: svc.url }],
            metered: [{ id: 'metered-svc', baseUrl: metered.url }],
          },
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
    await metered?.close();
  });

  it('both acceptor threads answer tools/call correctly over many fresh connections', async () => {
    const before = svc.requests.length;
    const answers = await inBatches(60, 10, (i) => postFresh(gw, 'core', rpc('tools/call', { name: 'echo', arguments: { i } }, i)));
    answers.forEach((answer, i) => {
      expect(answer.status, answer.body).toBe(200);
      const body = answer.json as { id: number; result: { isError?: boolean; structuredContent: { arguments: { i: number } } } };
      expect(body.id).toBe(i);
      expect(body.result.isError).not.toBe(true);
      expect(body.result.structuredContent.arguments.i).toBe(i);
    });
    // Each acceptor thread generates request ids under its own random prefix: two prefixes = two threads served.
    const ids = svc.requests.slice(before).map((r) => String(r.headers['x-request-id']));
    expect(ids).toHaveLength(60);
    const prefixes = new Set(ids.map((id) => id.split('-')[0]));
    expect(prefixes.size).toBe(2);
  });

  it('serves tools/list, /health/live, /health/ready and /metrics from either thread', async () => {
    const answers = await inBatches(20, 10, async (i) => {
      const [list, live, ready, metrics] = await Promise.all([
        postFresh(gw, 'core', rpc('tools/list', undefined, i)),
        getFresh(gw, '/health/live'),
        getFresh(gw, '/health/ready'),
        getFresh(gw, '/metrics'),
      ]);
      return { list, live, ready, metrics };
    });
    for (const { list, live, ready, metrics } of answers) {
      expect(list.status).toBe(200);
      expect((list.json as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['echo']);
      expect(live.status).toBe(200);
      expect(ready.status).toBe(200);
      const routes = (ready.json as { status: string; routes: Record<string, { state: string }> }).routes;
      expect(routes['core']?.state).toBe('ready');
      expect(routes['metered']?.state).toBe('ready');
      expect(metrics.status).toBe(200);
      expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
      expect(metrics.body).toContain('# TYPE mcp_gateway_requests_total counter');
    }
  });

  it('/metrics counts requests by route, method and outcome across both acceptors, tool calls from the shards, and durations', async () => {
    const LISTS = 7;
    await inBatches(LISTS, 7, (i) => postFresh(gw, 'metered', rpc('tools/list', undefined, i)));
    const calls = await Promise.all([
      postFresh(gw, 'metered', rpc('tools/call', { name: 'echo', arguments: {} }, 1)),
      postFresh(gw, 'metered', rpc('tools/call', { name: 'echo', arguments: {} }, 2)),
      postFresh(gw, 'metered', rpc('tools/call', { name: 'echo', arguments: {} }, 3)),
      postFresh(gw, 'metered', rpc('tools/call', { name: 'fails', arguments: {} }, 4)),
      postFresh(gw, 'metered', rpc('tools/call', { name: 'no_such_tool', arguments: {} }, 5)),
    ]);
    for (const c of calls) expect(c.status).toBe(200);

    const scrape = await httpRequest(gw, '/metrics');
    expect(scrape.status).toBe(200);
    const samples = parsePrometheus(scrape.text);
    const req = (method: string, outcome: string): number | undefined => sampleValue(samples, 'mcp_gateway_requests_total', { route: 'metered', method, outcome });
    expect(req('tools/list', 'ok')).toBe(LISTS);
    expect(req('tools/call', 'ok')).toBe(3);
    expect(req('tools/call', 'tool_error')).toBe(1);
    expect(req('tools/call', 'rpc_error')).toBe(1);

    const calls_ = (cause: string): number | undefined => sampleValue(samples, 'mcp_gateway_tool_calls_total', { route: 'metered', service: 'metered-svc', cause });
    expect(calls_('ok')).toBe(3);
    expect(calls_('status')).toBe(1);
    // The unknown tool never reached a Tool Service.
    expect(samplesOf(samples, 'mcp_gateway_tool_calls_total', { route: 'metered' }).reduce((n, s) => n + s.value, 0)).toBe(4);

    const hist = { route: 'metered', method: 'tools/list' };
    expect(sampleValue(samples, 'mcp_gateway_request_duration_seconds_count', hist)).toBe(LISTS);
    expect(sampleValue(samples, 'mcp_gateway_request_duration_seconds_bucket', { ...hist, le: '+Inf' })).toBe(LISTS);
    expect(sampleValue(samples, 'mcp_gateway_request_duration_seconds_sum', hist)).toBeGreaterThanOrEqual(0);
    const buckets = samplesOf(samples, 'mcp_gateway_request_duration_seconds_bucket', hist);
    expect(buckets.length).toBeGreaterThan(2);
    const values = buckets.map((b) => b.value);
    expect([...values].sort((a, b) => a - b)).toEqual(values); // cumulative buckets never decrease
    expect(sampleValue(samples, 'mcp_gateway_request_duration_seconds_count', { route: 'metered', method: 'tools/call' })).toBe(5);
  });

  it('/health/live is 200', async () => {
    const live = await httpRequest(gw, '/health/live');
    expect(live.status).toBe(200);
    expect(live.json).toEqual({ status: 'live' });
  });

  // Last in this block on purpose: it closes the shared gateway (afterAll's close() is then a no-op).
  it('close() finishes, is idempotent, and the port stops accepting connections', async () => {
    const answers = await inBatches(6, 6, (i) => postFresh(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, i)));
    for (const a of answers) expect(a.status).toBe(200);
    await gw.close();
    await gw.close();
    const refused = await new Promise<string>((resolve) => {
      const socket = connect(gw.port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
  });
});
