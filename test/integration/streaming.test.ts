/**
 * Streaming (contract v0.3, docs/contracts/streaming-v0.3.md) through a real
 * gateway over HTTP: SSE answer shape and order, the progress and log-level
 * rules, the plain JSON answers that must not change, cancellation by
 * `notifications/cancelled`, client disconnects (no leaked upstream sockets,
 * queue slots or heartbeat timers), heartbeats, the per-tool timeout bounding
 * a stream, and the MCP SDK client receiving progress and log notifications.
 *
 * The fixture Tool Service (test/fixtures/tool-service.ts) records, per
 * call, whether the gateway closed the request before the answer was
 * complete, and counts its open sockets, so an abort of the upstream request
 * is observed from the outside.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService, type RecordedRequest, type ToolDef } from '../fixtures/tool-service.js';
import { httpRequest, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { waitUntil } from '../helpers/eventually.js';
import { openCall, SSE_ACCEPT, sseCall, toolsCallBody as toolsCall } from '../helpers/mcp-client.js';
import { sseMessages as messages, type SseItem } from '../helpers/sse.js';

const SERVICE_ID = 'stream-tools';
const LEVEL_KEY = 'io.modelcontextprotocol/logLevel';

async function postJson(gw: Gateway, route: string, body: unknown, headers: Record<string, string> = {}) {
  return httpRequest(gw, `/mcp/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', accept: SSE_ACCEPT, ...headers }, body: JSON.stringify(body) });
}

async function metricsOf(gw: Gateway) {
  const res = await httpRequest(gw, '/metrics');
  return parsePrometheus(res.text);
}

async function toolCallsWithCause(gw: Gateway, route: string, cause: string): Promise<number> {
  return sampleValue(await metricsOf(gw), 'mcp_gateway_tool_calls_total', { route, service: SERVICE_ID, cause }) ?? 0;
}

async function requestsWithOutcome(gw: Gateway, route: string, outcome: string): Promise<number> {
  return sampleValue(await metricsOf(gw), 'mcp_gateway_requests_total', { route, method: 'tools/call', outcome }) ?? 0;
}

// ---------------------------------------------------------------------------

const RESULT = { content: [{ type: 'text', text: 'streamed result' }], structuredContent: { rows: 3 } };
const TOOLS: Array<Partial<ToolDef> & { name: string }> = [{ name: 'stream' }, { name: 'endless' }, { name: 'plain' }, { name: 'timeboxed', timeoutMs: 400 }];

describe('streaming tools/call (contract v0.3)', () => {
  let svc: FixtureToolService;
  /** Defaults: heartbeat 15 s (never seen here), default log level info. */
  let gw: Gateway;
  /** heartbeat 50 ms, default log level warning, 4 call slots per shard (a leaked slot shows up as a 503). */
  let gwSmall: Gateway;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor(TOOLS, SERVICE_ID));
    const routes = { stream: [{ id: SERVICE_ID, baseUrl: svc.url }], other: [{ id: SERVICE_ID, baseUrl: svc.url }] };
    gw = await startTestGateway({ catalog: { static: { routes } } });
    gwSmall = await startTestGateway({
      catalog: { static: { routes: { small: [{ id: SERVICE_ID, baseUrl: svc.url }] } } },
      streaming: { heartbeatMs: 50, defaultLogLevel: 'warning' },
      workers: { maxPendingCallsPerShard: 4 },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await gwSmall?.close();
    await svc?.close();
  });
  beforeEach(() => {
    svc.setBehavior('/tools/plain', { kind: 'json', body: RESULT });
    svc.setBehavior('/tools/endless', { kind: 'endless', intervalMs: 20 });
    svc.setBehavior('/tools/timeboxed', { kind: 'endless', intervalMs: 50 });
  });

  describe('SSE answer shape and order', () => {
    it('forwards progress (with the request token, strictly increasing) and log frames at or above the default level, then ends with the response', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        delayMs: 10,
        headers: { 'x-tool-secret': 's3cr3t-header', 'set-cookie': 'session=s3cr3t-cookie' },
        lines: [
          { type: 'progress', progress: 1, total: 4, message: 'one' },
          { type: 'log', level: 'info', data: { step: 'started' }, logger: 'etl' },
          { type: 'progress', progress: 2, total: 4 },
          { type: 'log', level: 'debug', data: 'below the default level' },
          { type: 'progress', progress: 2, total: 4, message: 'repeated: dropped' },
          { type: 'progress', progress: 1.5, message: 'backwards: dropped' },
          { type: 'log', level: 'warning', data: 'careful' },
          { type: 'progress', progress: 4, total: 4, message: 'done' },
          { type: 'result', result: RESULT },
        ],
      });
      const got = await sseCall(gw, 'stream', toolsCall('call-1', 'stream', { progressToken: 'tok-1' }));

      expect(got.status).toBe(200);
      expect(got.headers['content-type']).toBe('text/event-stream');
      expect(got.headers['cache-control']).toBe('no-cache');
      expect(got.headers['mcp-session-id']).toBeUndefined();
      expect(got.end.complete).toBe(true);
      // Every block is `event: message` + one `data:` line; no ids (no resumption), nothing else.
      const events = got.items.filter((i) => i.kind === 'event');
      expect(events.length).toBe(got.items.length);
      for (const e of events) expect(e).toEqual({ kind: 'event', event: 'message', data: expect.any(String), fields: ['event', 'data'] });
      expect(got.text).toMatch(/^event: message\ndata: /);
      expect(got.text.endsWith('\n\n')).toBe(true);

      expect(messages(got.items)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 1, total: 4, message: 'one' } },
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { step: 'started' }, logger: 'etl' } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 2, total: 4 } },
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'warning', data: 'careful' } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 4, total: 4, message: 'done' } },
        { jsonrpc: '2.0', id: 'call-1', result: RESULT },
      ]);
      // The Tool Service's headers never reach the client.
      expect(got.text).not.toContain('s3cr3t');
      expect(JSON.stringify(got.headers)).not.toContain('s3cr3t');
    });

    it('keeps a numeric progress token numeric', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        lines: [
          { type: 'progress', progress: 0.5 },
          { type: 'result', result: RESULT },
        ],
      });
      const got = await sseCall(gw, 'stream', toolsCall(7, 'stream', { progressToken: 42 }));
      expect(messages(got.items)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 42, progress: 0.5 } },
        { jsonrpc: '2.0', id: 7, result: RESULT },
      ]);
    });

    it('sends no progress notifications without a progressToken; log frames still stream', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        lines: [
          { type: 'progress', progress: 1 },
          { type: 'log', level: 'notice', data: 'hello' },
          { type: 'progress', progress: 2 },
          { type: 'result', result: RESULT },
        ],
      });
      const got = await sseCall(gw, 'stream', toolsCall(2, 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      expect(messages(got.items)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'notice', data: 'hello' } },
        { jsonrpc: '2.0', id: 2, result: RESULT },
      ]);
    });

    it('answers an NDJSON Tool Service as SSE even when no frame is forwarded (the response is the only event)', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        lines: [
          { type: 'progress', progress: 1 },
          { type: 'log', level: 'debug', data: 'dropped' },
          { type: 'result', result: RESULT },
        ],
      });
      const got = await sseCall(gw, 'stream', toolsCall(3, 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      expect(messages(got.items)).toEqual([{ jsonrpc: '2.0', id: 3, result: RESULT }]);
    });

    it('ends the stream with the isError response when the Tool Service stream fails mid-way', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        lines: [
          { type: 'progress', progress: 1 },
          { type: 'error', message: 'disk full' },
          { type: 'log', level: 'error', data: 'after the end: never read' },
        ],
      });
      const got = await sseCall(gw, 'stream', toolsCall(4, 'stream', { progressToken: 'p' }));
      expect(messages(got.items)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } },
        { jsonrpc: '2.0', id: 4, result: { content: [{ type: 'text', text: 'Tool Service reported an error: disk full' }], isError: true } },
      ]);
    });
  });

  describe('log level rule (stateless: the request _meta, else streaming.defaultLogLevel)', () => {
    const LOG_LINES = [
      { type: 'log', level: 'debug', data: 'd' },
      { type: 'log', level: 'info', data: 'i' },
      { type: 'log', level: 'notice', data: 'n' },
      { type: 'log', level: 'warn', data: 'w (alias of warning)' },
      { type: 'log', level: 'error', data: 'e' },
      { type: 'log', level: 'emergency', data: 'em' },
      { type: 'result', result: RESULT },
    ];
    const levelsOf = (items: SseItem[]): string[] =>
      messages(items)
        .filter((m) => m['method'] === 'notifications/message')
        .map((m) => (m['params'] as { level: string }).level);

    it.each([
      ['debug', ['debug', 'info', 'notice', 'warning', 'error', 'emergency']],
      ['notice', ['notice', 'warning', 'error', 'emergency']],
      ['error', ['error', 'emergency']],
      ['emergency', ['emergency']],
    ])('_meta level %s', async (level, expected) => {
      svc.setBehavior('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      const got = await sseCall(gw, 'stream', toolsCall(`lvl-${level}`, 'stream', { [LEVEL_KEY]: level }));
      expect(levelsOf(got.items)).toEqual(expected);
      expect(messages(got.items).at(-1)).toEqual({ jsonrpc: '2.0', id: `lvl-${level}`, result: RESULT });
    });

    it('without _meta (or with an invalid level) the configured default applies: info here', async () => {
      svc.setBehavior('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      expect(levelsOf((await sseCall(gw, 'stream', toolsCall(1, 'stream'))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
      expect(levelsOf((await sseCall(gw, 'stream', toolsCall(2, 'stream', { [LEVEL_KEY]: 'verbose' }))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
    });

    it('streaming.defaultLogLevel: warning drops info and notice unless the request asks for more', async () => {
      svc.setBehavior('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      expect(levelsOf((await sseCall(gwSmall, 'small', toolsCall(1, 'stream'))).items)).toEqual(['warning', 'error', 'emergency']);
      expect(levelsOf((await sseCall(gwSmall, 'small', toolsCall(2, 'stream', { [LEVEL_KEY]: 'info' }))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
    });

    it('logging/setLevel is acknowledged and changes nothing for later requests', async () => {
      const set = await postJson(gw, 'stream', { jsonrpc: '2.0', id: 'set', method: 'logging/setLevel', params: { level: 'emergency' } });
      expect(set.json).toEqual({ jsonrpc: '2.0', id: 'set', result: {} });
      svc.setBehavior('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      expect(levelsOf((await sseCall(gw, 'stream', toolsCall(1, 'stream'))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
    });
  });

  describe('plain JSON answers stay v0.2', () => {
    const LINES = [
      { type: 'progress', progress: 1 },
      { type: 'log', level: 'error', data: 'not forwarded on a JSON answer' },
      { type: 'result', result: RESULT },
    ];

    it('Accept: application/json only: one JSON response, no notifications, same bytes as the final SSE event', async () => {
      svc.setBehavior('/tools/stream', { kind: 'ndjson', lines: LINES, delayMs: 5 });
      const body = toolsCall('same', 'stream', { progressToken: 'tok', [LEVEL_KEY]: 'debug' });
      const json = await sseCall(gw, 'stream', body, { accept: 'application/json' });
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toBe('application/json');
      expect(json.headers['content-length']).toBe(String(Buffer.byteLength(json.text)));
      expect(JSON.parse(json.text)).toEqual({ jsonrpc: '2.0', id: 'same', result: RESULT });
      expect(json.text).not.toContain('notifications/');

      const sse = await sseCall(gw, 'stream', body);
      const last = sse.items.at(-1);
      expect(last?.kind === 'event' ? last.data : undefined).toBe(json.text);
    });

    it.each([['application/json, text/event-stream'], ['text/event-stream, application/json'], ['*/*, text/event-stream']])(
      'a JSON Tool Service answer is plain JSON even with Accept: %s',
      async (accept) => {
        const ok = await sseCall(gw, 'stream', toolsCall(9, 'plain', { progressToken: 'tok', [LEVEL_KEY]: 'debug' }), { accept });
        expect(ok.status).toBe(200);
        expect(ok.headers['content-type']).toBe('application/json');
        expect(JSON.parse(ok.text)).toEqual({ jsonrpc: '2.0', id: 9, result: RESULT });
      },
    );

    it('a slow JSON Tool Service answer is plain JSON too (nothing streams while waiting)', async () => {
      svc.setBehavior('/tools/plain', { kind: 'delay', ms: 200, then: { kind: 'json', body: RESULT } });
      const got = await sseCall(gwSmall, 'small', toolsCall(10, 'plain'));
      expect(got.headers['content-type']).toBe('application/json');
      expect(JSON.parse(got.text)).toEqual({ jsonrpc: '2.0', id: 10, result: RESULT });
    });
  });

  describe('cancellation (notifications/cancelled)', () => {
    const cancel = (requestId: string | number, session?: string, route = 'stream') =>
      postJson(gw, route, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'user pressed stop' } }, session === undefined ? {} : { 'mcp-session-id': session });

    it('aborts the upstream request of an in-flight streamed call and sends nothing more on its stream', async () => {
      const cancelledBefore = await toolCallsWithCause(gw, 'stream', 'cancelled');
      const callsBefore = svc.requests.length;
      const call = openCall(gw, 'stream', toolsCall('c-1', 'endless', { progressToken: 'pt' }), { 'mcp-session-id': 'session-a' });
      await call.waitFor((items) => items.length >= 2, 'two progress events');
      const upstream = svc.requests[callsBefore] as RecordedRequest;
      expect(upstream.path).toBe('/tools/endless');

      const res = await cancel('c-1', 'session-a');
      expect(res.status).toBe(202);
      expect(res.text).toBe('');

      const end = await call.done;
      expect(end.complete).toBe(true); // the stream is ended, not reset
      const afterEnd = call.text();
      await waitUntil(() => upstream.closed, 'the Tool Service saw its request closed');
      expect(upstream.complete).toBe(false);
      // Nothing arrived while the upstream request was being torn down (nothing can: the response ended).
      expect(call.text()).toBe(afterEnd);
      // Only progress events: no response for the cancelled request.
      const msgs = messages(call.items());
      expect(msgs.length).toBeGreaterThanOrEqual(2);
      for (const m of msgs) expect(m['method']).toBe('notifications/progress');
      expect(msgs.some((m) => 'id' in m)).toBe(false);
      await waitUntil(async () => (await toolCallsWithCause(gw, 'stream', 'cancelled')) === cancelledBefore + 1, 'the call counted with cause cancelled');
    });

    it('matches by route + mcp-session-id + id: another session or another route does not cancel', async () => {
      const callsBefore = svc.requests.length;
      const call = openCall(gw, 'stream', toolsCall(77, 'endless', { progressToken: 'pt' }), { 'mcp-session-id': 'session-b' });
      await call.waitFor((items) => items.length >= 1, 'a first event');
      const upstream = svc.requests[callsBefore] as RecordedRequest;

      expect((await cancel(77, 'session-other')).status).toBe(202);
      expect((await cancel(77)).status).toBe(202); // no session header
      expect((await cancel('77', 'session-b')).status).toBe(202); // a string id is another id
      expect((await cancel(77, 'session-b', 'other')).status).toBe(202); // same session and id, other route
      const seen = call.items().length;
      await call.waitFor((items) => items.length >= seen + 3, 'the stream to go on');
      expect(upstream.closed).toBe(false);

      expect((await cancel(77, 'session-b')).status).toBe(202);
      await call.done;
      await waitUntil(() => upstream.closed, 'the upstream request closed');
      expect(upstream.complete).toBe(false);
    });

    it('ignores an ambiguous cancel: two in-flight calls with the same route, session and id', async () => {
      const callsBefore = svc.requests.length;
      const a = openCall(gw, 'stream', toolsCall(1, 'endless', { progressToken: 'a' }));
      const b = openCall(gw, 'stream', toolsCall(1, 'endless', { progressToken: 'b' }));
      await a.waitFor((items) => items.length >= 1, 'call a streams');
      await b.waitFor((items) => items.length >= 1, 'call b streams');
      expect((await cancel(1)).status).toBe(202);
      const seenA = a.items().length;
      const seenB = b.items().length;
      await a.waitFor((items) => items.length >= seenA + 3, 'call a goes on');
      await b.waitFor((items) => items.length >= seenB + 3, 'call b goes on');
      const upstreams = svc.requests.slice(callsBefore);
      expect(upstreams.length).toBe(2);
      for (const u of upstreams) expect(u.closed).toBe(false);
      a.disconnect();
      b.disconnect();
      await waitUntil(() => upstreams.every((u) => u.closed), 'both upstream requests closed after the disconnects');
    });

    it('calls sharing an id leave the cancel index in any order: after the middle and the oldest left, cancels still find the rest', async () => {
      const callsBefore = svc.requests.length;
      // Index chain after the three dispatches (newest first): s3 → s2 → s1.
      const calls = ['s1', 's2', 's3'].map((session) => openCall(gw, 'stream', toolsCall(9, 'endless', { progressToken: session }), { 'mcp-session-id': session }));
      for (const c of calls) await c.waitFor((items) => items.length >= 1, 'the call streams');
      const upstreams = svc.requests.slice(callsBefore);
      const [s1, s2, s3] = calls as [(typeof calls)[number], (typeof calls)[number], (typeof calls)[number]];
      s2.disconnect(); // leaves the middle of the chain
      await waitUntil(() => upstreams.some((u) => u.closed), 'the disconnected call aborted upstream');
      expect((await cancel(9, 's1')).status).toBe(202); // the tail
      expect((await s1.done).complete).toBe(true);
      const seen = s3.items().length;
      await s3.waitFor((items) => items.length >= seen + 2, 'the head goes on');
      expect((await cancel(9, 's3')).status).toBe(202); // the head, now alone
      expect((await s3.done).complete).toBe(true);
      await waitUntil(() => upstreams.every((u) => u.closed), 'all three upstream requests closed');
    });

    it('cancels an in-flight plain JSON call: upstream aborted, no answer is written', async () => {
      const callsBefore = svc.requests.length;
      const call = openCall(gw, 'stream', toolsCall('json-1', 'endless'), { accept: 'application/json', 'mcp-session-id': 'session-c' });
      await waitUntil(() => svc.requests.length > callsBefore, 'the Tool Service received the call');
      const upstream = svc.requests[callsBefore] as RecordedRequest;
      expect((await cancel('json-1', 'session-c')).status).toBe(202);
      const end = await call.done;
      expect(end.complete).toBe(false);
      expect(call.text()).toBe('');
      await waitUntil(() => upstream.closed, 'the upstream request closed');
      expect(upstream.complete).toBe(false);
    });

    it('a cancel for an unknown id, or without a usable requestId, is 202 and nothing else', async () => {
      for (const params of [{ requestId: 'never-sent' }, { requestId: 123456 }, {}, { requestId: null }, { requestId: { nested: 1 } }]) {
        const res = await postJson(gw, 'stream', { jsonrpc: '2.0', method: 'notifications/cancelled', params }, { 'mcp-session-id': 'nobody' });
        expect(res.status).toBe(202);
        expect(res.text).toBe('');
      }
      // The gateway still answers normally.
      const ok = await sseCall(gw, 'stream', toolsCall(5, 'plain'));
      expect(JSON.parse(ok.text)).toEqual({ jsonrpc: '2.0', id: 5, result: RESULT });
    });
  });

  describe('client disconnects', () => {
    it('a disconnect mid-stream aborts the upstream request and is counted (cause cancelled, outcome aborted)', async () => {
      const cancelledBefore = await toolCallsWithCause(gwSmall, 'small', 'cancelled');
      const abortedBefore = await requestsWithOutcome(gwSmall, 'small', 'aborted');
      const callsBefore = svc.requests.length;
      const call = openCall(gwSmall, 'small', toolsCall('d-1', 'endless', { progressToken: 'pt' }));
      await call.waitFor((items) => items.filter((i) => i.kind === 'event').length >= 2, 'two events');
      const upstream = svc.requests[callsBefore] as RecordedRequest;
      call.disconnect();
      await waitUntil(() => upstream.closed, 'the Tool Service saw its request closed');
      expect(upstream.complete).toBe(false);
      await waitUntil(async () => (await toolCallsWithCause(gwSmall, 'small', 'cancelled')) === cancelledBefore + 1, 'tool call counted as cancelled');
      await waitUntil(async () => (await requestsWithOutcome(gwSmall, 'small', 'aborted')) === abortedBefore + 1, 'request counted as aborted');
    });

    it('20 disconnects leak nothing: upstream sockets, call slots and heartbeat timers are all freed', async () => {
      const N = 20;
      // Warm up: one complete call so the pool holds its keep-alive connection.
      expect(JSON.parse((await sseCall(gwSmall, 'small', toolsCall('warm', 'plain'))).text)).toMatchObject({ id: 'warm' });
      await waitUntil(() => svc.activeCalls === 0, 'no call in flight before the loop');
      const socketsBefore = svc.openSockets;
      const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const cancelledBefore = await toolCallsWithCause(gwSmall, 'small', 'cancelled');
      const abortedBefore = await requestsWithOutcome(gwSmall, 'small', 'aborted');
      const callsBefore = svc.requests.length;

      for (let i = 0; i < N; i++) {
        const call = openCall(gwSmall, 'small', toolsCall(`leak-${i}`, 'endless', { progressToken: i }));
        // Streaming with heartbeats (50 ms) running: wait for a heartbeat and an event, then leave.
        await call.waitFor((items) => items.some((x) => x.kind === 'comment') && items.some((x) => x.kind === 'event'), 'a heartbeat and an event', 5_000);
        call.disconnect();
        await call.done;
      }
      const ours = () => svc.requests.slice(callsBefore);
      await waitUntil(() => ours().length === N && ours().every((c) => c.closed), 'every upstream request closed');
      expect(ours().filter((c) => c.complete)).toEqual([]);
      await waitUntil(async () => (await toolCallsWithCause(gwSmall, 'small', 'cancelled')) === cancelledBefore + N, `${N} tool calls counted as cancelled`);
      await waitUntil(async () => (await requestsWithOutcome(gwSmall, 'small', 'aborted')) === abortedBefore + N, `${N} requests counted as aborted`);
      // Aborted upstream connections are closed, not kept: the Tool Service holds no more sockets than before.
      await waitUntil(
        () => svc.openSockets <= socketsBefore,
        () => `Tool Service sockets back to ${socketsBefore} (now ${svc.openSockets})`,
        5_000,
      );
      // Heartbeat intervals of acceptor 0 (this thread) are cleared.
      const timeouts = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      await waitUntil(
        () => timeouts() - timersBefore < 5,
        () => `heartbeat timers cleared (${timeouts() - timersBefore} more timers than before)`,
        5_000,
      );
      expect(timeouts() - timersBefore).toBeLessThan(5);
      // Every call slot is free again: 4 concurrent calls (the per-shard limit) all succeed.
      const answers = await Promise.all([1, 2, 3, 4].map((i) => sseCall(gwSmall, 'small', toolsCall(`after-${i}`, 'plain'))));
      for (const [i, a] of answers.entries()) {
        expect(a.status).toBe(200);
        expect(JSON.parse(a.text)).toEqual({ jsonrpc: '2.0', id: `after-${i + 1}`, result: RESULT });
      }
    });
  });

  describe('heartbeats and timeouts', () => {
    it('a slow stream carries `: keep-alive` comments between events (streaming.heartbeatMs: 50)', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        delayMs: 300,
        lines: [
          { type: 'log', level: 'error', data: 'first' },
          { type: 'log', level: 'error', data: 'second' },
          { type: 'result', result: RESULT },
        ],
      });
      const got = await sseCall(gwSmall, 'small', toolsCall('hb', 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      const kinds = got.items.map((i) => (i.kind === 'comment' ? `:${i.text}` : 'event'));
      const comments = got.items.filter((i) => i.kind === 'comment');
      expect(comments.length).toBeGreaterThanOrEqual(4);
      for (const c of comments) expect(c).toEqual({ kind: 'comment', text: 'keep-alive', line: ': keep-alive' });
      expect(got.text).toContain(': keep-alive\n\n');
      // Heartbeats run between the events, and the response is still the last event.
      const firstEvent = kinds.indexOf('event');
      const between = kinds.slice(firstEvent + 1, kinds.lastIndexOf('event')).filter((k) => k !== 'event');
      expect(between.length).toBeGreaterThanOrEqual(4);
      expect(got.items.at(-1)?.kind).toBe('event');
      expect(messages(got.items).at(-1)).toEqual({ jsonrpc: '2.0', id: 'hb', result: RESULT });
    });

    it('heartbeats start with the stream, before the first forwarded frame (a quiet start is not cut by proxies)', async () => {
      svc.setBehavior('/tools/stream', { kind: 'ndjson', firstDelayMs: 400, lines: [{ type: 'result', result: RESULT }] });
      const got = await sseCall(gwSmall, 'small', toolsCall('quiet', 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      expect(got.items.filter((i) => i.kind === 'comment').length).toBeGreaterThanOrEqual(3);
      expect(messages(got.items)).toEqual([{ jsonrpc: '2.0', id: 'quiet', result: RESULT }]);
    });

    it('the per-tool timeout bounds a stream that never ends: isError response, upstream closed', async () => {
      const callsBefore = svc.requests.length;
      const started = Date.now();
      const got = await sseCall(gw, 'stream', toolsCall('t-1', 'timeboxed', { progressToken: 'pt' }));
      const elapsed = Date.now() - started;
      expect(elapsed).toBeGreaterThanOrEqual(350);
      expect(elapsed).toBeLessThan(3_000);
      expect(got.headers['content-type']).toBe('text/event-stream');
      const msgs = messages(got.items);
      expect(msgs.length).toBeGreaterThanOrEqual(3);
      expect(msgs.slice(0, -1).every((m) => m['method'] === 'notifications/progress')).toBe(true);
      expect(msgs.at(-1)).toEqual({
        jsonrpc: '2.0',
        id: 't-1',
        result: { content: [{ type: 'text', text: 'Tool Service did not answer within 400 ms (timeout)' }], isError: true },
      });
      const upstream = svc.requests[callsBefore] as RecordedRequest;
      await waitUntil(() => upstream.closed, 'the upstream request closed after the timeout');
      expect(upstream.complete).toBe(false);
    });
  });

  describe('MCP SDK Client over StreamableHTTPClientTransport', () => {
    it('receives progress callbacks in order, log notifications and the result', async () => {
      svc.setBehavior('/tools/stream', {
        kind: 'ndjson',
        delayMs: 15,
        lines: [
          { type: 'progress', progress: 1, total: 3, message: 'extract' },
          { type: 'log', level: 'info', data: 'extracted', logger: 'etl' },
          { type: 'progress', progress: 2, total: 3, message: 'transform' },
          { type: 'log', level: 'debug', data: 'only with a debug level' },
          { type: 'progress', progress: 1, total: 3, message: 'backwards: dropped' },
          { type: 'progress', progress: 3, total: 3, message: 'load' },
          { type: 'result', result: RESULT },
        ],
      });
      const client = new Client({ name: 'streaming-test', version: '1.0.0' });
      const errors: unknown[] = [];
      client.onerror = (err) => errors.push(err);
      const logs: LoggingMessageNotification['params'][] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
        logs.push(n.params);
      });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${gw.port}/mcp/stream`)));
      expect(client.getServerCapabilities()?.logging).toEqual({});
      await client.setLoggingLevel('debug'); // acknowledged; stateless, so it changes nothing below

      const progress: Progress[] = [];
      const result = await client.callTool({ name: 'stream', arguments: {} }, CallToolResultSchema, { onprogress: (p) => progress.push(p) });
      expect(result).toEqual(RESULT);
      expect(progress).toEqual([
        { progress: 1, total: 3, message: 'extract' },
        { progress: 2, total: 3, message: 'transform' },
        { progress: 3, total: 3, message: 'load' },
      ]);
      expect(logs).toEqual([{ level: 'info', data: 'extracted', logger: 'etl' }]);

      // The per-request level travels in _meta.
      logs.length = 0;
      const again = await client.callTool({ name: 'stream', arguments: {}, _meta: { [LEVEL_KEY]: 'debug' } }, CallToolResultSchema);
      expect(again).toEqual(RESULT);
      expect(logs).toEqual([
        { level: 'info', data: 'extracted', logger: 'etl' },
        { level: 'debug', data: 'only with a debug level' },
      ]);
      await client.close();
      expect(errors).toEqual([]);
    });
  });
});
