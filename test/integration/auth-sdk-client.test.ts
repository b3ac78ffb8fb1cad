/**
 * The official MCP SDK client (v1) with its `client_credentials` auth
 * provider against a protected route, all discovery done by the SDK itself:
 * 401 + `WWW-Authenticate: Bearer resource_metadata=…` → GET the route's
 * RFC 9728 metadata → RFC 8414 metadata of the authorization server → token
 * request with `resource` = the route's URL (RFC 8707) → the call succeeds
 * with the token, whose audience the gateway checks.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthServer, type FixtureAuthServer } from '../fixtures/authorization-server.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';

interface Seen {
  method: string;
  url: string;
  status: number;
  wwwAuthenticate: string | null;
  body: string | null;
}

function recordingFetch(log: Seen[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    log.push({
      method: (init?.method ?? 'GET').toUpperCase(),
      url: String(input instanceof Request ? input.url : input),
      status: res.status,
      wwwAuthenticate: res.headers.get('www-authenticate'),
      body: typeof init?.body === 'string' ? init.body : init?.body instanceof URLSearchParams ? init.body.toString() : null,
    });
    return res;
  };
}

describe('MCP SDK client with an OAuth client_credentials provider', () => {
  let as: FixtureAuthServer;
  let svc: FixtureToolService;
  let gw: Gateway;
  let base: string;

  beforeAll(async () => {
    as = await startAuthServer();
    as.addClient('agent-builder', 's3cret', { groups: ['builders'] });
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'admin_reset' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    gw = await startTestGateway({
      server: { port },
      catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } },
      auth: {
        resourceBaseUrl: base,
        providers: { sso: { type: 'jwt', issuer: as.issuer, jwksUrl: as.jwksUrl, algorithms: ['RS256'] } },
        policies: { builders: { providers: ['sso'], rules: [{ when: { claims: { groups: 'builders' } }, tools: ['echo'] }] } },
        defaultPolicy: 'builders',
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
    await as?.close();
  });

  it('discovers the authorization server from the 401, gets a token for the route and lists and calls its tools', async () => {
    const seen: Seen[] = [];
    const provider = new ClientCredentialsProvider({ clientId: 'agent-builder', clientSecret: 's3cret', expectedIssuer: as.issuer });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/core`), { authProvider: provider, fetch: recordingFetch(seen) });
    const client = new Client({ name: 'auth-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const list = await client.listTools();
      expect(list.tools.map((t) => t.name)).toEqual(['echo']);
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(result.isError).not.toBe(true);
    } finally {
      await client.close();
    }
    const first = seen[0] as Seen;
    expect(first.status).toBe(401);
    expect(first.wwwAuthenticate).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/core"`);
    const metadata = seen.find((s) => s.url === `${base}/.well-known/oauth-protected-resource/mcp/core`);
    expect(metadata?.status).toBe(200);
    const token = seen.find((s) => s.url === `${as.issuer}/token`);
    expect(token?.status).toBe(200);
    // RFC 8707: the token was requested for this route's resource URL, which the gateway then requires as `aud`.
    expect(new URLSearchParams(token?.body ?? '').get('resource')).toBe(`${base}/mcp/core`);
    expect(as.tokensIssued).toBe(1);
    expect(seen.filter((s) => s.url === `${base}/mcp/core` && s.status === 200).length).toBeGreaterThanOrEqual(3);
  });

  it('surfaces the hidden tool as an unknown tool to the SDK client', async () => {
    const provider = new ClientCredentialsProvider({ clientId: 'agent-builder', clientSecret: 's3cret', expectedIssuer: as.issuer });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/core`), { authProvider: provider });
    const client = new Client({ name: 'auth-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await expect(client.callTool({ name: 'admin_reset', arguments: {} })).rejects.toThrow(/Unknown tool: "admin_reset"/);
    } finally {
      await client.close();
    }
  });
});
