/**
 * The TypeScript SDK v2 client (`@modelcontextprotocol/client` 2.4.0, the
 * 2026-07-28 release line) against the gateway over Streamable HTTP, in
 * each of its version-negotiation modes (issue 12):
 *
 * - `{ pin: '2026-07-28' }` — modern only: `server/discover` must offer it
 *   (before: "server did not offer pinned protocol version");
 * - `'auto'` — what agent SDKs use: the `server/discover` probe succeeds and
 *   the client stays modern (before: one wasted probe per connection, then
 *   the legacy fallback);
 * - `'legacy'` — the `initialize` handshake of 2025-11-25.
 *
 * Each lists tools and calls one with progress; every HTTP exchange is
 * recorded, so the test sees which era the wire spoke. The modern modes also
 * get a multi round-trip tool call (elicitation answered by the client's own
 * handler, through the gateway, with no state in it) and a
 * `subscriptions/listen` stream that hears a catalog change.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService, type ToolDef } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { waitUntil } from '../helpers/eventually.js';

/** One HTTP exchange the SDK made. */
interface Sent {
  headers: Record<string, string>;
  body: { method?: string; params?: { _meta?: Record<string, unknown> } } | null;
  status: number;
}

function recordingFetch(log: Sent[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    let body: Sent['body'] = null;
    try {
      body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Sent['body']) : null;
    } catch {
      body = null;
    }
    log.push({ headers: Object.fromEntries(new Headers(init?.headers).entries()), body, status: res.status });
    return res;
  };
}

const TOOLS: Array<Partial<ToolDef> & { name: string }> = [
  { name: 'echo', title: 'Echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'count', description: 'Counts to three with progress.', inputSchema: { type: 'object' } },
  { name: 'whoami', description: 'Asks the user for a name (MRTR elicitation).', inputSchema: { type: 'object' } },
];

describe('MCP SDK v2 client (2.4.0) in every version-negotiation mode', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  let url: URL;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor(TOOLS));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    svc.setBehavior('/tools/count', {
      kind: 'ndjson',
      delayMs: 20,
      lines: [
        { type: 'progress', progress: 1, total: 3 },
        { type: 'progress', progress: 2, total: 3 },
        { type: 'progress', progress: 3, total: 3 },
        { type: 'result', result: { content: [{ type: 'text', text: 'counted to 3' }] } },
      ],
    });
    svc.setBehavior('/tools/whoami', {
      kind: 'compute',
      answer: (body) => {
        const responses = (body as { inputResponses?: Record<string, { action?: string; content?: { name?: string } }> }).inputResponses;
        const name = responses?.['who']?.content?.name;
        return typeof name === 'string'
          ? { kind: 'json', body: { content: [{ type: 'text', text: `Hello, ${name}!` }] } }
          : {
              kind: 'json',
              body: {
                resultType: 'input_required',
                inputRequests: {
                  who: {
                    method: 'elicitation/create',
                    params: { mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
                  },
                },
              },
            };
      },
    });
    gw = await startTestGateway({ catalog: { refreshIntervalMs: 100, static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
    url = new URL(`http://127.0.0.1:${gw.port}/mcp/core`);
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  async function connect(mode: 'legacy' | 'auto' | { pin: string }, sent: Sent[]): Promise<Client> {
    const client = new Client({ name: 'sdk-v2-e2e', version: '1.0.0' }, { versionNegotiation: { mode }, capabilities: { elicitation: {} } });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
    await client.connect(new StreamableHTTPClientTransport(url, { fetch: recordingFetch(sent) }));
    return client;
  }

  async function listAndCall(client: Client): Promise<void> {
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name).sort()).toEqual(['count', 'echo', 'whoami']);
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(echo.isError).not.toBe(true);
    const progress: number[] = [];
    const counted = await client.callTool({ name: 'count', arguments: {} }, { onprogress: (p) => progress.push(p.progress) });
    expect(counted.content).toEqual([{ type: 'text', text: 'counted to 3' }]);
    expect(progress).toEqual([1, 2, 3]);
  }

  it.each([
    ['pinned 2026-07-28', { pin: '2026-07-28' }],
    ['auto', 'auto'],
  ] as const)('%s: discovers 2026-07-28, stays modern, lists and calls with progress', async (_, mode) => {
    const sent: Sent[] = [];
    const client = await connect(mode, sent);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      await listAndCall(client);
      const methods = sent.map((s) => s.body?.method);
      // One server/discover probe, no initialize handshake, every request on the modern wire.
      expect(methods.filter((m) => m === 'server/discover')).toHaveLength(1);
      expect(methods).not.toContain('initialize');
      for (const s of sent.filter((x) => x.body?.method !== undefined && !x.body.method.startsWith('notifications/'))) {
        expect(s.headers['mcp-protocol-version'], String(s.body?.method)).toBe('2026-07-28');
        expect(s.body?.params?._meta?.['io.modelcontextprotocol/protocolVersion']).toBe('2026-07-28');
        expect(s.status, String(s.body?.method)).toBe(200);
      }
      // The Tool Service saw a 2026-07-28 call (contract v1.1 carries the client's capabilities).
      const call = svc.requests.findLast((r) => r.path === '/tools/echo');
      expect((call?.body as { clientCapabilities?: unknown } | undefined)?.clientCapabilities).toEqual({ elicitation: {} });
    } finally {
      await client.close();
    }
  });

  it('legacy: the initialize handshake of 2025-11-25 still works the same way', async () => {
    const sent: Sent[] = [];
    const client = await connect('legacy', sent);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      await listAndCall(client);
      const methods = sent.map((s) => s.body?.method);
      expect(methods).toContain('initialize');
      expect(methods).not.toContain('server/discover');
      const call = svc.requests.findLast((r) => r.path === '/tools/echo');
      expect(call?.body).not.toHaveProperty('clientCapabilities');
    } finally {
      await client.close();
    }
  });

  it("pinned 2026-07-28: an input_required result is answered by the client's handler and retried (MRTR through the gateway)", async () => {
    const sent: Sent[] = [];
    const client = await connect({ pin: '2026-07-28' }, sent);
    try {
      const result = await client.callTool({ name: 'whoami', arguments: {} });
      expect(result.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
      // Two tools/call requests, the second one carrying the client's input responses.
      const calls = sent.filter((s) => s.body?.method === 'tools/call');
      expect(calls).toHaveLength(2);
      const retry = svc.requests.findLast((r) => r.path === '/tools/whoami');
      expect((retry?.body as { inputResponses?: unknown } | undefined)?.inputResponses).toEqual({ who: { action: 'accept', content: { name: 'Ada' } } });
    } finally {
      await client.close();
    }
  });

  it('pinned 2026-07-28: subscriptions/listen delivers notifications/tools/list_changed when the catalog changes', async () => {
    const client = await connect({ pin: '2026-07-28' }, []);
    let changes = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changes++;
    });
    const subscription = await client.listen({ toolsListChanged: true });
    try {
      expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
      svc.setManifest(manifestFor([...TOOLS, { name: 'added_later' }]));
      await waitUntil(() => changes > 0, 'a tools/list_changed notification arrives');
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('added_later');
    } finally {
      svc.setManifest(manifestFor(TOOLS));
      await subscription.close();
      await client.close();
    }
  });
});
