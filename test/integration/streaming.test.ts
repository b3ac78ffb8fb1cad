/**
 * Streaming (contract v0.3, docs/contracts/streaming-v0.3.md) through a real
 * gateway over HTTP: SSE answer shape and order, the progress and log-level
 * rules, the plain JSON answers that must not change, cancellation by
 * `notifications/cancelled`, client disconnects (no leaked upstream sockets,
 * queue slots or heartbeat timers), heartbeats, the per-tool timeout bounding
 * a stream, and the MCP SDK client receiving progress and log notifications.
 *
 * The Tool Service here is a real HTTP server that records, per call, whether
 * the gateway closed the request before the answer was complete, and counts
 * its open sockets, so an abort of the upstream request is observed from the
 * outside.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema, type LoggingMessageNotification, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manifestFor, type ToolDef } from '../fixtures/tool-service.js';
import { httpRequest, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { waitUntil } from '../helpers/mcp.js';

// ---------------------------------------------------------------------------
// A Tool Service that streams NDJSON and records how each call ended.

/** How the service answers one tool path. */
type Script =
  /** NDJSON lines (objects are JSON-encoded; strings written verbatim), `delayMs` apart, then the end of the body. */
  | { kind: 'ndjson'; lines: unknown[]; delayMs?: number; firstDelayMs?: number; headers?: Record<string, string> }
  /** A progress frame every `intervalMs` (progress 1, 2, 3, …) until the gateway closes the request. */
  | { kind: 'endless'; intervalMs: number }
  /** A JSON CallToolResult after `delayMs`. */
  | { kind: 'json'; body: unknown; delayMs?: number };

/** One call the service received. */
interface ServedCall {
  path: string;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
  /** True once the response is closed; `complete` says whether it was finished by the service. */
  closed: boolean;
  complete: boolean;
}

interface StreamingToolService {
  url: string;
  setScript(path: string, script: Script): void;
  readonly calls: ServedCall[];
  /** TCP connections open right now (the gateway's pooled keep-alive connections included). */
  readonly openSockets: number;
  /** Calls whose response is not closed yet. */
  readonly activeCalls: number;
  close(): Promise<void>;
}

const SERVICE_ID = 'stream-tools';

