/**
 * The operator's view (issue 13): `x-request-id` returned on MCP answers
 * (the id the Tool Service received), the metrics an operator expects on a
 * real gateway (per-route/per-Tool-Service call latency, in-flight calls per
 * shard, call-ring backlogs, build info, process metrics under their
 * standard names), and the sampled access log line of each `tools/call`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { waitUntil } from '../helpers/eventually.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { startGatewayProcess } from '../helpers/gateway-process.js';
import { parsePrometheus, sampleValue, samplesOf, type Sample } from '../helpers/prometheus.js';

let svc: FixtureToolService;
let gw: Gateway;
beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'slow' }]));
  svc.setBehavior('/tools/echo', { kind: 'echo' });
  svc.setBehavior('/tools/slow', { kind: 'hold', then: { kind: 'echo' } });
  gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'fixture', baseUrl: svc.url }] } } } });
});
afterAll(async () => {
  svc?.release();
  await gw?.close(0);
  await svc?.close();
});

const routes = (): string => JSON.stringify({ core: [{ id: 'fixture', baseUrl: svc.url }] });

async function scrape(): Promise<Sample[]> {
  const answer = await httpRequest(gw, '/metrics');
  expect(answer.status).toBe(200);
  return parsePrometheus(answer.text);
}

describe('x-request-id on MCP answers', () => {
  it('returns the client id on a tools/call answer — the one the Tool Service received', async () => {
    const answer = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }), { 'x-request-id': 'client-req-42' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-request-id')).toBe('client-req-42');
    expect(svc.requests.at(-1)?.headers['x-request-id']).toBe('client-req-42');
  });

  it('returns the generated id when the client sent none (or an invalid one), the same the Tool Service received', async () => {
    const cases: Array<Record<string, string>> = [{}, { 'x-request-id': 'bad id with spaces' }];
    for (const headers of cases) {
      const answer = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }), headers);
      const id = answer.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-z]+$/);
      expect(svc.requests.at(-1)?.headers['x-request-id']).toBe(id);
    }
  });

  it('is on answers the acceptor writes itself: tools/list, a JSON-RPC error, a refusal at the gate', async () => {
    const list = await mcpPost(gw, 'core', rpc('tools/list'), { 'x-request-id': 'list-1' });
    expect(list.headers.get('x-request-id')).toBe('list-1');
    const unknownMethod = await mcpPost(gw, 'core', rpc('nope/nope'), { 'x-request-id': 'err-1' });
    expect(unknownMethod.headers.get('x-request-id')).toBe('err-1');
    const unknownRoute = await mcpPost(gw, 'missing', rpc('tools/list'), { 'x-request-id': 'gate-1' });
    expect(unknownRoute.status).toBe(404);
    expect(unknownRoute.headers.get('x-request-id')).toBe('gate-1');
  });

  it('is on a streamed (SSE) tools/call answer', async () => {
    svc.setBehavior('/tools/echo', {
      kind: 'ndjson',
      lines: [
        { type: 'progress', progress: 1 },
        { type: 'result', result: { content: [] } },
      ],
    });
    try {
      const answer = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {}, _meta: { progressToken: 't' } }), {
        accept: 'application/json, text/event-stream',
        'x-request-id': 'sse-1',
      });
      expect(answer.headers.get('content-type')).toBe('text/event-stream');
      expect(answer.headers.get('x-request-id')).toBe('sse-1');
    } finally {
      svc.setBehavior('/tools/echo', { kind: 'echo' });
    }
  });
});

describe('metrics', () => {
  it('observes every Tool Service call in a per-route, per-Tool-Service latency histogram', async () => {
    const before = sampleValue(await scrape(), 'mcp_gateway_tool_call_duration_seconds_count', { route: 'core', service: 'fixture' }) ?? 0;
    for (let i = 0; i < 3; i++) await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, i));
    const samples = await scrape();
    expect(sampleValue(samples, 'mcp_gateway_tool_call_duration_seconds_count', { route: 'core', service: 'fixture' })).toBe(before + 3);
    expect(sampleValue(samples, 'mcp_gateway_tool_call_duration_seconds_bucket', { route: 'core', service: 'fixture', le: '+Inf' })).toBe(before + 3);
  });

  it('counts calls in flight per shard while the Tool Service holds them, and back to 0 after', async () => {
    svc.hold();
    const heldBefore = svc.held;
    const pending = Promise.all([1, 2].map((i) => mcpPost(gw, 'core', rpc('tools/call', { name: 'slow', arguments: {} }, `held-${i}`))));
    try {
      await waitUntil(() => svc.held - heldBefore === 2, 'both calls are held');
      expect(sampleValue(await scrape(), 'mcp_gateway_shard_calls_in_flight', { shard: '0' })).toBe(2);
    } finally {
      svc.release();
    }
    await pending;
    expect(sampleValue(await scrape(), 'mcp_gateway_shard_calls_in_flight', { shard: '0' })).toBe(0);
  });

  it('exports the call-ring backlog of both directions for every acceptor × shard pair', async () => {
    const samples = await scrape();
    for (const direction of ['to_shard', 'to_acceptor']) {
      expect(sampleValue(samples, 'mcp_gateway_channel_backlog_bytes', { direction, acceptor: '0', shard: '0' })).toBe(0);
      expect(sampleValue(samples, 'mcp_gateway_channel_backlog_frames', { direction, acceptor: '0', shard: '0' })).toBe(0);
    }
  });

  it('has build_info and the process metrics under their standard names (no mcp_gateway_ prefix)', async () => {
    const samples = await scrape();
    const [build] = samplesOf(samples, 'mcp_gateway_build_info');
    expect(build?.value).toBe(1);
    expect(build?.labels).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node: process.version, uws: expect.stringMatching(/@\d+\.\d+/) });
    expect(samplesOf(samples, 'process_cpu_seconds_total')).toHaveLength(1);
    expect(samplesOf(samples, 'process_resident_memory_bytes')).toHaveLength(1);
    expect(samplesOf(samples, 'nodejs_eventloop_lag_seconds')).toHaveLength(1);
    expect(samples.filter((s) => s.name.startsWith('mcp_gateway_process_') || s.name.startsWith('mcp_gateway_nodejs_'))).toEqual([]);
  });
});

describe('access log (CLI)', () => {
  it('writes one line per tools/call with route, tool, service, outcome, duration and request id (log.accessSampleRatio 1)', { timeout: 60_000 }, async () => {
    const p = await startGatewayProcess({ MCP_GATEWAY_CATALOG_STATIC_ROUTES: routes(), MCP_GATEWAY_LOG_ACCESS_SAMPLE_RATIO: '1' });
    try {
      const target = { port: p.port } as Gateway;
      for (let i = 0; i < 5; i++) expect((await mcpPost(target, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, i), { 'x-request-id': `acc-${i}` })).status).toBe(200);
      expect((await mcpPost(target, 'core', rpc('tools/call', { name: 'missing', arguments: {} }), { 'x-request-id': 'acc-unknown' })).status).toBe(200);
      const access = async (): Promise<Array<Record<string, unknown>>> => p.logLines().filter((l) => l['msg'] === 'tool call');
      await waitUntil(
        async () => (await access()).length === 6,
        () => `6 access lines; stdout: ${p.stdout()}`,
      );
      const lines = await access();
      expect(lines.slice(0, 5).map((l) => l['requestId'])).toEqual(['acc-0', 'acc-1', 'acc-2', 'acc-3', 'acc-4']);
      expect(lines[0]).toMatchObject({ level: 'info', route: 'core', tool: 'echo', service: 'fixture', outcome: 'ok', shard: 0, thread: 'shard-0' });
      expect(lines[0]?.['durationMs']).toEqual(expect.any(Number));
      expect(lines[5]).toMatchObject({ requestId: 'acc-unknown', tool: 'missing', service: null, outcome: 'rpc_error' });
    } finally {
      p.kill();
    }
  });

  it('writes none with log.accessSampleRatio 0', { timeout: 60_000 }, async () => {
    const p = await startGatewayProcess({ MCP_GATEWAY_CATALOG_STATIC_ROUTES: routes(), MCP_GATEWAY_LOG_ACCESS_SAMPLE_RATIO: '0', MCP_GATEWAY_SERVER_DRAIN_DELAY_MS: '0' });
    try {
      const target = { port: p.port } as Gateway;
      for (let i = 0; i < 5; i++) expect((await mcpPost(target, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, i))).status).toBe(200);
      p.child.kill('SIGTERM');
      await p.exited;
      expect(p.logLines().some((l) => l['msg'] === 'gateway closed')).toBe(true);
      expect(p.logLines().filter((l) => l['msg'] === 'tool call')).toEqual([]);
    } finally {
      p.kill();
    }
  });
});
