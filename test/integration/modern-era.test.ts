/**
 * The 2026-07-28 era through the built gateway, where unit tests cannot
 * reach: `subscriptions/listen` streams on every acceptor thread hearing a
 * catalog change, the per-acceptor limit, keep-alive comments and graceful
 * closure on shutdown; the per-request logging rule; a protected route's
 * `tools/list` (the caller's tools, `cacheScope: "private"`) next to an
 * open route's (`"public"`). ADR-0014.
 */
import { createHash } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { waitUntil } from '../helpers/eventually.js';
import { mcpPost, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { parseSse, type SseEvent } from '../helpers/sse.js';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const modernHeaders = (method: string, name?: string): Record<string, string> => ({
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
  ...(name === undefined ? {} : { 'mcp-name': name }),
  accept: 'application/json, text/event-stream',
});
const modernRpc = (method: string, params: Record<string, unknown> = {}, id: string | number = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { ...params, _meta: { ...META, ...(params['_meta'] as object | undefined) } },
});

/** A `subscriptions/listen` stream on its own connection (the kernel picks the acceptor thread). */
interface Stream {
  status: number;
  headers: IncomingMessage['headers'];
  text: () => string;
  events: () => Array<Record<string, unknown>>;
  ended: Promise<void>;
  close: () => void;
}

function listen(gw: Gateway, route: string, id: string | number, filter: Record<string, unknown> = { toolsListChanged: true }): Promise<Stream> {
  const body = JSON.stringify(modernRpc('subscriptions/listen', { notifications: filter }, id));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: gw.port,
        path: `/mcp/${route}`,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...modernHeaders('subscriptions/listen') },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        const ended = new Promise<void>((done) => {
          res.on('end', done);
          res.on('close', done);
        });
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: () => text,
          events: () =>
            parseSse(text)
              .items.filter((i): i is SseEvent => i.kind === 'event')
              .map((e) => JSON.parse(e.data) as Record<string, unknown>),
          ended,
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let gw: Gateway | undefined;
let svc: FixtureToolService | undefined;
const open: Stream[] = [];

afterEach(async () => {
  for (const s of open.splice(0)) s.close();
  await gw?.close();
  await svc?.close();
  gw = undefined;
  svc = undefined;
});

async function start(overrides: Record<string, unknown> = {}): Promise<Gateway> {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }]));
  svc.setBehavior('/tools/echo', { kind: 'echo' });
  gw = await startTestGateway({
    catalog: { refreshIntervalMs: 200, static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } },
    ...overrides,
  });
  return gw;
}

describe('subscriptions/listen', () => {
  it('every stream, on every acceptor thread, hears notifications/tools/list_changed once the new catalog is served', async () => {
    const g = await start({ workers: { shards: 1, acceptors: 2 } });
    // Fresh connections: the kernel spreads them over both acceptor threads (12 all on one thread: p ≈ 0.05%).
    const streams = await Promise.all(Array.from({ length: 12 }, (_, i) => listen(g, 'core', `sub-${i}`)));
    open.push(...streams);
    for (const s of streams) {
      expect(s.status, s.text()).toBe(200);
      expect(s.headers['content-type']).toBe('text/event-stream');
      expect(s.headers['x-accel-buffering']).toBe('no');
    }
    await waitUntil(() => streams.every((s) => s.events().length >= 1), 'every stream is acknowledged');
    (svc as FixtureToolService).setManifest(manifestFor([{ name: 'echo' }, { name: 'added' }]));
    await waitUntil(() => streams.every((s) => s.events().some((e) => e['method'] === 'notifications/tools/list_changed')), 'every stream hears the change');
    streams.forEach((s, i) => {
      const [ack, changed] = s.events();
      expect(ack).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': `sub-${i}` }, notifications: { toolsListChanged: true } },
      });
      expect(changed).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': `sub-${i}` } } });
    });
    // What the notification announces is already served.
    const list = await mcpPost(g, 'core', modernRpc('tools/list'), modernHeaders('tools/list'));
    expect((list.json as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['added', 'echo']);
  });

  it('refuses one stream past subscriptions.maxPerAcceptor with 503 SUBSCRIPTION_LIMIT and the request id; a closed stream frees its place', async () => {
    const g = await start({ workers: { shards: 1, acceptors: 1 }, subscriptions: { maxPerAcceptor: 1 } });
    const first = await listen(g, 'core', 'a');
    open.push(first);
    const refused = await mcpPost(g, 'core', modernRpc('subscriptions/listen', { notifications: { toolsListChanged: true } }, 'b'), modernHeaders('subscriptions/listen'));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(refused.json).toMatchObject({ id: 'b', error: { code: -32000, data: { reason: 'SUBSCRIPTION_LIMIT' } } });
    first.close();
    await waitUntil(async () => {
      const s = await listen(g, 'core', 'c');
      open.push(s);
      return s.status === 200;
    }, 'the place is free again');
  });

  it('sends keep-alive comments, and ends every stream with its result when the gateway shuts down', async () => {
    const g = await start({ workers: { shards: 1, acceptors: 1 }, subscriptions: { keepAliveMs: 50 } });
    const s = await listen(g, 'core', 7, {});
    await waitUntil(() => s.text().includes(': keep-alive\n\n'), 'a keep-alive comment arrives');
    expect(s.events()[0]).toMatchObject({ params: { notifications: {} } });
    await g.close();
    gw = undefined;
    await s.ended;
    expect(s.events().at(-1)).toMatchObject({ jsonrpc: '2.0', id: 7, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 7 } } });
  });
});

