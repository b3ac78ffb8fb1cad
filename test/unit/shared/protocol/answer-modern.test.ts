import { describe, expect, it } from 'vitest';
import type { CatalogTool, RouteCatalog } from '../../../../src/shared/catalog/types.js';
import { answerModernRequest, DISCOVER_TTL_MS, freshnessMs, type ModernDecision, type ModernHead } from '../../../../src/shared/protocol/answer-modern.js';
import { SERVER_INFO } from '../../../../src/shared/protocol/mcp.js';
import { replyText, type Reply } from '../../../../src/shared/protocol/reply.js';
import { acceptorSections, encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';

const tool = (name: string, over: Partial<CatalogTool> = {}): CatalogTool => ({
  name,
  version: '1.0.0',
  active: true,
  serviceId: 'svc',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  timeoutMs: 1000,
  executionUrl: `http://127.0.0.1:1/tools/${name}`,
  ...over,
});
const BUILT_AT = 1_700_000_000_000;
const catalog: RouteCatalog = {
  routeKey: 'core',
  revision: 'sha256:0123456789abcdef',
  source: 'static',
  builtAt: BUILT_AT,
  tools: [
    tool('echo', { outputSchema: { type: 'array', items: { type: 'string' } } }),
    tool('regional', { inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } }),
  ],
};
const route = acceptorSections(encodeSnapshot(catalog) as SharedArrayBuffer);
const SERVER_META = { 'io.modelcontextprotocol/serverInfo': SERVER_INFO };
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const freshness = (now: number) => ({ refreshIntervalMs: 30_000, refreshJitterRatio: 0.1, now: () => now });

const enc = new TextEncoder();
function answer(body: string | object, head: Partial<ModernHead> = {}, now = BUILT_AT, limits?: { maxArgumentsDepth: number }): ModernDecision {
  const b = typeof body === 'string' ? body : JSON.stringify(body);
  const method = typeof body === 'object' ? ((body as { method?: string }).method ?? '') : '';
  const params = typeof body === 'object' ? (body as { params?: { name?: string } }).params : undefined;
  return answerModernRequest(enc.encode(b), route, { mcpMethod: method, mcpName: params?.name ?? '', paramHeaders: [], ...head }, freshness(now), limits);
}
function reply(d: ModernDecision): { status: number; json: Record<string, unknown> } {
  expect(d.kind).toBe('reply');
  const r = (d as { reply: Reply }).reply;
  const text = replyText(r);
  return { status: r.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}
const rpc = (method: string, params: Record<string, unknown> = {}, id: string | number = 7) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: { ...params, _meta: { ...META, ...(params['_meta'] as object) } },
});
const errorOf = (d: ModernDecision) => {
  const r = reply(d);
  return { status: r.status, id: r.json['id'], code: (r.json['error'] as { code: number }).code, message: (r.json['error'] as { message: string }).message };
};

