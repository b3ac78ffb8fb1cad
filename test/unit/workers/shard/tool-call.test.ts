import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CallOutcome } from '../../../../src/shared/calls.js';
import { answerRequest } from '../../../../src/shared/protocol/answer.js';
import { ARGUMENTS_NOT_JSON } from '../../../../src/shared/calls.js';
import type { CatalogTool } from '../../../../src/shared/catalog/types.js';
import { mergeRoute } from '../../../../src/shared/catalog/merge.js';
import { encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import { call, callRaw, errorText, ROUTE, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  h.svc.setBehavior('/tools/run', { kind: 'echo' });
  h.svc.setBehavior('/tools/search', { kind: 'echo' });
  h.svc.setBehavior('/tools/pattern', { kind: 'echo' });
  h.svc.setBehavior('/tools/tree', { kind: 'echo' });
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.svc.requests.length = 0;
});

/** `viaShard`: the shard decided it (a result frame came back); else the acceptor answered before any hop. */
function expectRpcError(c: Awaited<ReturnType<typeof call>>, status: number, id: unknown, code: number, message?: string | RegExp, viaShard = false): void {
  expect(c.answer.status).toBe(status);
  expect(c.answer.outcome).toBe(viaShard ? CallOutcome.RpcError : undefined);
  expect(c.answer.upstream).toBeUndefined();
  expect(c.body).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
  if (typeof message === 'string') expect(c.body.error?.message).toBe(message);
  else if (message) expect(c.body.error?.message).toMatch(message);
}

describe('tools/call request checks (acceptor, before any hop)', () => {
  it('answers a body that is not JSON with -32700, HTTP 400', async () => {
    expectRpcError(await callRaw(h, '{"jsonrpc":'), 400, null, -32700, 'Parse error: the body is not valid JSON');
  });

  it('answers a body that is not a JSON-RPC request with -32600, HTTP 400', async () => {
    expectRpcError(await callRaw(h, '[]'), 400, null, -32600);
    // The id of an invalid request is echoed when it is usable, so the client can match the error.
    expectRpcError(await callRaw(h, '{"jsonrpc":"1.0","id":1,"method":"tools/call"}'), 400, 1, -32600);
  });

  it('accepts a tools/call without an id as a notification (202, nothing called)', async () => {
    const decision = answerRequest(Buffer.from('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"run"}}'), { listTemplate: h.listTemplate });
    expect(decision).toMatchObject({ kind: 'reply', outcome: 'accepted', reply: { status: 202, body: '' } });
    expect(h.svc.requests).toHaveLength(0);
  });

  it('answers missing or non-object params with -32602', async () => {
    expectRpcError(await call(h, undefined, 5), 200, 5, -32602, 'Invalid params: tools/call needs params {name, arguments}');
    for (const params of [null, [], 'run']) {
      expectRpcError(await call(h, params, 5), 200, 5, -32602, 'Invalid params: params must be an object');
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
    expectRpcError(await call(h, { name: 'nope', arguments: {} }, 1), 200, 1, -32602, 'Unknown tool: "nope"', true);
    expectRpcError(await call(h, { name: 'retired', arguments: {} }, 2), 200, 2, -32602, 'Unknown tool: "retired"', true);
    expect(h.svc.requests).toHaveLength(0);
  });

  it('refuses a name with two active versions with -32602 naming the versions, never picking one', async () => {
    const c = await call(h, { name: 'twin', arguments: {} }, 3);
    expectRpcError(c, 200, 3, -32602, 'Tool "twin" is ambiguous: 2 active versions (1.0.0, 2.0.0); the catalog must mark exactly one active', true);
    expect(h.svc.requests).toHaveLength(0);
  });

  it("answers 503 when the shard has no runtime for the route, in the request's envelope", async () => {
    const c = await callRaw(h, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'run' } }), undefined, 'gone');
    expect(c.answer.status).toBe(503);
    expect(c.answer.outcome).toBe(CallOutcome.Rejected);
    expect(c.body).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32603, message: 'route "gone" has no usable catalog on this shard' } });
  });
});

describe('a body that is not JSON only inside its arguments object (the acceptor leaves that object to the shard)', () => {
  it("is answered -32700, HTTP 400, by the shard, with the request's id (it was read) and nothing called", async () => {
    // Bodies of 128 bytes or more are split (call-params.ts DEFER_MIN_BYTES): the padding member gets them there.
    const pad = '"note":"long enough for the acceptor to leave the arguments to the shard",';
    for (const args of ['{"query":tru}', '{"query":"x",}', '{"query":"x"]', '{"query":"\\u12"}', '{"query":"x"\\u0001}']) {
      const body = `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"search","arguments":{${pad}${args.slice(1)}}}`;
      expectRpcError(await callRaw(h, body), 400, 41, -32700, ARGUMENTS_NOT_JSON, true);
      // A shorter body is parsed whole on the acceptor: its own parse error, id null.
      expectRpcError(await callRaw(h, body.replace(pad, '')), 400, null, -32700, 'Parse error: the body is not valid JSON');
    }
    expect(h.svc.requests).toHaveLength(0);
    // A malformed byte after the arguments is the acceptor's own parse error (id null), as is everything outside them.
    expectRpcError(await callRaw(h, '{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}x'), 400, null, -32700);
    // The same arguments, well-formed, are called.
    await callRaw(h, '{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}');
    expect(h.svc.requests).toHaveLength(1);
  });
});

