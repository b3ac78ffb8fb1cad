/**
 * Header and path rules of the MCP endpoint (SPEC §3 "Paths", "Request
 * rules"), decided before the body is parsed: media types, protocol version,
 * Origin/Host (DNS-rebinding protection, loopback defaults and explicit
 * lists), methods, route keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, MCP_HEADERS, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { rpcBody, rpcError } from '../helpers/mcp.js';
import { rawRequest, type RawAnswer } from '../helpers/raw-http.js';

const LIST = JSON.stringify(rpc('tools/list', undefined, 'h'));

/** tools/list on a fresh raw connection with exactly these headers (plus host/connection unless given). */
function rawList(gw: Gateway, headers: Record<string, string>, path = '/mcp/core'): Promise<RawAnswer> {
  return rawRequest(gw.port, {
    method: 'POST',
    path,
    headers: { 'content-length': String(Buffer.byteLength(LIST)), ...headers },
    body: [LIST],
  });
}

function expectList(answer: { status: number; json: unknown }): void {
  expect(answer.status).toBe(200);
  expect((answer.json as { id: string; result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['echo']);
}

function expectRefused(answer: { status: number; json: unknown }, status: number, message: RegExp): void {
  expect(answer.status).toBe(status);
  const error = (answer.json as { error?: { code: number; message: string } } | undefined)?.error;
  expect(error?.message).toMatch(message);
}

let svc: FixtureToolService;
beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }]));
  svc.setBehavior('/tools/echo', { kind: 'echo' });
});
afterAll(async () => {
  await svc?.close();
});