describe('answerModernRequest: the validation ladder', () => {
  it('parse and envelope errors are HTTP 400; the id is echoed once one is readable', () => {
    expect(errorOf(answer('{'))).toMatchObject({ status: 400, id: null, code: -32700 });
    expect(errorOf(answer('[]'))).toMatchObject({ status: 400, id: null, code: -32600 });
    expect(errorOf(answer({ jsonrpc: '2.0', id: 3, result: {} }))).toMatchObject({ status: 400, id: 3, code: -32600, message: expect.stringMatching(/responses cannot be posted/) });
  });

  it('a notification is accepted with 202 and no body', () => {
    expect(reply(answer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: {} }))).toEqual({ status: 202, json: {} });
  });

  it('_meta is required and checked: 400 -32602 with the id', () => {
    expect(errorOf(answer({ jsonrpc: '2.0', id: 1, method: 'tools/list' }))).toMatchObject({ status: 400, id: 1, code: -32602 });
    expect(errorOf(answer({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }))).toMatchObject({ status: 400, code: -32602, message: expect.stringMatching(/_meta is required/) });
    const bad: Array<Record<string, unknown>> = [
      { 'io.modelcontextprotocol/protocolVersion': 20260728, 'io.modelcontextprotocol/clientCapabilities': {} },
      { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
      { ...META, 'io.modelcontextprotocol/clientInfo': { name: 'x' } },
      { ...META, 'io.modelcontextprotocol/logLevel': 'loud' },
    ];
    for (const meta of bad) expect(errorOf(answer({ jsonrpc: '2.0', id: 'a', method: 'tools/list', params: { _meta: meta } }))).toMatchObject({ status: 400, id: 'a', code: -32602 });
  });

  it('headers that disagree with the body are -32020 HeaderMismatch, HTTP 400, with the id', () => {
    const list = rpc('tools/list');
    expect(errorOf(answer({ ...list, params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } } }))).toMatchObject({ status: 400, id: 7, code: -32020 });
    expect(errorOf(answer(list, { mcpMethod: '' }))).toMatchObject({ code: -32020, message: expect.stringMatching(/Mcp-Method header is missing/) });
    expect(errorOf(answer(list, { mcpMethod: 'tools/call' }))).toMatchObject({ code: -32020, message: expect.stringMatching(/does not match the body method/) });
    expect(reply(answer(list, { mcpMethod: ' tools/list\t' })).status).toBe(200); // OWS is not a mismatch
    const call = rpc('tools/call', { name: 'echo', arguments: {} });
    expect(errorOf(answer(call, { mcpName: '' }))).toMatchObject({ code: -32020, message: expect.stringMatching(/Mcp-Name header is missing/) });
    expect(errorOf(answer(call, { mcpName: 'other' }))).toMatchObject({ code: -32020, message: expect.stringMatching(/does not match params.name/) });
    expect(errorOf(answer(call, { mcpName: '=?base64?ZWNobw?=' }))).toMatchObject({ code: -32020, message: expect.stringMatching(/malformed/) });
    expect(answer(call, { mcpName: '=?base64?ZWNobw==?=' }).kind).toBe('forward');
  });

  it('removed and unknown methods are 404 -32601', () => {
    for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/list', 'nope']) {
      expect(errorOf(answer(rpc(method)))).toMatchObject({ status: 404, id: 7, code: -32601 });
    }
  });
});

