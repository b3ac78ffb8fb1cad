import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { CatalogTool, RouteCatalog } from '../../../../src/shared/catalog/types.js';
import { answerRequest, type Decision } from '../../../../src/shared/protocol/answer.js';
import { replyText, type Reply } from '../../../../src/shared/protocol/reply.js';
import { decodeSnapshot, encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';

const pkg = JSON.parse(readFileSync(new URL('../../../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };

const tool = (name: string, over: Partial<CatalogTool> = {}): CatalogTool => ({
  name,
  version: '1.0.0',
  active: true,
  serviceId: 'svc',
  description: `The ${name} tool.`,
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  timeoutMs: 1000,
  executionUrl: `http://127.0.0.1:1/tools/${name}`,
  ...over,
});

const catalog: RouteCatalog = {
  routeKey: 'core',
  revision: 'sha256:0123456789abcdef',
  source: 'static',
  builtAt: 1_700_000_000_000,
  tools: [
    tool('employee_search', { title: 'Search employees', annotations: { readOnlyHint: true }, outputSchema: { type: 'object' } }),
    tool('ünïcode.tool', { description: 'Beschreibung — 설명 "quoted" \\ backslash' }),
    tool('retired', { active: false }),
  ],
};
const route = decodeSnapshot(encodeSnapshot(catalog));
const expectedTools = [
  {
    name: 'employee_search',
    title: 'Search employees',
    description: 'The employee_search tool.',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    outputSchema: { type: 'object' },
    annotations: { readOnlyHint: true },
  },
  { name: 'ünïcode.tool', description: 'Beschreibung — 설명 "quoted" \\ backslash', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } },
];

const enc = new TextEncoder();
const answer = (body: string | object): Decision => answerRequest(enc.encode(typeof body === 'string' ? body : JSON.stringify(body)), route);

function reply(decision: Decision): { status: number; reply: Reply; json: unknown } {
  expect(decision.kind).toBe('reply');
  const r = (decision as { reply: Reply }).reply;
  const text = replyText(r);
  return { status: r.status, reply: r, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

const req = (method: string, params?: unknown, id: string | number = 1) => ({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });

describe('answerRequest envelope errors', () => {
  it('answers malformed JSON with -32700, HTTP 400, id null', () => {
    for (const body of ['{', '', 'nul', '{"jsonrpc":"2.0",}', '\u00ff\u00fe']) {
      const r = reply(answer(body));
      expect(r.status, body).toBe(400);
      expect(r.json).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON' } });
    }
  });

  it('refuses batches with -32600, HTTP 400', () => {
    const r = reply(answer([req('ping')]));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    expect(reply(answer('[]')).status).toBe(400);
  });

  it('answers an invalid envelope with -32600, HTTP 400, echoing a usable id', () => {
    const cases: Array<[unknown, unknown]> = [
      [{ jsonrpc: '1.0', id: 5, method: 'ping' }, 5],
      [{ jsonrpc: '2.0', id: 'abc', method: 7 }, 'abc'],
      [{ jsonrpc: '2.0', id: 'x', method: '' }, 'x'],
      [{ jsonrpc: '2.0', id: { nested: true }, method: 'ping' }, null],
      [{ jsonrpc: '2.0', id: null, method: 'ping' }, null],
      [{ id: 3 }, 3],
      ['"just a string"', null],
      [42, null],
      [null, null],
    ];
    for (const [body, id] of cases) {
      const r = reply(answer(typeof body === 'string' ? body : JSON.stringify(body)));
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
    }
  });

  it('acknowledges a client response with 202 and an empty body', () => {
    for (const body of [
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: null, error: { code: -1, message: 'x' } },
    ]) {
      const d = answer(body);
      expect(d).toMatchObject({ kind: 'reply', method: 'response', outcome: 'accepted' });
      expect(reply(d)).toMatchObject({ status: 202, json: undefined });
    }
  });

  it('answers every notification, known or not, with 202 and an empty body', () => {
    for (const method of ['notifications/initialized', 'notifications/cancelled', 'no/such/method', 'tools/call']) {
      const d = answer({ jsonrpc: '2.0', method, params: { anything: 1 } });
      expect(d).toMatchObject({ kind: 'reply', method, outcome: 'accepted' });
      const r = reply(d);
      expect(r.status).toBe(202);
      expect(replyText(r.reply)).toBe('');
    }
  });

  it('answers params that are not an object with -32602, HTTP 200', () => {
    for (const params of [[1, 2], 'x', 3, null]) {
      const r = reply(answer(req('ping', params, 9)));
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'Invalid params: params must be an object' } });
    }
  });

  it('answers an unknown method with -32601, HTTP 200', () => {
    const r = reply(answer(req('resources/list', {}, 'r1')));
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ jsonrpc: '2.0', id: 'r1', error: { code: -32601, message: 'Method not found: "resources/list"' } });
  });
});

