/**
 * OpenTelemetry tracing (issue 13) against an in-process OTLP/HTTP receiver:
 * a `tools/call` makes three spans on two threads — the acceptor's (SERVER),
 * the shard hop (INTERNAL), the Tool Service call (CLIENT) — the incoming
 * `traceparent` is continued, and the Tool Service receives the CLIENT
 * span's. Spans are exported when the gateway closes (each thread flushes).
 * Tracing off loads no SDK: test/unit/shared/tracing-imports.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const SPAN_KIND = { internal: 1, server: 2, client: 3 };

let svc: FixtureToolService;
let receiver: OtlpReceiver;
beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }]));
  svc.setBehavior('/tools/echo', { kind: 'echo' });
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await svc?.close();
  await receiver?.close();
});

/** Runs `calls` against a traced gateway, closes it (which exports), and returns the spans it sent. */
async function traced(overrides: Record<string, unknown>, calls: (gw: Gateway) => Promise<void>): Promise<ReceivedSpan[]> {
  const before = receiver.spans.length;
  const gw = await startTestGateway({
    catalog: { static: { routes: { core: [{ id: 'fixture', baseUrl: svc.url }] } } },
    tracing: { otlp: { endpoint: receiver.url }, serviceName: 'gateway-under-test' },
    ...overrides,
  });
  try {
    await calls(gw);
  } finally {
    await gw.close();
  }
  return receiver.spans.slice(before);
}

function lastRequestHeader(name: string): string | undefined {
  const header = svc.requests.at(-1)?.headers[name];
  return Array.isArray(header) ? header[0] : header;
}

describe('tracing.otlp.endpoint set', () => {
  it('continues the client traceparent through the acceptor, the shard hop and the Tool Service call', async () => {
    let sent = '';
    const spans = await traced({}, async (gw) => {
      const answer = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: { q: 1 } }, 7), {
        traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`,
        'x-request-id': 'trace-req-1',
      });
      expect(answer.status).toBe(200);
      sent = lastRequestHeader('traceparent') ?? '';
    });
    const trace = spans.filter((s) => s.traceId === TRACE_ID);
    const server = trace.find((s) => s.kind === SPAN_KIND.server);
    const shard = trace.find((s) => s.kind === SPAN_KIND.internal);
    const client = trace.find((s) => s.kind === SPAN_KIND.client);
    expect(server).toMatchObject({ name: 'tools/call echo', parentSpanId: CLIENT_SPAN, serviceName: 'gateway-under-test', statusCode: 0 });
    expect(server?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo',
      'mcp_gateway.route': 'core',
      'mcp_gateway.request_id': 'trace-req-1',
      'mcp_gateway.outcome': 'ok',
      'thread.name': 'main',
    });
    expect(shard).toMatchObject({ name: 'shard tools/call', parentSpanId: server?.spanId });
    expect(shard?.attributes).toMatchObject({ 'thread.name': 'shard-0', 'mcp_gateway.shard': 0, 'mcp_gateway.outcome': 'ok' });
    expect(client).toMatchObject({ name: 'POST', parentSpanId: shard?.spanId });
    expect(client?.attributes).toMatchObject({ 'http.request.method': 'POST', 'url.full': `${svc.url}/tools/echo`, 'mcp_gateway.service': 'fixture', 'mcp_gateway.cause': 'ok' });
    // The Tool Service continues the CLIENT span: same trace, the client span's id, sampled.
    expect(sent).toBe(`00-${TRACE_ID}-${client?.spanId}-01`);
    // The span nests in time: acceptor ⊇ shard ⊇ upstream.
    expect(BigInt(server?.startTimeUnixNano ?? 0)).toBeLessThanOrEqual(BigInt(shard?.startTimeUnixNano ?? 0));
    expect(BigInt(client?.endTimeUnixNano ?? 0)).toBeLessThanOrEqual(BigInt(server?.endTimeUnixNano ?? 0));
    expect(receiver.contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
  });

  it('starts a new trace when the request has no traceparent, and the Tool Service continues it', async () => {
    let sent = '';
    const spans = await traced({}, async (gw) => {
      expect((await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }))).status).toBe(200);
      sent = lastRequestHeader('traceparent') ?? '';
    });
    const server = spans.find((s) => s.kind === SPAN_KIND.server && s.name === 'tools/call echo');
    expect(server?.parentSpanId).toBe('');
    const client = spans.find((s) => s.kind === SPAN_KIND.client && s.traceId === server?.traceId);
    expect(sent).toBe(`00-${server?.traceId}-${client?.spanId}-01`);
  });

  it('follows an unsampled parent: nothing exported for it, the Tool Service still gets the trace id with the flag off', async () => {
    let sent = '';
    const spans = await traced({}, async (gw) => {
      expect((await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }), { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-00` })).status).toBe(200);
      sent = lastRequestHeader('traceparent') ?? '';
    });
    expect(spans.filter((s) => s.traceId === TRACE_ID)).toEqual([]);
    expect(sent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`));
    expect(sent).not.toContain(CLIENT_SPAN);
  });

  it('traces requests answered by the acceptor itself (tools/list) with one SERVER span', async () => {
    const spans = await traced({}, async (gw) => {
      expect((await mcpPost(gw, 'core', rpc('tools/list'), { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` })).status).toBe(200);
    });
    const trace = spans.filter((s) => s.traceId === TRACE_ID);
    expect(trace.map((s) => [s.name, s.kind, s.parentSpanId])).toEqual([['tools/list', SPAN_KIND.server, CLIENT_SPAN]]);
  });

  it('exports from extra acceptor threads too', async () => {
    const spans = await traced({ workers: { acceptors: 2 } }, async (gw) => {
      // Fresh connections spread over both threads (SO_REUSEPORT).
      for (let i = 0; i < 24; i++) expect((await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, i), { connection: 'close' })).status).toBe(200);
    });
    const threads = new Set(spans.filter((s) => s.kind === SPAN_KIND.server).map((s) => s.attributes['thread.name']));
    expect([...threads].sort()).toEqual(['acceptor-1', 'main']);
    expect(spans.filter((s) => s.kind === SPAN_KIND.server)).toHaveLength(24);
  });
});
