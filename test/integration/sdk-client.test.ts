/**
 * The official MCP TypeScript SDK client against the gateway over Streamable
 * HTTP (SPEC §3): connect (initialize + notifications/initialized + the
 * optional GET SSE stream, which the gateway refuses with 405), list, call,
 * ping, close. Every HTTP exchange the SDK makes is recorded so the test can
 * see what it sent and what it got.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/eventually.js';

interface Exchange {
  method: string;
  headers: Record<string, string>;
  body: string | null;
  status: number;
  responseHeaders: Record<string, string>;
}

/** A fetch that records each exchange before handing the response to the SDK. */
function recordingFetch(log: Exchange[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    log.push({
      method: (init?.method ?? 'GET').toUpperCase(),
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
      body: typeof init?.body === 'string' ? init.body : null,
      status: res.status,
      responseHeaders: Object.fromEntries(res.headers.entries()),
    });
    return res;
  };
}

describe('MCP SDK Client over Streamable HTTP', () => {
  let svc: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(
      manifestFor([
        { name: 'echo', title: 'Echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
        {
          name: 'stats',
          outputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] },
          annotations: { readOnlyHint: true },
        },
        { name: 'broken' },
      ]),
    );
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    svc.setBehavior('/tools/stats', { kind: 'json', body: { content: [{ type: 'text', text: '{"count":3}' }], structuredContent: { count: 3 } } });
    svc.setBehavior('/tools/broken', { kind: 'json', status: 502, body: { error: 'bad gateway upstream' } });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('connects, lists tools, calls them, pings and closes; the 405 on GET is tolerated', async () => {
    const exchanges: Exchange[] = [];
    const errors: unknown[] = [];
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${gw.port}/mcp/core`), { fetch: recordingFetch(exchanges) });
    const client = new Client({ name: 'integration-test', version: '1.0.0' });
    client.onerror = (err) => errors.push(err);

    await client.connect(transport);
    expect(client.getServerVersion()?.name).toBe('mcp-route-gateway');
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: false });
    expect(client.getServerCapabilities()?.logging).toEqual({});
    expect(transport.sessionId).toBeUndefined();

    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual(['broken', 'echo', 'stats']);
    const echoTool = listed.tools.find((t) => t.name === 'echo');
    expect(echoTool?.title).toBe('Echo');
    expect(echoTool?.inputSchema).toEqual({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(listed.tools.find((t) => t.name === 'stats')?.annotations).toEqual({ readOnlyHint: true });

    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hi from the sdk' } });
    expect(echoed.isError).not.toBe(true);
    expect((echoed.structuredContent as { arguments: unknown }).arguments).toEqual({ text: 'hi from the sdk' });

    // structuredContent is validated by the SDK against the listed outputSchema.
    const stats = await client.callTool({ name: 'stats', arguments: {} });
    expect(stats.structuredContent).toEqual({ count: 3 });

    const broken = await client.callTool({ name: 'broken', arguments: {} });
    expect(broken.isError).toBe(true);
    expect(JSON.stringify(broken.content)).toContain('HTTP 502');

    const invalid = await client.callTool({ name: 'echo', arguments: { text: 42 } });
    expect(invalid.isError).toBe(true);
    expect(JSON.stringify(invalid.content)).toContain('/text');

    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/no_such_tool/);

    expect(await client.ping()).toEqual({});
    // The SDK opens its optional GET SSE stream in the background after notifications/initialized.
    await waitUntil(() => exchanges.some((e) => e.method === 'GET'), 'the SDK tried the GET SSE stream');
    await client.close();

    // What went over the wire.
    const posts = exchanges.filter((e) => e.method === 'POST');
    const methods = posts.map((e) => (JSON.parse(e.body ?? '{}') as { method?: string }).method);
    expect(methods.slice(0, 2)).toEqual(['initialize', 'notifications/initialized']);
    expect(posts[1]?.status).toBe(202);
    for (const e of posts) expect(e.responseHeaders['mcp-session-id']).toBeUndefined();
    // After initialize the SDK sends the negotiated revision on every request; the gateway accepted all of them.
    for (const e of posts.slice(1)) expect(e.headers['mcp-protocol-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const e of posts) expect([200, 202]).toContain(e.status);
    const others = exchanges.filter((e) => e.method !== 'POST');
    for (const e of others) {
      expect(['GET', 'DELETE']).toContain(e.method);
      expect(e.status).toBe(405);
      expect(e.responseHeaders['allow']).toBe('POST');
    }
    expect(errors).toEqual([]);
  });
});
