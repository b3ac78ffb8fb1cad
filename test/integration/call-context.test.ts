/**
 * What the gateway sends a Tool Service (SPEC §5, §7 "Tool execution"): the
 * context headers and the `{name, version, arguments}` body; the argument
 * check against `inputSchema` before any call (SEP-1303); and the `-32602`
 * protocol errors for unknown tools, ambiguous versions and bad params.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService, type RecordedRequest } from '../fixtures/tool-service.js';
import { rawRequest } from '../helpers/raw-http.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, resultText, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';

const ROUTE = 'core';
/** The request-id grammar the gateway accepts from clients (and generates). */
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

const SEARCH_SCHEMA = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1 },
    filter: { type: 'object', properties: { team: { type: 'string' } }, required: ['team'] },
  },
  required: ['query'],
  additionalProperties: false,
};

describe('tools/call: forwarded context and argument rules', () => {
  let svc: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(
      manifestFor([
        { name: 'echo' },
        { name: 'search', inputSchema: SEARCH_SCHEMA },
        { name: 'dual', version: '1.0.0', execution: { path: '/tools/dual' } },
        { name: 'dual', version: '2.0.0', execution: { path: '/tools/dual' } },
        { name: 'retired', active: false },
        { name: 'multi', version: '1.0.0', active: false, execution: { path: '/tools/multi' } },
        { name: 'multi', version: '2.0.0', active: true, execution: { path: '/tools/multi' } },
      ]),
    );
    for (const tool of ['echo', 'search', 'dual', 'retired', 'multi']) svc.setBehavior(`/tools/${tool}`, { kind: 'echo' });
    // Strict readiness here: every route of this gateway has a snapshot, so it must still be 200 (see catalog-start.test.ts for the 503 side).
    gw = await startTestGateway({ health: { readiness: 'all-routes' }, catalog: { static: { routes: { [ROUTE]: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  /** Calls `echo` and returns what the Tool Service received. */
  async function echoCall(headers: Record<string, string>, args: unknown = {}): Promise<RecordedRequest> {
    const before = svc.requests.length;
    const answer = await callTool(gw, ROUTE, 'echo', args, { headers });
    expect(answer.status).toBe(200);
    expect(toolResult(answer).isError).not.toBe(true);
    expect(svc.requests.length).toBe(before + 1);
    return svc.requests[before] as RecordedRequest;
  }

  it('forwards the client x-request-id when valid, the route, the session id and traceparent', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const seen = await echoCall({ 'x-request-id': 'req-Abc.123:x_y', 'mcp-session-id': 'session-77', traceparent }, { q: 'x' });
    expect(seen.path).toBe('/tools/echo');
    expect(seen.headers['x-request-id']).toBe('req-Abc.123:x_y');
    expect(seen.headers['x-mcp-route']).toBe(ROUTE);
    expect(seen.headers['x-mcp-session-id']).toBe('session-77');
    expect(seen.headers['traceparent']).toBe(traceparent);
    expect(seen.headers['content-type']).toMatch(/^application\/json/);
    expect(seen.headers['accept']).toContain('application/json');
    expect(seen.headers['accept']).toContain('application/x-ndjson');
    expect(seen.body).toEqual({ name: 'echo', version: '1.0.0', arguments: { q: 'x' } });
  });

  it('generates a request id when the client sent none or an invalid one, and sends no session/trace headers it did not get', async () => {
    const none = await echoCall({});
    const invalid = await echoCall({ 'x-request-id': 'has spaces <and> markup' });
    const tooLong = await echoCall({ 'x-request-id': 'a'.repeat(129) });
    const ids = [none, invalid, tooLong].map((r) => r.headers['x-request-id']);
    for (const id of ids) {
      expect(typeof id).toBe('string');
      expect(id).toMatch(REQUEST_ID_RE);
    }
    expect(ids[1]).not.toContain('spaces');
    expect(ids[2]).not.toBe('a'.repeat(129));
    expect(new Set(ids).size).toBe(3);
    expect(none.headers['x-mcp-route']).toBe(ROUTE);
    expect(none.headers['x-mcp-session-id']).toBeUndefined();
    expect(none.headers['traceparent']).toBeUndefined();
  });

  it('drops a traceparent or session id that breaks its grammar at the edge and still calls the Tool Service, counted ok', async () => {
    const good = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const before = svc.requests.length;
    // A raw socket sends what a hostile client would. (A DEL or other control character in any header value is
    // refused with 400 before this point: test/integration/edge/request-smuggling.test.ts.)
    const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    const answer = await rawRequest(gw.port, {
      method: 'POST',
      path: `/mcp/${ROUTE}`,
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-request-id': 'req-del',
        'mcp-session-id': 'sess 42',
        traceparent: good.slice(0, 10) + 'g' + good.slice(11),
      },
      body: [body],
    });
    expect(answer.status, answer.body).toBe(200);
    expect((answer.json as { result?: { isError?: boolean } }).result?.isError).toBeUndefined();
    const seen = svc.requests[before] as RecordedRequest;
    expect(seen.headers['x-request-id']).toBe('req-del');
    expect(seen.headers['traceparent']).toBeUndefined();
    expect(seen.headers['x-mcp-session-id']).toBeUndefined();
    const metrics = (await httpRequest(gw, '/metrics')).text;
    expect(metrics).not.toMatch(/mcp_gateway_tool_calls_total\{[^}]*cause="unreachable"/);
  });

  it('health.readiness all-routes: /health/ready is 200 when every route has a snapshot', async () => {
    const ready = await httpRequest(gw, '/health/ready');
    expect(ready.status).toBe(200);
    const body = ready.json as { status: string; policy: string; routes: Record<string, { state: string }> };
    expect(body.status).toBe('ready');
    expect(body.policy).toBe('all-routes');
    expect(body.routes[ROUTE]?.state).toBe('ready');
  });

  it('sends the one active version of a tool in the body', async () => {
    const before = svc.requests.length;
    const answer = await callTool(gw, ROUTE, 'multi', { n: 1 });
    expect(toolResult(answer).isError).not.toBe(true);
    expect(svc.requests[before]?.body).toEqual({ name: 'multi', version: '2.0.0', arguments: { n: 1 } });
  });

  it('defaults missing arguments to {}', async () => {
    const before = svc.requests.length;
    const answer = await mcpPost(gw, ROUTE, rpc('tools/call', { name: 'echo' }));
    expect(toolResult(answer).isError).not.toBe(true);
    expect(svc.requests[before]?.body).toEqual({ name: 'echo', version: '1.0.0', arguments: {} });
  });

  it('never returns an mcp-session-id header, even when the client sent one', async () => {
    const headers = { 'mcp-session-id': 'client-session' };
    const answers = await Promise.all([
      mcpPost(gw, ROUTE, rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }), headers),
      mcpPost(gw, ROUTE, rpc('tools/list'), headers),
      callTool(gw, ROUTE, 'echo', {}, { headers }),
      callTool(gw, ROUTE, 'no_such_tool', {}, { headers }),
      mcpPost(gw, ROUTE, '{broken', headers),
    ]);
    for (const a of answers) expect(a.headers.get('mcp-session-id')).toBeNull();
    expect(answers[0]?.status).toBe(200);
  });

  it('refuses arguments that break inputSchema with isError listing each violation by path; the Tool Service is not called', async () => {
    const before = svc.requests.length;
    const answer = await callTool(gw, ROUTE, 'search', { limit: 0, filter: { team: 5 }, extra: true }, { id: 'bad-args' });
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe('bad-args');
    expect(rpcBody(answer).error).toBeUndefined();
    const result = toolResult(answer);
    expect(result.isError).toBe(true);
    const text = resultText(result);
    expect(text).toContain('search');
    expect(text).toMatch(/query/); // missing required property
    expect(text).toMatch(/\/limit\b/);
    expect(text).toMatch(/\/filter\/team\b/);
    expect(text).toMatch(/extra|additional/i);
    expect(svc.requests.length).toBe(before);
  });

  it('forwards arguments that satisfy inputSchema', async () => {
    const before = svc.requests.length;
    const answer = await callTool(gw, ROUTE, 'search', { query: 'ada', limit: 3, filter: { team: 'core' } });
    expect(toolResult(answer).isError).not.toBe(true);
    expect(svc.requests[before]?.body).toEqual({ name: 'search', version: '1.0.0', arguments: { query: 'ada', limit: 3, filter: { team: 'core' } } });
  });

  it('lists only tools with exactly one active version', async () => {
    expect((await listToolNames(gw, ROUTE)).sort()).toEqual(['echo', 'multi', 'search']);
  });

  it.each([
    ['an unknown tool', { name: 'no_such_tool', arguments: {} }, /unknown tool.*no_such_tool/i],
    ['a tool with no active version', { name: 'retired', arguments: {} }, /unknown tool.*retired/i],
    ['a tool with two active versions', { name: 'dual', arguments: {} }, /ambiguous.*1\.0\.0.*2\.0\.0/i],
    ['params.name not a string', { name: 7, arguments: {} }, /name/],
    ['params.name missing', { arguments: {} }, /name/],
    ['params.arguments an array', { name: 'echo', arguments: [1] }, /arguments/],
    ['params.arguments a string', { name: 'echo', arguments: 'x' }, /arguments/],
    ['params.arguments null', { name: 'echo', arguments: null }, /arguments/],
  ])('%s → -32602 (HTTP 200), no Tool Service call', async (_what, params, message) => {
    const before = svc.requests.length;
    const answer = await mcpPost(gw, ROUTE, rpc('tools/call', params, 'p'));
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe('p');
    const error = rpcError(answer);
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(message);
    expect(svc.requests.length).toBe(before);
  });

  it.each([
    ['missing', undefined],
    ['an array', [{ name: 'echo' }]],
    ['a string', 'echo'],
  ])('tools/call params %s → -32602', async (_what, params) => {
    const body = params === undefined ? rpc('tools/call', undefined, 9) : rpc('tools/call', params, 9);
    const answer = await mcpPost(gw, ROUTE, body);
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe(9);
    expect(rpcError(answer).code).toBe(-32602);
  });
});