async function startStreamingToolService(tools: Array<Partial<ToolDef> & { name: string }>): Promise<StreamingToolService> {
  const manifest = JSON.stringify(manifestFor(tools, SERVICE_ID));
  const scripts = new Map<string, Script>();
  const calls: ServedCall[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const later = (ms: number, fn: () => void): NodeJS.Timeout => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
    return t;
  };

  const serve = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    let parsed: unknown = body;
    try {
      parsed = JSON.parse(body);
    } catch {
      // kept as text
    }
    const call: ServedCall = { path, body: parsed, headers: { ...req.headers }, closed: false, complete: false };
    calls.push(call);
    res.once('close', () => {
      call.closed = true;
      call.complete = res.writableFinished;
    });
    const script = scripts.get(path);
    if (script === undefined) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no script"}');
      return;
    }
    if (script.kind === 'json') {
      later(script.delayMs ?? 0, () => {
        if (res.destroyed) return;
        const text = JSON.stringify(script.body);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson', ...(script.kind === 'ndjson' ? script.headers : {}) });
    res.flushHeaders();
    if (script.kind === 'endless') {
      let n = 0;
      const interval = setInterval(() => {
        if (res.destroyed) return;
        res.write(JSON.stringify({ type: 'progress', progress: ++n, message: `tick ${n}` }) + '\n');
      }, script.intervalMs);
      res.once('close', () => clearInterval(interval));
      return;
    }
    const lines = script.lines;
    const writeFrom = (i: number): void => {
      if (res.destroyed) return;
      if (i >= lines.length) {
        res.end();
        return;
      }
      const line = lines[i];
      res.write((typeof line === 'string' ? line : JSON.stringify(line)) + '\n');
      later(script.delayMs ?? 0, () => writeFrom(i + 1));
    };
    later(script.firstDelayMs ?? 0, () => writeFrom(0));
  };

  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/manifest') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(manifest) }).end(manifest);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => serve(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('unexpected listen address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    setScript: (path, script) => void scripts.set(path, script),
    calls,
    get openSockets() {
      return sockets.size;
    },
    get activeCalls() {
      return calls.filter((c) => !c.closed).length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

// ---------------------------------------------------------------------------
// SSE client side.

/** One SSE event (`event:` / `data:` / `id:` fields) or comment, in arrival order. */
type SseItem = { kind: 'event'; event: string; data: string; id?: string } | { kind: 'comment'; text: string };

/** Parses complete SSE blocks (separated by a blank line); an unterminated tail is ignored. */
function parseSse(raw: string): SseItem[] {
  const items: SseItem[] = [];
  const blocks = raw.replace(/\r\n/g, '\n').split('\n\n');
  blocks.pop(); // the part after the last blank line is not a complete block
  for (const block of blocks) {
    if (block === '') continue;
    let event = 'message';
    const data: string[] = [];
    let id: string | undefined;
    let isEvent = false;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        items.push({ kind: 'comment', text: line.slice(1).trim() });
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      isEvent = true;
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (isEvent) items.push({ kind: 'event', event, data: data.join('\n'), ...(id !== undefined ? { id } : {}) });
  }
  return items;
}

/** Events' `data` parsed as JSON. */
function messages(items: readonly SseItem[]): Array<Record<string, unknown>> {
  return items.filter((i): i is Extract<SseItem, { kind: 'event' }> => i.kind === 'event').map((e) => JSON.parse(e.data) as Record<string, unknown>);
}

/** A request whose answer is read as it arrives. */
interface OpenCall {
  /** Resolves with the status and headers once the response head arrived (rejects when the connection closes before). */
  head: Promise<{ status: number; headers: Record<string, string> }>;
  /** Everything received so far. */
  raw(): string;
  items(): SseItem[];
  /** Resolves when the exchange is over: `complete` when the response ended normally, else how it ended. */
  done: Promise<{ complete: boolean; error?: string }>;
  /** Client disconnect: destroys the socket. */
  disconnect(): void;
  waitFor(condition: (items: SseItem[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
}

const SSE_ACCEPT = 'application/json, text/event-stream';

function openCall(port: number, route: string, body: unknown, headers: Record<string, string> = {}): OpenCall {
  const text = JSON.stringify(body);
  let raw = '';
  let settleDone!: (v: { complete: boolean; error?: string }) => void;
  const done = new Promise<{ complete: boolean; error?: string }>((r) => (settleDone = r));
  let settleHead!: (v: { status: number; headers: Record<string, string> }) => void;
  let failHead!: (e: Error) => void;
  const head = new Promise<{ status: number; headers: Record<string, string> }>((resolve, reject) => {
    settleHead = resolve;
    failHead = reject;
  });
  head.catch(() => undefined);
  const req = request(
    {
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: `/mcp/${route}`,
      agent: false,
      headers: { 'content-type': 'application/json', accept: SSE_ACCEPT, 'content-length': Buffer.byteLength(text), ...headers },
    },
    (res) => {
      const h: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = Array.isArray(v) ? v.join(', ') : v;
      settleHead({ status: res.statusCode ?? 0, headers: h });
      res.setEncoding('utf8');
      res.on('data', (c: string) => (raw += c));
      res.on('end', () => settleDone({ complete: true }));
      res.on('close', () => settleDone({ complete: res.complete }));
      res.on('error', (err) => settleDone({ complete: false, error: err.message }));
    },
  );
  req.on('error', (err) => {
    failHead(err);
    settleDone({ complete: false, error: err.message });
  });
  req.end(text);
  const items = (): SseItem[] => parseSse(raw);
  return {
    head,
    raw: () => raw,
    items,
    done,
    disconnect: () => req.destroy(),
    waitFor: async (condition, what, timeoutMs = 5_000) => {
      const until = Date.now() + timeoutMs;
      while (!condition(items())) {
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}; received: ${raw.slice(0, 2000)}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
  };
}

/** A whole call, read to its end. */
async function sseCall(gw: Gateway, route: string, body: unknown, headers: Record<string, string> = {}) {
  const call = openCall(gw.port, route, body, headers);
  const head = await call.head;
  const end = await call.done;
  return { ...head, raw: call.raw(), items: call.items(), end };
}

function toolsCall(id: string | number, name: string, meta?: Record<string, unknown>, args: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } };
}

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

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// ---------------------------------------------------------------------------

const RESULT = { content: [{ type: 'text', text: 'streamed result' }], structuredContent: { rows: 3 } };
const TOOLS: Array<Partial<ToolDef> & { name: string }> = [
  { name: 'stream' },
  { name: 'endless' },
  { name: 'plain' },
  { name: 'timeboxed', timeoutMs: 400 },
];

describe('streaming tools/call (contract v0.3)', () => {
  let svc: StreamingToolService;
  /** Defaults: heartbeat 15 s (never seen here), default log level info. */
  let gw: Gateway;
  /** heartbeat 50 ms, default log level warning, 4 call slots per shard (a leaked slot shows up as a 503). */
  let gwSmall: Gateway;

  beforeAll(async () => {
    svc = await startStreamingToolService(TOOLS);
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
    svc.setScript('/tools/plain', { kind: 'json', body: RESULT });
    svc.setScript('/tools/endless', { kind: 'endless', intervalMs: 20 });
    svc.setScript('/tools/timeboxed', { kind: 'endless', intervalMs: 50 });
  });

  describe('SSE answer shape and order', () => {
    it('forwards progress (with the request token, strictly increasing) and log frames at or above the default level, then ends with the response', async () => {
      svc.setScript('/tools/stream', {
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
      for (const e of events) expect(e).toEqual({ kind: 'event', event: 'message', data: expect.any(String) });
      expect(got.raw).toMatch(/^event: message\ndata: /);
      expect(got.raw.endsWith('\n\n')).toBe(true);

      expect(messages(got.items)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 1, total: 4, message: 'one' } },
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: { step: 'started' }, logger: 'etl' } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 2, total: 4 } },
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'warning', data: 'careful' } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 4, total: 4, message: 'done' } },
        { jsonrpc: '2.0', id: 'call-1', result: RESULT },
      ]);
      // The Tool Service's headers never reach the client.
      expect(got.raw).not.toContain('s3cr3t');
      expect(JSON.stringify(got.headers)).not.toContain('s3cr3t');
    });

    it('keeps a numeric progress token numeric', async () => {
      svc.setScript('/tools/stream', {
        kind: 'ndjson',
        lines: [{ type: 'progress', progress: 0.5 }, { type: 'result', result: RESULT }],
      });
      const got = await sseCall(gw, 'stream', toolsCall(7, 'stream', { progressToken: 42 }));
      expect(messages(got.items)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 42, progress: 0.5 } },
        { jsonrpc: '2.0', id: 7, result: RESULT },
      ]);
    });

    it('sends no progress notifications without a progressToken; log frames still stream', async () => {
      svc.setScript('/tools/stream', {
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
      svc.setScript('/tools/stream', {
        kind: 'ndjson',
        lines: [{ type: 'progress', progress: 1 }, { type: 'log', level: 'debug', data: 'dropped' }, { type: 'result', result: RESULT }],
      });
      const got = await sseCall(gw, 'stream', toolsCall(3, 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      expect(messages(got.items)).toEqual([{ jsonrpc: '2.0', id: 3, result: RESULT }]);
    });

    it('ends the stream with the isError response when the Tool Service stream fails mid-way', async () => {
      svc.setScript('/tools/stream', {
        kind: 'ndjson',
        lines: [{ type: 'progress', progress: 1 }, { type: 'error', message: 'disk full' }, { type: 'log', level: 'error', data: 'after the end: never read' }],
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
      svc.setScript('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      const got = await sseCall(gw, 'stream', toolsCall(`lvl-${level}`, 'stream', { [LEVEL_KEY]: level }));
      expect(levelsOf(got.items)).toEqual(expected);
      expect(messages(got.items).at(-1)).toEqual({ jsonrpc: '2.0', id: `lvl-${level}`, result: RESULT });
    });

    it('without _meta (or with an invalid level) the configured default applies: info here', async () => {
      svc.setScript('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      expect(levelsOf((await sseCall(gw, 'stream', toolsCall(1, 'stream'))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
      expect(levelsOf((await sseCall(gw, 'stream', toolsCall(2, 'stream', { [LEVEL_KEY]: 'verbose' }))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
    });

    it('streaming.defaultLogLevel: warning drops info and notice unless the request asks for more', async () => {
      svc.setScript('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
      expect(levelsOf((await sseCall(gwSmall, 'small', toolsCall(1, 'stream'))).items)).toEqual(['warning', 'error', 'emergency']);
      expect(levelsOf((await sseCall(gwSmall, 'small', toolsCall(2, 'stream', { [LEVEL_KEY]: 'info' }))).items)).toEqual(['info', 'notice', 'warning', 'error', 'emergency']);
    });

    it('logging/setLevel is acknowledged and changes nothing for later requests', async () => {
      const set = await postJson(gw, 'stream', { jsonrpc: '2.0', id: 'set', method: 'logging/setLevel', params: { level: 'emergency' } });
      expect(set.json).toEqual({ jsonrpc: '2.0', id: 'set', result: {} });
      svc.setScript('/tools/stream', { kind: 'ndjson', lines: LOG_LINES });
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
      svc.setScript('/tools/stream', { kind: 'ndjson', lines: LINES, delayMs: 5 });
      const body = toolsCall('same', 'stream', { progressToken: 'tok', [LEVEL_KEY]: 'debug' });
      const json = await sseCall(gw, 'stream', body, { accept: 'application/json' });
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toBe('application/json');
      expect(json.headers['content-length']).toBe(String(Buffer.byteLength(json.raw)));
      expect(JSON.parse(json.raw)).toEqual({ jsonrpc: '2.0', id: 'same', result: RESULT });
      expect(json.raw).not.toContain('notifications/');

      const sse = await sseCall(gw, 'stream', body);
      const last = sse.items.at(-1);
      expect(last?.kind === 'event' ? last.data : undefined).toBe(json.raw);
    });

    it.each([['application/json, text/event-stream'], ['text/event-stream, application/json'], ['*/*, text/event-stream']])(
      'a JSON Tool Service answer is plain JSON even with Accept: %s',
      async (accept) => {
        const ok = await sseCall(gw, 'stream', toolsCall(9, 'plain', { progressToken: 'tok', [LEVEL_KEY]: 'debug' }), { accept });
        expect(ok.status).toBe(200);
        expect(ok.headers['content-type']).toBe('application/json');
        expect(JSON.parse(ok.raw)).toEqual({ jsonrpc: '2.0', id: 9, result: RESULT });
      },
    );

    it('a slow JSON Tool Service answer is plain JSON too (nothing streams while waiting)', async () => {
      svc.setScript('/tools/plain', { kind: 'json', body: RESULT, delayMs: 200 });
      const got = await sseCall(gwSmall, 'small', toolsCall(10, 'plain'));
      expect(got.headers['content-type']).toBe('application/json');
      expect(JSON.parse(got.raw)).toEqual({ jsonrpc: '2.0', id: 10, result: RESULT });
    });
  });

  describe('cancellation (notifications/cancelled)', () => {
    const cancel = (requestId: string | number, session?: string, route = 'stream') =>
      postJson(gw, route, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'user pressed stop' } }, session === undefined ? {} : { 'mcp-session-id': session });

    it('aborts the upstream request of an in-flight streamed call and sends nothing more on its stream', async () => {
      const cancelledBefore = await toolCallsWithCause(gw, 'stream', 'cancelled');
      const callsBefore = svc.calls.length;
      const call = openCall(gw.port, 'stream', toolsCall('c-1', 'endless', { progressToken: 'pt' }), { 'mcp-session-id': 'session-a' });
      await call.waitFor((items) => items.length >= 2, 'two progress events');
      const upstream = svc.calls[callsBefore] as ServedCall;
      expect(upstream.path).toBe('/tools/endless');

      const res = await cancel('c-1', 'session-a');
      expect(res.status).toBe(202);
      expect(res.text).toBe('');

      const end = await call.done;
      expect(end.complete).toBe(true); // the stream is ended, not reset
      await waitUntil(() => upstream.closed, 'the Tool Service saw its request closed');
      expect(upstream.complete).toBe(false);
      const afterEnd = call.raw();
      await new Promise((r) => setTimeout(r, 100));
      expect(call.raw()).toBe(afterEnd);
      // Only progress events: no response for the cancelled request.
      const msgs = messages(call.items());
      expect(msgs.length).toBeGreaterThanOrEqual(2);
      for (const m of msgs) expect(m['method']).toBe('notifications/progress');
      expect(msgs.some((m) => 'id' in m)).toBe(false);
      await eventually(async () => (await toolCallsWithCause(gw, 'stream', 'cancelled')) === cancelledBefore + 1, 'the call counted with cause cancelled');
    });

    it('matches by route + mcp-session-id + id: another session or another route does not cancel', async () => {
      const callsBefore = svc.calls.length;
      const call = openCall(gw.port, 'stream', toolsCall(77, 'endless', { progressToken: 'pt' }), { 'mcp-session-id': 'session-b' });
      await call.waitFor((items) => items.length >= 1, 'a first event');
      const upstream = svc.calls[callsBefore] as ServedCall;

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
      const callsBefore = svc.calls.length;
      const a = openCall(gw.port, 'stream', toolsCall(1, 'endless', { progressToken: 'a' }));
      const b = openCall(gw.port, 'stream', toolsCall(1, 'endless', { progressToken: 'b' }));
      await a.waitFor((items) => items.length >= 1, 'call a streams');
      await b.waitFor((items) => items.length >= 1, 'call b streams');
      expect((await cancel(1)).status).toBe(202);
      const seenA = a.items().length;
      const seenB = b.items().length;
      await a.waitFor((items) => items.length >= seenA + 3, 'call a goes on');
      await b.waitFor((items) => items.length >= seenB + 3, 'call b goes on');
      const upstreams = svc.calls.slice(callsBefore);
      expect(upstreams.length).toBe(2);
      for (const u of upstreams) expect(u.closed).toBe(false);
      a.disconnect();
      b.disconnect();
      await waitUntil(() => upstreams.every((u) => u.closed), 'both upstream requests closed after the disconnects');
    });

    it('cancels an in-flight plain JSON call: upstream aborted, no answer is written', async () => {
      const callsBefore = svc.calls.length;
      const call = openCall(gw.port, 'stream', toolsCall('json-1', 'endless'), { accept: 'application/json', 'mcp-session-id': 'session-c' });
      await waitUntil(() => svc.calls.length > callsBefore, 'the Tool Service received the call');
      const upstream = svc.calls[callsBefore] as ServedCall;
      expect((await cancel('json-1', 'session-c')).status).toBe(202);
      const end = await call.done;
      expect(end.complete).toBe(false);
      expect(call.raw()).toBe('');
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
      expect(JSON.parse(ok.raw)).toEqual({ jsonrpc: '2.0', id: 5, result: RESULT });
    });
  });

  describe('client disconnects', () => {
    it('a disconnect mid-stream aborts the upstream request and is counted (cause cancelled, outcome aborted)', async () => {
      const cancelledBefore = await toolCallsWithCause(gwSmall, 'small', 'cancelled');
      const abortedBefore = await requestsWithOutcome(gwSmall, 'small', 'aborted');
      const callsBefore = svc.calls.length;
      const call = openCall(gwSmall.port, 'small', toolsCall('d-1', 'endless', { progressToken: 'pt' }));
      await call.waitFor((items) => items.filter((i) => i.kind === 'event').length >= 2, 'two events');
      const upstream = svc.calls[callsBefore] as ServedCall;
      call.disconnect();
      await waitUntil(() => upstream.closed, 'the Tool Service saw its request closed');
      expect(upstream.complete).toBe(false);
      await eventually(async () => (await toolCallsWithCause(gwSmall, 'small', 'cancelled')) === cancelledBefore + 1, 'tool call counted as cancelled');
      await eventually(async () => (await requestsWithOutcome(gwSmall, 'small', 'aborted')) === abortedBefore + 1, 'request counted as aborted');
    });

    it('20 disconnects leak nothing: upstream sockets, call slots and heartbeat timers are all freed', async () => {
      const N = 20;
      // Warm up: one complete call so the pool holds its keep-alive connection.
      expect(JSON.parse((await sseCall(gwSmall, 'small', toolsCall('warm', 'plain'))).raw)).toMatchObject({ id: 'warm' });
      await waitUntil(() => svc.activeCalls === 0, 'no call in flight before the loop');
      const socketsBefore = svc.openSockets;
      const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const cancelledBefore = await toolCallsWithCause(gwSmall, 'small', 'cancelled');
      const abortedBefore = await requestsWithOutcome(gwSmall, 'small', 'aborted');
      const callsBefore = svc.calls.length;

      for (let i = 0; i < N; i++) {
        const call = openCall(gwSmall.port, 'small', toolsCall(`leak-${i}`, 'endless', { progressToken: i }));
        // Streaming with heartbeats (50 ms) running: wait for a heartbeat and an event, then leave.
        await call.waitFor((items) => items.some((x) => x.kind === 'comment') && items.some((x) => x.kind === 'event'), 'a heartbeat and an event', 5_000);
        call.disconnect();
        await call.done;
      }
      const ours = () => svc.calls.slice(callsBefore);
      await waitUntil(() => ours().length === N && ours().every((c) => c.closed), 'every upstream request closed', 1_000);
      expect(ours().filter((c) => c.complete)).toEqual([]);
      await eventually(async () => (await toolCallsWithCause(gwSmall, 'small', 'cancelled')) === cancelledBefore + N, `${N} tool calls counted as cancelled`);
      await eventually(async () => (await requestsWithOutcome(gwSmall, 'small', 'aborted')) === abortedBefore + N, `${N} requests counted as aborted`);
      // Aborted upstream connections are closed, not kept: the Tool Service holds no more sockets than before.
      await waitUntil(() => svc.openSockets <= socketsBefore, `Tool Service sockets back to ${socketsBefore} (now ${svc.openSockets})`, 500);
      // Heartbeat intervals of acceptor 0 (this thread) are cleared.
      await new Promise((r) => setTimeout(r, 100));
      const timersAfter = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      expect(timersAfter - timersBefore).toBeLessThan(5);
      // Every call slot is free again: 4 concurrent calls (the per-shard limit) all succeed.
      const answers = await Promise.all([1, 2, 3, 4].map((i) => sseCall(gwSmall, 'small', toolsCall(`after-${i}`, 'plain'))));
      for (const [i, a] of answers.entries()) {
        expect(a.status).toBe(200);
        expect(JSON.parse(a.raw)).toEqual({ jsonrpc: '2.0', id: `after-${i + 1}`, result: RESULT });
      }
    });
  });

  describe('heartbeats and timeouts', () => {
    it('a slow stream carries `: keep-alive` comments between events (streaming.heartbeatMs: 50)', async () => {
      svc.setScript('/tools/stream', {
        kind: 'ndjson',
        delayMs: 300,
        lines: [{ type: 'log', level: 'error', data: 'first' }, { type: 'log', level: 'error', data: 'second' }, { type: 'result', result: RESULT }],
      });
      const got = await sseCall(gwSmall, 'small', toolsCall('hb', 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      const kinds = got.items.map((i) => (i.kind === 'comment' ? `:${i.text}` : 'event'));
      const comments = got.items.filter((i) => i.kind === 'comment');
      expect(comments.length).toBeGreaterThanOrEqual(4);
      for (const c of comments) expect(c).toEqual({ kind: 'comment', text: 'keep-alive' });
      expect(got.raw).toContain(': keep-alive\n\n');
      // Heartbeats run between the events, and the response is still the last event.
      const firstEvent = kinds.indexOf('event');
      const between = kinds.slice(firstEvent + 1, kinds.lastIndexOf('event')).filter((k) => k !== 'event');
      expect(between.length).toBeGreaterThanOrEqual(4);
      expect(got.items.at(-1)?.kind).toBe('event');
      expect(messages(got.items).at(-1)).toEqual({ jsonrpc: '2.0', id: 'hb', result: RESULT });
    });

    it('heartbeats start with the stream, before the first forwarded frame (a quiet start is not cut by proxies)', async () => {
      svc.setScript('/tools/stream', { kind: 'ndjson', firstDelayMs: 400, lines: [{ type: 'result', result: RESULT }] });
      const got = await sseCall(gwSmall, 'small', toolsCall('quiet', 'stream'));
      expect(got.headers['content-type']).toBe('text/event-stream');
      expect(got.items.filter((i) => i.kind === 'comment').length).toBeGreaterThanOrEqual(3);
      expect(messages(got.items)).toEqual([{ jsonrpc: '2.0', id: 'quiet', result: RESULT }]);
    });

    it('the per-tool timeout bounds a stream that never ends: isError response, upstream closed', async () => {
      const callsBefore = svc.calls.length;
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
      const upstream = svc.calls[callsBefore] as ServedCall;
      await waitUntil(() => upstream.closed, 'the upstream request closed after the timeout');
      expect(upstream.complete).toBe(false);
    });
  });

  describe('MCP SDK Client over StreamableHTTPClientTransport', () => {
    it('receives progress callbacks in order, log notifications and the result', async () => {
      svc.setScript('/tools/stream', {
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