describe('2026-07-28 logging (server/utilities/logging.mdx)', () => {
  it('sends notifications/message only when the request names a level in _meta', async () => {
    const g = await start();
    (svc as FixtureToolService).setBehavior('/tools/echo', {
      kind: 'ndjson',
      lines: [
        { type: 'log', level: 'warning', data: 'careful' },
        { type: 'result', result: { content: [{ type: 'text', text: 'done' }] } },
      ],
    });
    const call = (meta: Record<string, unknown>) => mcpPost(g, 'core', modernRpc('tools/call', { name: 'echo', arguments: {}, _meta: meta }), modernHeaders('tools/call', 'echo'));
    const messages = (text: string) =>
      parseSse(text)
        .items.filter((i): i is SseEvent => i.kind === 'event')
        .map((e) => JSON.parse(e.data) as { method?: string; result?: unknown });
    const silent = await call({});
    expect(messages(silent.text).filter((m) => m.method === 'notifications/message')).toEqual([]);
    expect(messages(silent.text).at(-1)?.result).toMatchObject({ resultType: 'complete', content: [{ text: 'done' }] });
    const told = await call({ 'io.modelcontextprotocol/logLevel': 'info' });
    expect(messages(told.text).filter((m) => m.method === 'notifications/message')).toHaveLength(1);
    // Legacy keeps its default level (logging.defaultLevel): the warning is sent without asking.
    const legacy = await mcpPost(g, 'core', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {} } }, { accept: 'application/json, text/event-stream' });
    expect(messages(legacy.text).filter((m) => m.method === 'notifications/message')).toHaveLength(1);
  });
});

describe('2026-07-28 tools/list on a protected route', () => {
  const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

  it("lists the caller's tools with cacheScope private; an open route's list is public; a hidden tool stays an unknown tool", async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'public_echo' }, { name: 'hr_lookup', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } }]));
    svc.setBehavior('/tools/public_echo', { kind: 'echo' });
    gw = await startTestGateway({
      catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }], open: [{ id: 'svc', baseUrl: svc.url }] } } },
      auth: {
        resourceBaseUrl: 'https://mcp.example.com',
        providers: { keys: { type: 'apiKeys', header: 'x-api-key', keyHashes: { reader: sha256('key-r'), admin: sha256('key-a') } } },
        policies: {
          p: {
            providers: ['keys'],
            rules: [
              { name: 'reader', when: { apiKeys: ['reader'] }, tools: ['public_echo'] },
              { name: 'admin', when: { apiKeys: ['admin'] }, tools: ['*'] },
            ],
          },
        },
        routes: { core: 'p' },
      },
    });
    const list = async (route: string, key?: string) => {
      const a = await mcpPost(gw as Gateway, route, modernRpc('tools/list'), { ...modernHeaders('tools/list'), ...(key === undefined ? {} : { 'x-api-key': key }) });
      expect(a.status).toBe(200);
      return (a.json as { result: { tools: Array<{ name: string }>; cacheScope: string } }).result;
    };
    const reader = await list('core', 'key-r');
    expect([reader.tools.map((t) => t.name), reader.cacheScope]).toEqual([['public_echo'], 'private']);
    const admin = await list('core', 'key-a');
    expect([admin.tools.map((t) => t.name), admin.cacheScope]).toEqual([['hr_lookup', 'public_echo'], 'private']);
    const anyone = await list('open');
    expect([anyone.tools.map((t) => t.name), anyone.cacheScope]).toEqual([['hr_lookup', 'public_echo'], 'public']);
    // A tool hidden from the caller answers as unknown, whatever its Mcp-Param headers say.
    const hidden = await mcpPost(gw, 'core', modernRpc('tools/call', { name: 'hr_lookup', arguments: { region: 'eu' } }, 'h'), {
      ...modernHeaders('tools/call', 'hr_lookup'),
      'x-api-key': 'key-r',
    });
    expect(hidden.json).toMatchObject({ id: 'h', error: { code: -32602, message: 'Unknown tool: "hr_lookup"' } });

    // Refusals decided from the headers carry the request's id on 2026-07-28 (the body is read first); legacy keeps id null.
    const noKey = await mcpPost(gw, 'core', modernRpc('tools/list', {}, 'needs-key'), modernHeaders('tools/list'));
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata=/);
    expect(noKey.json).toMatchObject({ id: 'needs-key', error: { code: -32000, data: { reason: 'UNAUTHENTICATED' } } });
    const badKey = await mcpPost(gw, 'core', modernRpc('tools/list', {}, 7), { ...modernHeaders('tools/list'), 'x-api-key': 'wrong' });
    expect([badKey.status, (badKey.json as { id: unknown }).id]).toEqual([401, 7]);
    const legacy = await mcpPost(gw, 'core', { jsonrpc: '2.0', id: 'legacy', method: 'tools/list' });
    expect([legacy.status, (legacy.json as { id: unknown }).id]).toEqual([401, null]);
    const foreign = await mcpPost(gw, 'open', modernRpc('tools/list', {}, 'o'), { ...modernHeaders('tools/list'), origin: 'https://evil.example.com' });
    expect([foreign.status, (foreign.json as { id: unknown }).id]).toEqual([403, 'o']);
  });
});