describe('a crash inside the shard', () => {
  it("is answered -32603 in the request's own envelope (its id, never null), logged, and the shard keeps serving", async () => {
    const get = h.routes.get.bind(h.routes);
    h.routes.get = () => {
      throw new Error('bug in route lookup');
    };
    try {
      const c = await call(h, { name: 'run', arguments: {} }, 'crash-7');
      expect(c.answer.status).toBe(200);
      expect(c.answer.outcome).toBe(CallOutcome.Internal);
      expect(c.body).toEqual({
        jsonrpc: '2.0',
        id: 'crash-7',
        error: { code: -32603, message: 'Internal error: the call failed inside the gateway; the Tool Service was not called' },
      });
    } finally {
      h.routes.get = get;
    }
    expect((await call(h, { name: 'run', arguments: {} }, 8)).body.result?.isError).toBeUndefined();
  });
});

describe('tools/call argument validation on the shard (SEP-1303)', () => {
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

  it('refuses arguments nested deeper than tools.maxArgumentsDepth with -32602 on the acceptor, at and past the edge', async () => {
    const nested = (levels: number): string => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);
    const body = (id: number, levels: number): string => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"run","arguments":${nested(levels)}}}`;
    const atEdge = await callRaw(h, body(11, 64));
    expect(atEdge.body.result?.isError).toBeUndefined();
    expect(h.svc.requests).toHaveLength(1);
    expectRpcError(await callRaw(h, body(12, 65)), 200, 12, -32602, 'Invalid params: params.arguments nests deeper than 64 levels (tools.maxArgumentsDepth)');
    expectRpcError(await callRaw(h, body(13, 100_000)), 200, 13, -32602, 'Invalid params: params.arguments nests deeper than 64 levels (tools.maxArgumentsDepth)');
    expect(h.svc.requests).toHaveLength(1);
  });
});

describe('argument checks that must not block or crash the shard', () => {
  it('checks a ReDoS-prone pattern in linear time and lists the violation', async () => {
    const evil = 'a'.repeat(27) + '!'; // 6.9 s on V8's backtracking engine (issue 11), doubling per extra character
    await call(h, { name: 'pattern', arguments: { s: 'a!' } }, 20); // compiles the validator
    const timed = async (s: string): Promise<number> => {
      const started = process.hrtime.bigint();
      await call(h, { name: 'pattern', arguments: { s } }, 21);
      return Number(process.hrtime.bigint() - started);
    };
    const tEvil = Math.min(await timed(evil), await timed(evil), await timed(evil));
    const tShort = Math.min(await timed('aaa!'), await timed('aaa!'), await timed('aaa!'));
    // Same-run ratio, no wall-clock threshold: 28 characters cost about what 4 do.
    expect(tEvil / tShort, `${tEvil} ns vs ${tShort} ns`).toBeLessThan(10);
    expect(errorText(await call(h, { name: 'pattern', arguments: { s: evil } }, 22))).toMatch(/^Invalid arguments for tool "pattern":\n- \/s: .*pattern/);
    expect(h.svc.requests).toHaveLength(0);
    expect((await call(h, { name: 'pattern', arguments: { s: 'aaaa' } }, 22)).answer.outcome).toBe(CallOutcome.Ok);
  });

  it("answers arguments nested deeper than a recursive schema's check can follow with -32602", async () => {
    const deep = '{"child":'.repeat(100_000) + '{}' + '}'.repeat(100_000);
    // A depth limit far above the default, so the shard's own guard is what answers.
    const c = await callRaw(h, `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"tree","arguments":{"node":${deep}}}}`, undefined, undefined, { maxArgumentsDepth: 1_000_000 });
    expectRpcError(c, 200, 23, -32602, 'Invalid params: params.arguments nests too deeply', true);
    // The same shard keeps serving.
    expect((await call(h, { name: 'tree', arguments: { node: { child: {} } } }, 24)).answer.outcome).toBe(CallOutcome.Ok);
  });

  it('refuses to run a schema pattern that needs backtracking (a snapshot from before the catalog rule), as a tool error', async () => {
    const tool: CatalogTool = {
      name: 'legacy',
      version: '1',
      active: true,
      serviceId: 'old',
      timeoutMs: 1000,
      executionUrl: `${h.svc.url}/tools/run`,
      inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)(a+)+$' } } },
    };
    h.routes.install('legacy-route', encodeSnapshot(mergeRoute('legacy-route', [{ serviceId: 'old', tools: [tool] }], { maxToolsPerRoute: 50, source: 'redis' })));
    const c = await callRaw(h, JSON.stringify({ jsonrpc: '2.0', id: 25, method: 'tools/call', params: { name: 'legacy', arguments: { s: 'a'.repeat(30) + '!' } } }), undefined, 'legacy-route');
    expect(c.answer.outcome).toBe(CallOutcome.ToolError);
    expect(c.body.result?.isError).toBe(true);
    expect(c.body.result?.content[0]?.text).toMatch(/^Tool "legacy" cannot be called: its inputSchema pattern "\^\(\?=a\)\(a\+\)\+\$" uses a lookahead/);
    expect(h.svc.requests).toHaveLength(0);
  });
});

describe('tools/call wire contract', () => {
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
    expect(
      String(headers['accept'])
        .split(',')
        .map((s) => s.trim()),
    ).toEqual(expect.arrayContaining(['application/json', 'application/x-ndjson']));
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