/** What a legacy tools/call forwards beyond its 2025-11-25 fields: no era flag, no MRTR, no trace context. */
const LEGACY_CALL = { modern: false, traceparent: '', tracestate: '', baggage: '', clientCapabilitiesJson: '', inputResponsesJson: '', requestStateJson: '' };

describe('answerRequest methods', () => {
  it('initialize echoes a supported protocol version with the server capabilities and info', () => {
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26']) {
      const r = reply(answer(req('initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'ab', version: '1' } })));
      expect(r.status).toBe(200);
      const body = r.json as { id: number; result: Record<string, unknown> };
      expect(body.id).toBe(1);
      expect(body.result['protocolVersion']).toBe(version);
      expect(body.result['capabilities']).toEqual({ tools: { listChanged: false }, logging: {} });
      expect(body.result['serverInfo']).toEqual({ name: pkg.name, version: pkg.version });
      expect(typeof body.result['instructions']).toBe('string');
    }
  });

  it('initialize answers the latest legacy revision to an unsupported one', () => {
    for (const requested of ['2023-01-01', '2026-07-28', 'latest']) {
      const r = reply(answer(req('initialize', { protocolVersion: requested })));
      expect((r.json as { result: { protocolVersion: string } }).result.protocolVersion, requested).toBe('2025-11-25');
    }
  });

  it('initialize negotiates 2024-11-05, which predates the MCP-Protocol-Version header', () => {
    const r = reply(answer(req('initialize', { protocolVersion: '2024-11-05' })));
    expect((r.json as { result: { protocolVersion: string } }).result.protocolVersion).toBe('2024-11-05');
  });

  it('initialize without a string protocolVersion is -32602', () => {
    for (const params of [{}, { protocolVersion: 20251125 }, undefined]) {
      const r = reply(answer(req('initialize', params, 4)));
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32602 } });
    }
  });

  it('ping answers an empty result', () => {
    expect(reply(answer(req('ping', undefined, 'p'))).json).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
  });

  it.each([
    ['numeric', 7],
    ['zero', 0],
    ['negative float', -1.5],
    ['string', 'abc'],
    ['string with quotes and backslashes', 'a"b\\c"'],
    ['unicode string', 'リクエスト-✓-\u2028-😀'],
    ['empty string', ''],
  ])('tools/list with a %s id is the whole snapshot list', (_what, id) => {
    const d = answer(req('tools/list', undefined, id));
    expect(d).toMatchObject({ kind: 'reply', method: 'tools/list', outcome: 'ok' });
    const r = reply(d);
    expect(r.status).toBe(200);
    expect(r.reply.contentType).toBe('application/json');
    expect(r.json).toEqual({ jsonrpc: '2.0', id, result: { tools: expectedTools } });
  });

  it('tools/list accepts and ignores a cursor', () => {
    const r = reply(answer(req('tools/list', { cursor: 'next-page' }, 2)));
    expect(r.json).toEqual({ jsonrpc: '2.0', id: 2, result: { tools: expectedTools } });
  });

  it('tools/list of an empty catalog is an empty list', () => {
    const empty = decodeSnapshot(encodeSnapshot({ ...catalog, tools: [] }));
    const r = reply(answerRequest(enc.encode(JSON.stringify(req('tools/list'))), empty));
    expect(r.json).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
  });

  it('logging/setLevel accepts every MCP level and refuses others', () => {
    for (const level of ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']) {
      expect(reply(answer(req('logging/setLevel', { level }))).json).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    }
    for (const params of [{ level: 'verbose' }, { level: 3 }, {}]) {
      const r = reply(answer(req('logging/setLevel', params)));
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({ id: 1, error: { code: -32602 } });
    }
  });

  it('forwards a checked tools/call with its id text, name, arguments JSON and _meta hints', () => {
    const forwarded = answer(req('tools/call', { name: 'x', arguments: { a: [1, 'é'] } }, 'call-1'));
    expect(forwarded).toMatchObject({ kind: 'forward', method: 'tools/call', id: 'call-1', idText: '"call-1"', toolName: 'x', progressTokenJson: '', logLevel: -1, ...LEGACY_CALL });
    // The arguments travel as the client's own bytes.
    expect(forwarded.kind === 'forward' && Buffer.from(forwarded.argumentsBytes ?? []).toString('utf8')).toBe('{"a":[1,"é"]}');
    expect(answer(req('tools/call', { name: 'y', _meta: { progressToken: 'p1', 'io.modelcontextprotocol/logLevel': 'warning' } }, 3))).toEqual({
      kind: 'forward',
      method: 'tools/call',
      id: 3,
      idText: '3',
      toolName: 'y',
      argumentsBytes: null,
      argumentsJson: '{}',
      progressTokenJson: '"p1"',
      logLevel: 3,
      ...LEGACY_CALL,
    });
  });

  it('forwards SEP-414 trace context from _meta, dropping malformed values (tracestate only with a valid traceparent)', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const call = answer(req('tools/call', { name: 'x', _meta: { traceparent: tp, tracestate: 'vendor=1', baggage: 'user=alice' } }));
    expect(call).toMatchObject({ kind: 'forward', traceparent: tp, tracestate: 'vendor=1', baggage: 'user=alice' });
    const bad = answer(req('tools/call', { name: 'x', _meta: { traceparent: 'nope', tracestate: 'vendor=1', baggage: 'a b' } }));
    expect(bad).toMatchObject({ kind: 'forward', traceparent: '', tracestate: '', baggage: '' });
  });

  it('refuses malformed tools/call params on the acceptor (-32602), before any hop', () => {
    const cases: Array<[unknown, string]> = [
      [undefined, 'Invalid params: tools/call needs params {name, arguments}'],
      [{ name: 42, arguments: {} }, 'Invalid params: params.name must be a string'],
      [{ name: 'x', arguments: ['a'] }, 'Invalid params: params.arguments must be an object'],
      [{ name: 'x', arguments: null }, 'Invalid params: params.arguments must be an object'],
    ];
    for (const [params, message] of cases) {
      expect(reply(answer(req('tools/call', params, 9))).json).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32602, message } });
    }
  });
});

