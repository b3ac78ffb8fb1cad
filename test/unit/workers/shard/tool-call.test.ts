import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CallOutcome } from '../../../../src/shared/threads/frames.js';
import { handleToolCall } from '../../../../src/workers/shard/tool-call.js';
import { call, callRaw, errorText, noCtx, ROUTE, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  h.svc.setBehavior('/tools/run', { kind: 'echo' });
  h.svc.setBehavior('/tools/search', { kind: 'echo' });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.svc.requests.length = 0;
});

function expectRpcError(c: Awaited<ReturnType<typeof call>>, status: number, id: unknown, code: number, message?: string | RegExp): void {
  expect(c.answer.status).toBe(status);
  expect(c.answer.outcome).toBe(CallOutcome.RpcError);
  expect(c.answer.upstream).toBeUndefined();
  expect(c.body).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
  if (typeof message === 'string') expect(c.body.error?.message).toBe(message);
  else if (message) expect(c.body.error?.message).toMatch(message);
}

describe('handleToolCall request checks', () => {
  it('answers a body that is not JSON with -32700, HTTP 400', async () => {
    expectRpcError(await callRaw(h, '{"jsonrpc":'), 400, null, -32700, 'Parse error: the body is not valid JSON');
  });

  it('answers a body that is not a JSON-RPC request with -32600, HTTP 400', async () => {
    for (const body of ['[]', '{"jsonrpc":"2.0","method":"tools/call"}', '{"jsonrpc":"1.0","id":1,"method":"tools/call"}']) {
      expectRpcError(await callRaw(h, body), 400, null, -32600);
    }
  });

  it('answers missing or non-object params with -32602', async () => {
    for (const params of [undefined, null, [], 'run']) {
      expectRpcError(await call(h, params, 5), 200, 5, -32602, 'Invalid params: tools/call needs params {name, arguments}');
    }
  });

  it('answers a params.name that is not a string with -32602', async () => {
    for (const name of [undefined, 7, null, ['run'], { name: 'run' }]) {
      expectRpcError(await call(h, { name, arguments: {} }, 'n'), 200, 'n', -32602, 'Invalid params: params.name must be a string');
    }
  });

  it('answers params.arguments that is not an object with -32602', async () => {
    for (const args of [[], 'x', 3, null, true]) {
      expectRpcError(await call(h, { name: 'run', arguments: args }, 6), 200, 6, -32602, 'Invalid params: params.arguments must be an object');
    }
    expect(h.svc.requests).toHaveLength(0);
  });

  it('answers an unknown tool with -32602 naming it, also for a name with no active version', async () => {
    expectRpcError(await call(h, { name: 'nope', arguments: {} }, 1), 200, 1, -32602, 'Unknown tool: "nope"');
    expectRpcError(await call(h, { name: 'retired', arguments: {} }, 2), 200, 2, -32602, 'Unknown tool: "retired"');
    expect(h.svc.requests).toHaveLength(0);
  });

  it('refuses a name with two active versions with -32602 naming the versions, never picking one', async () => {
    const c = await call(h, { name: 'twin', arguments: {} }, 3);
    expectRpcError(c, 200, 3, -32602, 'Tool "twin" is ambiguous: 2 active versions (1.0.0, 2.0.0); the catalog must mark exactly one active');
    expect(h.svc.requests).toHaveLength(0);
  });

  it('answers 503 when the shard has no runtime for the route', async () => {
    const answer = await handleToolCall(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'run' } }), 'gone', undefined, noCtx, h.caller);
    expect(answer.status).toBe(503);
    expect(answer.outcome).toBe(CallOutcome.Rejected);
    expect(JSON.parse(answer.body)).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32603, message: 'route "gone" has no usable catalog on this shard' } });
  });
});

