/**
 * Inbound authentication and authorization with real components: a fixture
 * authorization server publishing a JWKS on 127.0.0.1, the fixture Tool
 * Service, and the built gateway. Every forged, expired or foreign token of
 * the matrix is refused with 401 before the Tool Service is reached; a
 * caller lists and calls only the tools its rules allow.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthServer, type FixtureAuthServer } from '../fixtures/authorization-server.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { rpcBody, rpcError } from '../helpers/mcp.js';
import { freePort } from '../helpers/ports.js';

let as: FixtureAuthServer;
let tools: FixtureToolService;
let gw: Gateway;
let base: string;

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
const TOOL_NAMES = ['hr_search', 'hr_update', 'public_echo', 'secret_tool'];

beforeAll(async () => {
  as = await startAuthServer();
  tools = await startFixtureToolService();
  tools.setManifest(manifestFor(TOOL_NAMES.map((name) => ({ name }))));
  for (const name of TOOL_NAMES) tools.setBehavior(`/tools/${name}`, { kind: 'echo' });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  gw = await startTestGateway({
    server: { port },
    catalog: { static: { routes: { hr: [{ id: 'hr', baseUrl: tools.url }], other: [{ id: 'hr', baseUrl: tools.url }], open: [{ id: 'hr', baseUrl: tools.url }] } } },
    auth: {
      resourceBaseUrl: base,
      providers: {
        sso: { type: 'jwt', issuer: as.issuer, jwksUrl: as.jwksUrl, algorithms: ['RS256', 'ES256'], clockToleranceSeconds: 5, jwksCooldownMs: 0 },
        keys: { type: 'apiKeys', header: 'x-api-key', keyHashes: { ci: sha256('ci-secret-key') } },
      },
      policies: {
        team: {
          providers: ['sso', 'keys'],
          scopesSupported: ['tools.read'],
          rules: [
            { name: 'hr-group', when: { claims: { groups: 'hr' } }, tools: ['hr_*'] },
            { name: 'readers', when: { scopes: ['tools.read'] }, tools: ['public_echo'] },
            { name: 'ci', when: { apiKeys: ['ci'] }, tools: ['*'] },
          ],
        },
      },
      routes: { hr: 'team', other: 'team' },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await tools?.close();
  await as?.close();
});

async function listed(headers: Record<string, string>, route = 'hr'): Promise<string[]> {
  const answer = await mcpPost(gw, route, rpc('tools/list', undefined, 7), headers);
  expect(answer.status, answer.text).toBe(200);
  return (rpcBody(answer).result as { tools: Array<{ name: string }> }).tools.map((t) => t.name);
}

describe('401 and protected resource metadata (RFC 6750, RFC 9728)', () => {
  it('answers a request without credentials 401 with a Bearer challenge naming the route metadata and scopes', async () => {
    const answer = await mcpPost(gw, 'hr', rpc('tools/list'));
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/hr", scope="tools.read"`);
    expect(rpcError(answer)).toMatchObject({ code: -32000, data: { reason: 'UNAUTHENTICATED' } });
  });

  it('serves the metadata of a protected route at its path-inserted well-known URL', async () => {
    const answer = await httpRequest(gw, '/.well-known/oauth-protected-resource/mcp/hr');
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      resource: `${base}/mcp/hr`,
      authorization_servers: [as.issuer],
      scopes_supported: ['tools.read'],
      bearer_methods_supported: ['header'],
      resource_name: 'MCP route hr',
    });
  });

  it('has no metadata for an open route, an unknown route or the root', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp/open', '/.well-known/oauth-protected-resource/mcp/nope', '/.well-known/oauth-protected-resource']) {
      expect((await httpRequest(gw, path)).status, path).toBe(404);
    }
  });

  it('leaves a route without a policy open', async () => {
    const answer = await mcpPost(gw, 'open', rpc('tools/list'));
    expect(answer.status).toBe(200);
  });
});

describe('the forged, expired and foreign token matrix', () => {
  const cases: Array<[string, () => Promise<string> | string, string]> = [
    ['expired', () => as.mint({ aud: `${base}/mcp/hr`, expiresIn: -60 }), 'expired'],
    ['not yet valid', () => as.mint({ aud: `${base}/mcp/hr`, notBefore: 600 }), 'not valid yet'],
    ['foreign audience', () => as.mint({ aud: 'https://other.example.com/mcp' }), 'not issued for this resource'],
    ['no audience', () => as.mint({}), 'not issued for this resource'],
    ['foreign issuer', () => as.mint({ aud: `${base}/mcp/hr`, iss: 'https://evil.example.com' }), 'untrusted issuer'],
    ['alg none', () => as.unsecured({ aud: `${base}/mcp/hr` }), ''],
    ['HS256 with the RSA public key', () => as.hsConfusion({ aud: `${base}/mcp/hr` }), 'algorithm'],
    ['unknown kid', async () => as.mint({ aud: `${base}/mcp/hr`, key: await as.newKey() }), 'unknown key'],
    [
      'tampered signature',
      async () => {
        const t = await as.mint({ aud: `${base}/mcp/hr`, claims: { groups: ['hr'] } });
        const [h, p, s] = t.split('.') as [string, string, string];
        return `${h}.${p}.${s.startsWith('A') ? 'B' : 'A'}${s.slice(1)}`;
      },
      'signature',
    ],
    [
      'tampered payload',
      async () => {
        const t = await as.mint({ aud: `${base}/mcp/hr` });
        const [h, , s] = t.split('.') as [string, string, string];
        const forged = Buffer.from(JSON.stringify({ iss: as.issuer, sub: 'mallory', aud: `${base}/mcp/hr`, exp: 9_999_999_999, groups: ['hr'] })).toString('base64url');
        return `${h}.${forged}.${s}`;
      },
      'signature',
    ],
    ['no exp', () => as.mint({ aud: `${base}/mcp/hr`, noExp: true }), 'required claim'],
    ['not a JWT', () => 'definitely-not-a-token', ''],
  ];

  it.each(cases)('refuses a token that is %s with 401 invalid_token, and the Tool Service is not called', async (_name, make, description) => {
    const before = tools.requests.length;
    const token = await make();
    const answer = await mcpPost(gw, 'hr', rpc('tools/call', { name: 'hr_search', arguments: {} }), bearer(token));
    expect(answer.status, answer.text).toBe(401);
    const challenge = answer.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="/);
    expect(challenge).toContain(description);
    expect(rpcError(answer).data).toEqual({ reason: 'UNAUTHENTICATED' });
    expect(tools.requests.length).toBe(before);
  });

  it('on MCP 2026-07-28 the 401 of a first-sight token (decided after its verification) carries the request id', async () => {
    const token = await as.mint({ aud: `${base}/mcp/hr`, key: await as.newKey() });
    const body = {
      jsonrpc: '2.0',
      id: 'modern-1',
      method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
    };
    const answer = await mcpPost(gw, 'hr', body, { ...bearer(token), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    expect(answer.status, answer.text).toBe(401);
    expect(answer.headers.get('www-authenticate')).toContain('unknown key');
    expect(answer.json).toMatchObject({ id: 'modern-1', error: { code: -32000, data: { reason: 'UNAUTHENTICATED' } } });
  });

  it('refuses a token issued for another protected route (audience bound per route, RFC 8707)', async () => {
    const token = await as.mint({ aud: `${base}/mcp/other`, claims: { groups: ['hr'] } });
    expect((await mcpPost(gw, 'other', rpc('tools/list'), bearer(token))).status).toBe(200);
    const answer = await mcpPost(gw, 'hr', rpc('tools/list'), bearer(token));
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toContain('not issued for this resource');
  });
});

describe('per-caller tools', () => {
  it('lists and calls only the tools of the rules that match the caller', async () => {
    const token = await as.mint({ aud: `${base}/mcp/hr`, sub: 'hr-bot', claims: { groups: ['hr', 'staff'] }, scope: 'tools.read' });
    expect(await listed(bearer(token))).toEqual(['hr_search', 'hr_update', 'public_echo']);
    const ok = await mcpPost(gw, 'hr', rpc('tools/call', { name: 'hr_search', arguments: { q: 1 } }, 3), bearer(token));
    expect(ok.status).toBe(200);
    expect(rpcBody(ok).result).toBeDefined();
  });

  it('gives a caller with other claims another variant of the list', async () => {
    const token = await as.mint({ aud: `${base}/mcp/hr`, sub: 'reader', scope: 'tools.read profile' });
    expect(await listed(bearer(token))).toEqual(['public_echo']);
  });

  it('answers tools/call of a hidden tool exactly like an unknown tool, without calling the Tool Service', async () => {
    const token = await as.mint({ aud: `${base}/mcp/hr`, sub: 'reader2', scope: 'tools.read' });
    const before = tools.requests.length;
    const hidden = await mcpPost(gw, 'hr', rpc('tools/call', { name: 'secret_tool', arguments: {} }, 'h'), bearer(token));
    const unknown = await mcpPost(gw, 'hr', rpc('tools/call', { name: 'no_such_tool', arguments: {} }, 'h'), bearer(token));
    expect(hidden.status).toBe(200);
    expect(rpcError(hidden)).toEqual({ code: -32602, message: 'Unknown tool: "secret_tool"' });
    expect(rpcError(unknown)).toEqual({ code: -32602, message: 'Unknown tool: "no_such_tool"' });
    expect(tools.requests.length).toBe(before);
  });

  it('answers 403 insufficient_scope to an authenticated caller no rule matches', async () => {
    const token = await as.mint({ aud: `${base}/mcp/hr`, sub: 'nobody', scope: 'profile' });
    const answer = await mcpPost(gw, 'hr', rpc('tools/list'), bearer(token));
    expect(answer.status).toBe(403);
    expect(answer.headers.get('www-authenticate')).toBe(`Bearer error="insufficient_scope", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/hr", scope="tools.read"`);
    expect(rpcError(answer).data).toEqual({ reason: 'FORBIDDEN' });
  });

  it('accepts an API key (hash in config) and refuses an unknown one', async () => {
    expect(await listed({ 'x-api-key': 'ci-secret-key' })).toEqual(TOOL_NAMES);
    const wrong = await mcpPost(gw, 'hr', rpc('tools/list'), { 'x-api-key': 'ci-secret-kez' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('the API key is not valid');
  });
});

describe('JWKS caching and rotation', () => {
  it('verifies a token once: later requests with it are answered from the cache without a JWKS fetch', async () => {
    const token = await as.mint({ aud: `${base}/mcp/hr`, sub: 'cached', scope: 'tools.read' });
    await listed(bearer(token));
    const fetches = as.jwksRequests;
    const metrics = async (): Promise<string> => (await httpRequest(gw, '/metrics')).text;
    const verifications = (text: string): number => Number(/mcp_gateway_auth_token_verifications_total\{provider="sso",result="ok"\} (\d+)/.exec(text)?.[1] ?? 'NaN');
    const before = verifications(await metrics());
    for (let i = 0; i < 20; i++) await listed(bearer(token));
    expect(verifications(await metrics())).toBe(before);
    expect(as.jwksRequests).toBe(fetches);
  });

  it('accepts a token signed with a newly published key (unknown kid refetches the JWKS), and keeps the old one working while it is published', async () => {
    const old = await as.mint({ aud: `${base}/mcp/hr`, sub: 'old-key', scope: 'tools.read' });
    const fetches = as.jwksRequests;
    as.rotate(await as.newKey());
    const fresh = await as.mint({ aud: `${base}/mcp/hr`, sub: 'new-key', scope: 'tools.read' });
    expect(await listed(bearer(fresh))).toEqual(['public_echo']);
    expect(as.jwksRequests).toBe(fetches + 1);
    expect(await listed(bearer(old))).toEqual(['public_echo']);
  });

  it('answers 503 AUTH_UNAVAILABLE (not 401) when the keys of a new token cannot be fetched, and recovers', async () => {
    as.failJwks(true);
    as.rotate(await as.newKey());
    const token = await as.mint({ aud: `${base}/mcp/hr`, sub: 'during-outage', scope: 'tools.read' });
    const answer = await mcpPost(gw, 'hr', rpc('tools/list'), bearer(token));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
    expect(rpcError(answer).data).toEqual({ reason: 'AUTH_UNAVAILABLE' });
    as.failJwks(false);
    expect(await listed(bearer(token))).toEqual(['public_echo']);
  });

  it('counts refusals by outcome in /metrics', async () => {
    const text = (await httpRequest(gw, '/metrics')).text;
    expect(text).toMatch(/mcp_gateway_auth_refusals_total\{route="hr",outcome="unauthenticated"\} [1-9]/);
    expect(text).toMatch(/mcp_gateway_auth_refusals_total\{route="hr",outcome="forbidden"\} [1-9]/);
  });
});