describe('header rules on the default loopback bind', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('Content-Type: application/json or application/json-rpc (charset allowed), else 415', async () => {
    for (const ct of ['application/json', 'application/json; charset=utf-8', 'application/json-rpc', 'Application/JSON']) {
      expectList(await mcpPost(gw, 'core', LIST, { 'content-type': ct }));
    }
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'multipart/form-data; boundary=x']) {
      expectRefused(await mcpPost(gw, 'core', LIST, { 'content-type': ct }), 415, /Content-Type/);
    }
    expectRefused(await rawList(gw, { accept: 'application/json' }), 415, /Content-Type/);
  });

  it('Accept: application/json, */*, missing, or with text/event-stream; else 406', async () => {
    for (const accept of ['application/json', '*/*', 'application/*', 'application/json, text/event-stream', 'text/event-stream, application/json;q=0.9']) {
      const answer = await mcpPost(gw, 'core', LIST, { accept });
      expect(answer.status, accept).toBe(200);
      expect(answer.text).toContain('"echo"');
    }
    expectList(await rawList(gw, { 'content-type': 'application/json' }));
    for (const accept of ['text/html', 'text/event-stream', 'application/xml', 'image/png']) {
      expectRefused(await mcpPost(gw, 'core', LIST, { accept }), 406, /Accept/);
    }
  });

  it('MCP-Protocol-Version must be a supported revision, else 400 + -32022 UnsupportedProtocolVersion with the request id', async () => {
    for (const v of ['2025-11-25', '2025-06-18', '2025-03-26']) expectList(await mcpPost(gw, 'core', LIST, { 'mcp-protocol-version': v }));
    for (const v of ['1999-01-01', '2024-11-05', 'latest']) {
      const answer = await mcpPost(gw, 'core', LIST, { 'mcp-protocol-version': v });
      expectRefused(answer, 400, /Unsupported protocol version/);
      expect(rpcError(answer).code).toBe(-32022);
      expect((answer.json as { id: unknown }).id).toBe((JSON.parse(LIST) as { id: unknown }).id);
      expect((rpcError(answer) as { data?: unknown }).data).toEqual({ supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: v });
    }
  });

  it('initialize answers the client revision when supported, else 2025-11-25, with listChanged false', async () => {
    const init = (version: string) => mcpPost(gw, 'core', rpc('initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    for (const [asked, answered] of [
      ['2025-06-18', '2025-06-18'],
      ['2025-03-26', '2025-03-26'],
      ['2025-11-25', '2025-11-25'],
      ['2099-01-01', '2025-11-25'],
    ]) {
      const answer = await init(asked as string);
      expect(answer.status).toBe(200);
      const result = rpcBody(answer).result as { protocolVersion: string; capabilities: { tools: { listChanged: boolean } }; serverInfo: { name: string; version: string } };
      expect(result.protocolVersion).toBe(answered);
      expect(result.capabilities.tools.listChanged).toBe(false);
      expect(result.serverInfo).toEqual({ name: 'mcp-route-gateway', version: expect.any(String) });
    }
  });

  it('Origin: foreign → 403 (even for unknown routes), loopback origins on any port allowed', async () => {
    for (const origin of ['http://evil.example', 'https://localhost.evil.example', 'null', 'http://127.0.0.1.evil.example:80']) {
      expectRefused(await mcpPost(gw, 'core', LIST, { origin }), 403, /Origin/);
    }
    expectRefused(await mcpPost(gw, 'no-such-route', LIST, { origin: 'http://evil.example' }), 403, /Origin/);
    for (const origin of ['http://localhost:1234', 'http://127.0.0.1:9', 'https://localhost', 'http://[::1]:8080']) {
      expectList(await mcpPost(gw, 'core', LIST, { origin }));
    }
  });

  it('Host: foreign → 403, loopback names on any port allowed', async () => {
    expectRefused(await rawList(gw, { ...MCP_HEADERS, host: 'evil.example' }), 403, /Host/);
    expectRefused(await rawList(gw, { ...MCP_HEADERS, host: 'evil.example:80' }), 403, /Host/);
    for (const host of ['localhost:1234', 'localhost', `127.0.0.1:${gw.port}`, '[::1]:80']) {
      expectList(await rawList(gw, { ...MCP_HEADERS, host }));
    }
  });

  it('GET and DELETE → 405 with allow: POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await httpRequest(gw, '/mcp/core', { method, headers: { accept: 'text/event-stream' } });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('POST');
    }
  });

  it('/mcp and /mcp/ → 400 "route key is required"', async () => {
    for (const path of ['/mcp', '/mcp/']) {
      const answer = await httpRequest(gw, path, { method: 'POST', headers: { ...MCP_HEADERS }, body: LIST });
      expectRefused(answer, 400, /route key is required/);
    }
  });

  it('an unknown route → 404 naming it', async () => {
    const answer = await mcpPost(gw, 'no-such-route', LIST);
    expectRefused(answer, 404, /no-such-route/);
  });

  it('an invalid route key → 400, never echoed', async () => {
    const keys = ['UPPER', '-lead', 'trail-', 'a_b', 'a.b', 'a'.repeat(64), 'x%3Cimg%20src%3Dx%3E', 'caf%C3%A9'];
    for (const key of keys) {
      const answer = await httpRequest(gw, `/mcp/${key}`, { method: 'POST', headers: { ...MCP_HEADERS }, body: LIST });
      expectRefused(answer, 400, /invalid route key/);
      expect(answer.text).not.toContain(key);
    }
    const raw = await rawList(gw, { ...MCP_HEADERS }, '/mcp/x<img>"y');
    expect(raw.status).toBe(400);
    expect(raw.body).not.toContain('<img>');
  });

  it('a known route with a query string is served; a deeper path is 400 (not a route key)', async () => {
    const withQuery = await httpRequest(gw, '/mcp/core?session=1', { method: 'POST', headers: { ...MCP_HEADERS }, body: LIST });
    expectList(withQuery);
    const deeper = await httpRequest(gw, '/mcp/core/extra', { method: 'POST', headers: { ...MCP_HEADERS }, body: LIST });
    expect(deeper.status).toBe(400);
  });
});

describe('server.allowedOrigins and server.allowedHosts set explicitly', () => {
  let gw: Gateway;
  beforeAll(async () => {
    gw = await startTestGateway({
      server: { allowedOrigins: ['https://app.example'], allowedHosts: ['gw.example', 'gw.internal:8443'] },
      catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } },
    });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('allows the listed Origin and Hosts', async () => {
    expectList(await rawList(gw, { ...MCP_HEADERS, host: 'gw.example', origin: 'https://app.example' }));
    expectList(await rawList(gw, { ...MCP_HEADERS, host: 'gw.example:443' }));
    expectList(await rawList(gw, { ...MCP_HEADERS, host: 'gw.internal:8443' }));
  });

  it('refuses other Origins and Hosts, including the loopback defaults', async () => {
    expectRefused(await rawList(gw, { ...MCP_HEADERS, host: 'gw.example', origin: 'http://localhost:1234' }), 403, /Origin/);
    expectRefused(await rawList(gw, { ...MCP_HEADERS, host: 'gw.example', origin: 'https://evil.example' }), 403, /Origin/);
    expectRefused(await rawList(gw, { ...MCP_HEADERS, host: `127.0.0.1:${gw.port}` }), 403, /Host/);
    expectRefused(await rawList(gw, { ...MCP_HEADERS, host: 'evil.example' }), 403, /Host/);
  });
});