describe('answerModernRequest: methods', () => {
  it('server/discover: versions, capabilities (listChanged true), ttlMs and cacheScope, as a complete result', () => {
    const { status, json } = reply(answer(rpc('server/discover')));
    expect(status).toBe(200);
    expect(json).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      result: {
        resultType: 'complete',
        _meta: SERVER_META,
        supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
        capabilities: { tools: { listChanged: true } },
        ttlMs: DISCOVER_TTL_MS,
        cacheScope: 'public',
      },
    });
  });

  it('tools/list: the precomputed template, ttlMs spliced from the snapshot age; the array outputSchema shown as given', () => {
    const d = answer(rpc('tools/list', {}, 'L'), {}, BUILT_AT + 10_000);
    expect(d.kind === 'reply' && d.reply.body).toBe(route.modernListTemplate);
    const { json } = reply(d);
    expect(json).toMatchObject({ id: 'L', result: { resultType: 'complete', _meta: SERVER_META, cacheScope: 'public', ttlMs: 17_000 } });
    const tools = (json['result'] as { tools: Array<{ name: string; outputSchema?: unknown }> }).tools;
    expect(tools.map((t) => t.name)).toEqual(['echo', 'regional']);
    expect(tools[0]?.outputSchema).toEqual({ type: 'array', items: { type: 'string' } });
  });

  it('freshnessMs counts down the jitter-free part of the refresh period from the snapshot age, never below 0', () => {
    const f = (age: number) => freshnessMs(0, freshness(age));
    expect([f(0), f(10_000), f(26_999), f(27_000), f(29_000), f(30_000), f(31_000)]).toEqual([27_000, 17_000, 1, 0, 0, 27_000, 26_000]);
    expect(freshnessMs(5_000, freshness(0))).toBe(27_000); // a clock behind builtAt counts as age 0
  });

  it('tools/call: forwarded with the era, capabilities, MRTR members, trace context and spliced arguments', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const d = answer(
      rpc('tools/call', {
        name: 'echo',
        arguments: { q: 'x' },
        inputResponses: { ask: { action: 'accept', content: { ok: true } } },
        requestState: 'opaque',
        _meta: { progressToken: 5, traceparent: tp, tracestate: 'v=1', baggage: 'k=v', 'io.modelcontextprotocol/logLevel': 'debug', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } },
      }),
    );
    expect(d).toMatchObject({
      kind: 'forward',
      idText: '7',
      toolName: 'echo',
      modern: true,
      progressTokenJson: '5',
      logLevel: 0,
      traceparent: tp,
      tracestate: 'v=1',
      baggage: 'k=v',
      clientCapabilitiesJson: '{"elicitation":{}}',
      inputResponsesJson: '{"ask":{"action":"accept","content":{"ok":true}}}',
      requestStateJson: '"opaque"',
    });
    expect(d.kind === 'forward' && Buffer.from(d.argumentsBytes ?? []).toString()).toBe('{"q":"x"}');
    // Malformed trace context is dropped, not refused.
    expect(answer(rpc('tools/call', { name: 'echo', _meta: { traceparent: 'bad', tracestate: 'v=1' } }))).toMatchObject({ traceparent: '', tracestate: '' });
  });

  it('tools/call params: -32602 with HTTP 200 for name, arguments, inputResponses, requestState and nesting', () => {
    const cases: Array<Record<string, unknown>> = [
      { name: 1 },
      { name: 'echo', arguments: [] },
      { name: 'echo', inputResponses: [] },
      { name: 'echo', inputResponses: { a: 'yes' } },
      { name: 'echo', requestState: 5 },
      { name: 'echo', requestState: 'x'.repeat(64 * 1024 + 1) },
    ];
    for (const params of cases) {
      const mcpName = typeof params['name'] === 'string' ? params['name'] : '';
      expect(errorOf(answer(rpc('tools/call', params), { mcpName }))).toMatchObject({ status: 200, id: 7, code: -32602 });
    }
    const deep = rpc('tools/call', { name: 'echo', arguments: { a: { b: { c: {} } } } });
    expect(errorOf(answer(deep, {}, BUILT_AT, { maxArgumentsDepth: 2 }))).toMatchObject({ code: -32602, message: expect.stringMatching(/nests deeper than 2/) });
  });

  it('tools/call: Mcp-Param-* must mirror the arguments the tool declares with x-mcp-header', () => {
    const call = rpc('tools/call', { name: 'regional', arguments: { region: 'eu' } });
    expect(answer(call, { paramHeaders: [['mcp-param-region', 'eu']] }).kind).toBe('forward');
    expect(errorOf(answer(call))).toMatchObject({ status: 400, code: -32020, message: expect.stringMatching(/Mcp-Param-Region header is absent/) });
    expect(errorOf(answer(call, { paramHeaders: [['mcp-param-region', 'us']] }))).toMatchObject({ status: 400, code: -32020 });
  });

  it('tools/call with arguments that are not JSON: the shard parses them (a forward), unless Mcp-Param-* needs their values here (-32700 with the id)', () => {
    const bad = (name: string) => JSON.stringify(rpc('tools/call', { name, arguments: { region: 'eu' } })).replace('"eu"}', '"eu",}');
    expect(answer(bad('echo'), { mcpMethod: 'tools/call', mcpName: 'echo' })).toMatchObject({ kind: 'forward', argumentsBytes: enc.encode('{"region":"eu",}') });
    const refused = answer(bad('regional'), { mcpMethod: 'tools/call', mcpName: 'regional', paramHeaders: [['mcp-param-region', 'eu']] });
    expect(errorOf(refused)).toEqual({ status: 400, id: 7, code: -32700, message: 'Parse error: the body is not valid JSON (params.arguments)' });
  });

  it('subscriptions/listen: a listen decision with the id as subscription id; a filter is required', () => {
    expect(answer(rpc('subscriptions/listen', { notifications: { toolsListChanged: true } }, 'sub-1'))).toEqual({
      kind: 'listen',
      method: 'subscriptions/listen',
      idText: '"sub-1"',
      toolsListChanged: true,
    });
    expect(answer(rpc('subscriptions/listen', { notifications: {} }))).toMatchObject({ kind: 'listen', toolsListChanged: false });
    expect(errorOf(answer(rpc('subscriptions/listen')))).toMatchObject({ status: 200, code: -32602 });
  });
});
