/**
 * Back-pressure toward clients that do not read (issue 11 #2; backpressure.ts,
 * `server.maxBufferedBytesPerConnection`):
 *
 * - the reproduction: 10 connections each pipelining 2,000
 *   `tools/list` for a 50-tool route and never reading must not grow the
 *   gateway by hundreds of MB (it grew 666 MB): answers go out with `tryEnd`,
 *   at most one is held per connection, uWS closes a connection that
 *   pipelines while an answer is pending;
 * - an answer larger than the socket buffers still arrives whole at a client
 *   that reads late (the held rest is written as it reads);
 * - an SSE stream whose client stops reading ends with `CLIENT_TOO_SLOW`
 *   once more than the cap waits unsent, and its Tool Service call is
 *   cancelled, instead of uWS buffering up to `tools.maxResponseBytes`.
 *
 * The gateway runs in this process (acceptor 0 on the main thread), so its
 * memory is this process's RSS.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { httpRequest, rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { sleep, waitUntil } from '../../helpers/eventually.js';
import { listToolNames } from '../../helpers/mcp.js';
import { parsePrometheus, sampleValue } from '../../helpers/prometheus.js';
import { rawExchange, splitResponses } from '../../helpers/raw-http.js';

const TOOLS = 50;
const CONNECTIONS = 10;
const PIPELINED = 2_000;
const CAP = 64 * 1024;
/** RSS the flood may add (the issue saw +666 MB; the kernel's socket buffers are not in RSS). */
const RSS_BUDGET_MB = 150;

function post(port: number, body: unknown, headers = '', accept = 'application/json'): string {
  const text = JSON.stringify(body);
  return `POST /mcp/big HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: ${accept}\r\n` + `${headers}content-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`;
}

/** A connection that writes `data` and never reads. */
function silentClient(port: number, data: string): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    socket.on('error', () => {
      // Reset by the gateway when it closes the connection: expected.
    });
    socket.on('connect', () => {
      socket.write(data);
      resolve(socket);
    });
  });
}

describe('back-pressure toward clients that do not read', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    // ~36 KB of tools/list: 50 tools with a 600-character description each.
    svc.setManifest(manifestFor(Array.from({ length: TOOLS }, (_, i) => ({ name: `tool-${i}`, description: `Tool ${i}: ${'d'.repeat(600)}` }))));
    for (let i = 0; i < TOOLS; i++) svc.setBehavior(`/tools/tool-${i}`, { kind: 'echo' });
    svc.setBehavior('/tools/tool-0', { kind: 'json', body: { content: [{ type: 'text', text: 'x'.repeat(12 * 1024 * 1024) }] } });
    svc.setBehavior('/tools/tool-1', {
      kind: 'ndjson',
      delayMs: 5,
      lines: [
        ...Array.from({ length: 400 }, (_, i) => ({ type: 'log', level: 'warning', data: `${i}:${'L'.repeat(50_000)}` })),
        { type: 'result', result: { content: [{ type: 'text', text: 'done' }] } },
      ],
    });
    gw = await startTestGateway({
      server: { maxBufferedBytesPerConnection: CAP },
      tools: { maxResponseBytes: 64 * 1024 * 1024 },
      catalog: { static: { routes: { big: [{ id: 'svc', baseUrl: svc.url }] } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it(`${CONNECTIONS} connections × ${PIPELINED} pipelined tools/list, never read: RSS grows less than ${RSS_BUDGET_MB} MB, the gateway keeps serving`, async () => {
    const listBytes = (await rawExchange(gw.port, [post(gw.port, rpc('tools/list', undefined, 0), 'connection: close\r\n')], { expectResponses: 1 })).responses[0]?.body.length;
    expect(listBytes).toBeGreaterThan(30_000);
    const requests = Array.from({ length: PIPELINED }, (_, i) => post(gw.port, rpc('tools/list', undefined, i))).join('');
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, () => silentClient(gw.port, requests)));
    await sleep(3_000);
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const grownMb = (peak - before) / 1e6;
    for (const s of sockets) s.destroy();
    expect(grownMb, `RSS +${grownMb.toFixed(0)} MB`).toBeLessThan(RSS_BUDGET_MB);
    expect(await listToolNames(gw, 'big')).toHaveLength(TOOLS);
  });

  it('a reading client still gets every pipelined answer, in order', async () => {
    const n = 50;
    const writes = Array.from({ length: n }, (_, i) => post(gw.port, rpc('tools/list', undefined, i), i === n - 1 ? 'connection: close\r\n' : '')).join('');
    const x = await rawExchange(gw.port, [writes], { expectResponses: n, waitMs: 10_000 });
    expect(x.responses.map((r) => (r.json as { id: number }).id)).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('an answer larger than the socket buffers arrives whole at a client that starts reading late', async () => {
    const socket = connect(gw.port, '127.0.0.1');
    socket.pause();
    let received = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      received = Buffer.concat([received, c]);
    });
    await new Promise<void>((resolve) => socket.on('connect', resolve));
    socket.write(post(gw.port, rpc('tools/call', { name: 'tool-0', arguments: {} }, 'big'), 'connection: close\r\n'));
    await sleep(1_500);
    socket.resume();
    await waitUntil(() => splitResponses(received).responses.length === 1, 'the whole answer', 15_000);
    socket.destroy();
    const answer = splitResponses(received).responses[0];
    expect(answer?.status).toBe(200);
    expect((answer?.json as { result: { content: Array<{ text: string }> } } | undefined)?.result.content[0]?.text.length).toBe(12 * 1024 * 1024);
  });

  it(`an SSE stream whose client stops reading ends with CLIENT_TOO_SLOW past ${CAP} bytes unsent, and its Tool Service call is cancelled`, async () => {
    const before = svc.requests.length;
    const socket = await silentClient(gw.port, post(gw.port, rpc('tools/call', { name: 'tool-1', arguments: {} }, 'slow-sse'), '', 'application/json, text/event-stream'));
    await svc.whenRequests(before + 1);
    // The Tool Service streams 20 MB over 2 s; the client reads nothing.
    await waitUntil(() => svc.requests[before]?.closed === true, 'the Tool Service request ended', 10_000);
    expect(svc.requests[before]?.complete, 'cancelled before the Tool Service finished').toBe(false);
    const metrics = parsePrometheus((await httpRequest(gw, '/metrics')).text);
    expect(sampleValue(metrics, 'mcp_gateway_requests_total', { route: 'big', method: 'tools/call', outcome: 'client_too_slow' })).toBe(1);
    // What the client finds once it reads: the events written so far, then the reason.
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
    });
    socket.resume();
    await waitUntil(() => text.includes('CLIENT_TOO_SLOW') && text.endsWith('0\r\n\r\n'), 'the end of the stream', 10_000);
    socket.destroy();
    expect(text).toContain('"id":"slow-sse","error":{"code":-32603');
  });
});