describe('handleToolCall argument validation (SEP-1303)', () => {
  it('returns isError listing each violation with its JSON path, without calling the Tool Service', async () => {
    const c = await call(h, { name: 'search', arguments: { limit: 0, filters: { teams: ['hr', 7, 'ops', false] } } }, 8);
    expect(c.answer.status).toBe(200);
    expect(c.answer.outcome).toBe(CallOutcome.ToolError);
    expect(c.answer.upstream).toBeUndefined();
    expect(c.body.id).toBe(8);
    expect(errorText(c).split('\n')).toEqual([
      'Invalid arguments for tool "search":',
      '- /: must have required properties query',
      '- /limit: must be >= 1',
      '- /filters/teams/1: must be string',
      '- /filters/teams/3: must be string',
    ]);
    expect(h.svc.requests).toHaveLength(0);
  });

  // The model can only correct itself if the violation says which property is not allowed.
  it('names an unexpected property refused by additionalProperties: false', async () => {
    const c = await call(h, { name: 'search', arguments: { query: 'x', colour: 'red' } }, 8);
    expect(h.svc.requests).toHaveLength(0);
    const lines = errorText(c).split('\n').slice(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/colour/);
  });

  it('treats missing arguments as {} and validates them', async () => {
    const c = await call(h, { name: 'search' }, 9);
    expect(errorText(c)).toMatch(/^Invalid arguments for tool "search":\n- \/: .*query/);
    expect(h.svc.requests).toHaveLength(0);
  });

  it('calls the Tool Service with valid arguments', async () => {
    const args = { query: '김', limit: 5, filters: { teams: ['hr'] } };
    const c = await call(h, { name: 'search', arguments: args }, 10);
    expect(c.answer.outcome).toBe(CallOutcome.Ok);
    expect(c.body.result?.structuredContent).toEqual({ name: 'search', version: '1.0.0', arguments: args });
    expect(h.svc.requests).toHaveLength(1);
  });

  it('answers arguments nested too deeply with -32602, never a throw', async () => {
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    const c = await callRaw(h, `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"run","arguments":${deep}}}`);
    expectRpcError(c, 200, 12, -32602, 'Invalid params: params.arguments nests too deeply');
    expect(h.svc.requests).toHaveLength(0);
  });
});

describe('handleToolCall wire contract', () => {
  it('POSTs {name, version, arguments} to the execution path', async () => {
    const args = { text: 'héllo ✓', n: [1, { deep: true }] };
    const c = await call(h, { name: 'run', arguments: args }, 'call-1');
    expect(c.body.id).toBe('call-1');
    expect(h.svc.requests).toHaveLength(1);
    expect(h.svc.requests[0]?.path).toBe('/tools/run');
    expect(h.svc.requests[0]?.body).toEqual({ name: 'run', version: '1.0.0', arguments: args });
  });

  it('sends arguments {} when the client omitted them', async () => {
    await call(h, { name: 'run' });
    expect(h.svc.requests[0]?.body).toEqual({ name: 'run', version: '1.0.0', arguments: {} });
  });

  it('sends the context headers, with session and traceparent when present', async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    await call(h, { name: 'run', arguments: {} }, 1, { requestId: 'req-abc', sessionId: 'sess-42', traceparent });
    const headers = h.svc.requests[0]?.headers ?? {};
    expect(headers['content-type']).toBe('application/json');
    expect(String(headers['accept']).split(',').map((s) => s.trim())).toEqual(expect.arrayContaining(['application/json', 'application/x-ndjson']));
    expect(headers['x-request-id']).toBe('req-abc');
    expect(headers['x-mcp-route']).toBe(ROUTE);
    expect(headers['x-mcp-session-id']).toBe('sess-42');
    expect(headers['traceparent']).toBe(traceparent);
  });

  it('omits x-mcp-session-id and traceparent when the client sent none', async () => {
    await call(h, { name: 'run', arguments: {} }, 1, { requestId: 'req-def', sessionId: '', traceparent: '' });
    const headers = h.svc.requests[0]?.headers ?? {};
    expect(headers['x-request-id']).toBe('req-def');
    expect(headers['x-mcp-route']).toBe(ROUTE);
    expect('x-mcp-session-id' in headers).toBe(false);
    expect('traceparent' in headers).toBe(false);
  });

  it.each([
    ['numeric', 42],
    ['string with quotes', 'a"b\\c'],
    ['unicode string', 'ид-✓-😀'],
  ])('echoes a %s id in the result', async (_what, id) => {
    const c = await call(h, { name: 'run', arguments: {} }, id);
    expect(c.body.jsonrpc).toBe('2.0');
    expect(c.body.id).toBe(id);
    expect(c.body.result?.isError).toBeUndefined();
  });
});