describe('answerRequest hostile bodies', () => {
  it('does not follow __proto__ keys', () => {
    const viaProto = reply(answer('{"__proto__":{"jsonrpc":"2.0","id":1,"method":"ping"}}'));
    expect(viaProto.status).toBe(400);
    expect(viaProto.json).toMatchObject({ id: null, error: { code: -32600 } });
    const paramsProto = reply(answer('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"__proto__":{"protocolVersion":"2025-06-18"}}}'));
    expect(paramsProto.json).toMatchObject({ id: 1, error: { code: -32602 } });
    const extra = reply(answer('{"__proto__":{"polluted":1},"jsonrpc":"2.0","id":1,"method":"ping"}'));
    expect(extra.json).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('answers 100k nested arrays as a batch refusal, never a throw', () => {
    const r = reply(answer('['.repeat(100_000) + ']'.repeat(100_000)));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('answers 100k nested objects as an invalid envelope, never a throw', () => {
    const r = reply(answer('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)));
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('answers a valid request with deeply nested params normally', () => {
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(reply(answer(`{"jsonrpc":"2.0","id":1,"method":"ping","params":${deep}}`)).json).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    // Arguments deeper than tools.maxArgumentsDepth are refused before any hop.
    expect(reply(answer(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":${deep}}}`)).json).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32602, message: 'Invalid params: params.arguments nests deeper than 64 levels (tools.maxArgumentsDepth)' },
    });
    // An escaped key cannot be located by the byte scan: the parsed value is serialised instead, and refused when too deep.
    expect(reply(answer(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","\\u0061rguments":${deep}}}`)).json).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32602, message: 'Invalid params: params.arguments nests too deeply' },
    });
  });

  it('forwards arguments nested exactly tools.maxArgumentsDepth levels and refuses one more, with other members deeper', () => {
    const nested = (levels: number): string => '{"a":'.repeat(levels - 1) + '[1]' + '}'.repeat(levels - 1);
    const meta = `"_meta":{"x":${nested(80)}}`;
    const at = answer(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{${meta},"name":"x","arguments":${nested(64)}}}`);
    expect(at.kind).toBe('forward');
    expect(at.kind === 'forward' && Buffer.from(at.argumentsBytes ?? []).toString('utf8')).toBe(nested(64));
    expect(reply(answer(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":${nested(65)},${meta}}}`)).json).toMatchObject({
      error: { code: -32602, message: 'Invalid params: params.arguments nests deeper than 64 levels (tools.maxArgumentsDepth)' },
    });
  });

  it('answers unclosed deep nesting as a parse error', () => {
    const r = reply(answer('['.repeat(100_000)));
    expect(r.json).toMatchObject({ id: null, error: { code: -32700 } });
  });

  // 1e400 parses to Infinity; an error reply must still be valid JSON, so such an id cannot be echoed.
  it('never writes an id that is not valid JSON (1e400 parses to Infinity)', () => {
    const text = replyText((answer('{"jsonrpc":"2.0","id":1e400,"method":"ping"}') as { reply: Reply }).reply);
    expect(() => JSON.parse(text) as unknown).not.toThrow();
    expect(JSON.parse(text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
  });
});
