/**
 * Hostile and broken input over real HTTP (SPEC §3 "Request rules",
 * "Errors"): malformed JSON, batches, deep nesting, bodies at and past
 * `server.maxBodyBytes` (declared and chunked), `__proto__` keys, and wrong
 * types in every envelope field. Each gets its specific answer, nothing is
 * thrown on a gateway thread, and the gateway keeps serving.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { MCP_HEADERS, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { listToolNames, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';
import { chunked, rawRequest } from '../helpers/raw-http.js';

const ROUTE = 'core';
const MAX_BODY = 256 * 1024;
const NESTING = 50_000;

/** A tools/call body for `echo` padded to exactly `bytes` bytes (ASCII). */
function callBodyOfSize(bytes: number): string {
  const base = JSON.stringify(rpc('tools/call', { name: 'echo', arguments: { pad: '' } }, 'sized')).length;
  return JSON.stringify(rpc('tools/call', { name: 'echo', arguments: { pad: 'x'.repeat(bytes - base) } }, 'sized'));
}

/** Splits `text` into chunks of `size` characters. */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

describe('bad input over real HTTP', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  /** Exceptions that escaped to the test process (the main-thread acceptor runs here). */
  const escaped: unknown[] = [];
  const onUncaught = (err: unknown): void => {
    escaped.push(err);
  };

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    gw = await startTestGateway({ server: { maxBodyBytes: MAX_BODY }, catalog: { static: { routes: { [ROUTE]: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });
  beforeEach(() => {
    escaped.length = 0;
    process.on('uncaughtException', onUncaught);
  });
  afterEach(async () => {
    // Every case ends with the gateway still serving and nothing thrown on its threads.
    expect(await listToolNames(gw, ROUTE)).toEqual(['echo']);
    process.off('uncaughtException', onUncaught);
    expect(escaped.map(String)).toEqual([]);
  });

  it('malformed JSON → 400, -32700, id null', async () => {
    for (const body of ['{"jsonrpc":"2.0","id":1,"method":', '', 'not json at all', '{"a":1}}']) {
      const answer = await mcpPost(gw, ROUTE, body);
      expect(answer.status).toBe(400);
      expect(rpcBody(answer).id).toBeNull();
      expect(rpcError(answer).code).toBe(-32700);
    }
  });

  it('a JSON array (batch) → 400, -32600', async () => {
    for (const body of [[rpc('tools/list', undefined, 1), rpc('ping', undefined, 2)], []]) {
      const answer = await mcpPost(gw, ROUTE, body);
      expect(answer.status).toBe(400);
      expect(rpcBody(answer).id).toBeNull();
      expect(rpcError(answer).code).toBe(-32600);
      expect(rpcError(answer).message).toMatch(/batch/i);
    }
  });

  it(`${NESTING} levels of nesting inside tools/call arguments → -32602, the Tool Service is not called`, async () => {
    const deep = '['.repeat(NESTING) + ']'.repeat(NESTING);
    const before = svc.requests.length;
    const answer = await mcpPost(gw, ROUTE, `{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"deep":${deep}}}}`);
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe('deep');
    expect(rpcError(answer).code).toBe(-32602);
    expect(rpcError(answer).message).toMatch(/deep/);
    expect(svc.requests.length).toBe(before);
  });

  it(`${NESTING} levels of nesting inside a tools/list body → the list (params are ignored)`, async () => {
    const deep = '['.repeat(NESTING) + ']'.repeat(NESTING);
    const answer = await mcpPost(gw, ROUTE, `{"jsonrpc":"2.0","id":"deep-list","method":"tools/list","params":{"cursor":null,"x":${deep}}}`);
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe('deep-list');
    expect((rpcBody(answer).result as { tools: unknown[] }).tools).toHaveLength(1);
  });

  it(`${NESTING} levels of nesting as the whole body → -32600`, async () => {
    const answer = await mcpPost(gw, ROUTE, '['.repeat(NESTING) + ']'.repeat(NESTING));
    expect(answer.status).toBe(400);
    expect(rpcError(answer).code).toBe(-32600);
  });

  it('a body exactly at server.maxBodyBytes is accepted (Content-Length and chunked)', async () => {
    const body = callBodyOfSize(MAX_BODY);
    expect(Buffer.byteLength(body)).toBe(MAX_BODY);
    const declared = await mcpPost(gw, ROUTE, body);
    expect(declared.status).toBe(200);
    const result = toolResult(declared);
    expect(result.isError).not.toBe(true);
    const sent = (JSON.parse(body) as { params: { arguments: { pad: string } } }).params.arguments.pad;
    expect((result.structuredContent as { arguments: { pad: string } }).arguments.pad).toBe(sent);

    const streamed = await rawRequest(gw.port, {
      method: 'POST',
      path: `/mcp/${ROUTE}`,
      headers: { ...MCP_HEADERS, 'transfer-encoding': 'chunked' },
      body: chunked(pieces(body, 16 * 1024)),
    });
    expect(streamed.status).toBe(200);
    expect((streamed.json as { id: string; result: { isError?: boolean } }).id).toBe('sized');
    expect((streamed.json as { result: { isError?: boolean } }).result.isError).not.toBe(true);
  });

  it('a body one byte past server.maxBodyBytes with Content-Length → 413 before it is read', async () => {
    const body = callBodyOfSize(MAX_BODY + 1);
    const answer = await rawRequest(gw.port, {
      method: 'POST',
      path: `/mcp/${ROUTE}`,
      headers: { ...MCP_HEADERS, 'content-length': String(Buffer.byteLength(body)) },
      body: [body],
    });
    expect(answer.status).toBe(413);
    expect((answer.json as { error: { message: string } }).error.message).toContain(String(MAX_BODY));
  });

  it('a huge chunked body without Content-Length → 413 while reading', async () => {
    const before = svc.requests.length;
    const answer = await rawRequest(gw.port, {
      method: 'POST',
      path: `/mcp/${ROUTE}`,
      headers: { ...MCP_HEADERS, 'transfer-encoding': 'chunked' },
      body: chunked(pieces(callBodyOfSize(4 * MAX_BODY), 16 * 1024)),
    });
    expect(answer.status).toBe(413);
    expect((answer.json as { error: { message: string } }).error.message).toContain(String(MAX_BODY));
    expect(svc.requests.length).toBe(before);
  });

  it('a chunked body one byte past the limit → 413', async () => {
    const answer = await rawRequest(gw.port, {
      method: 'POST',
      path: `/mcp/${ROUTE}`,
      headers: { ...MCP_HEADERS, 'transfer-encoding': 'chunked' },
      body: chunked(pieces(callBodyOfSize(MAX_BODY + 1), 16 * 1024)),
    });
    expect(answer.status).toBe(413);
  });

  it('forwards __proto__ and constructor keys in arguments as plain data', async () => {
    const before = svc.requests.length;
    const raw =
      '{"jsonrpc":"2.0","id":"proto","method":"tools/call","params":{"name":"echo","arguments":' + '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"normal":1}}}';
    const answer = await mcpPost(gw, ROUTE, raw);
    expect(answer.status).toBe(200);
    const result = toolResult(answer);
    expect(result.isError).not.toBe(true);
    const received = svc.requests[before]?.body as { arguments: Record<string, unknown> };
    expect(Object.hasOwn(received.arguments, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(received.arguments, '__proto__')?.value).toEqual({ polluted: true });
    expect(Object.getOwnPropertyDescriptor(received.arguments, 'constructor')?.value).toEqual({ prototype: { polluted: true } });
    expect(received.arguments['normal']).toBe(1);
    // And back to the client, still as an own property.
    const echoed = (result.structuredContent as { arguments: Record<string, unknown> }).arguments;
    expect(Object.hasOwn(echoed, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  const envelopes: Array<[string, number, number, string | number | null, string]> = [
    ['jsonrpc "1.0"', 400, -32600, 1, '{"jsonrpc":"1.0","id":1,"method":"tools/list"}'],
    ['jsonrpc a number', 400, -32600, 1, '{"jsonrpc":2,"id":1,"method":"tools/list"}'],
    ['jsonrpc missing', 400, -32600, 1, '{"id":1,"method":"tools/list"}'],
    ['method a number', 400, -32600, 1, '{"jsonrpc":"2.0","id":1,"method":5}'],
    ['method an object', 400, -32600, 1, '{"jsonrpc":"2.0","id":1,"method":{"name":"tools/list"}}'],
    ['method empty', 400, -32600, 1, '{"jsonrpc":"2.0","id":1,"method":""}'],
    ['method missing', 400, -32600, 1, '{"jsonrpc":"2.0","id":1}'],
    ['id an object', 400, -32600, null, '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}'],
    ['id a boolean', 400, -32600, null, '{"jsonrpc":"2.0","id":true,"method":"tools/list"}'],
    ['id an array', 400, -32600, null, '{"jsonrpc":"2.0","id":[1],"method":"tools/list"}'],
    ['id null', 400, -32600, null, '{"jsonrpc":"2.0","id":null,"method":"tools/list"}'],
    // An id longer than a valid one (1 KiB) is not echoed back.
    ['id a 2000-char string', 400, -32600, null, `{"jsonrpc":"2.0","id":"${'i'.repeat(2000)}","method":"tools/list"}`],
    ['params a string', 200, -32602, 1, '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}'],
    ['params an array', 200, -32602, 1, '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}'],
    ['params null', 200, -32602, 1, '{"jsonrpc":"2.0","id":1,"method":"ping","params":null}'],
    ['initialize protocolVersion a number', 200, -32602, 1, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}'],
    ['logging/setLevel with a bad level', 200, -32602, 1, '{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}'],
    ['an unknown method', 200, -32601, 1, '{"jsonrpc":"2.0","id":1,"method":"resources/list"}'],
    ['the body null', 400, -32600, null, 'null'],
    ['the body a number', 400, -32600, null, '42'],
    ['the body a string', 400, -32600, null, '"tools/list"'],
    ['the body true', 400, -32600, null, 'true'],
  ];

  it.each(envelopes)('%s → HTTP %i, code %i', async (_what, status, code, id, body) => {
    const answer = await mcpPost(gw, ROUTE, body);
    expect(answer.status).toBe(status);
    expect(rpcBody(answer).id).toBe(id);
    expect(rpcError(answer).code).toBe(code);
  });

  it('a client JSON-RPC response (no method) is acknowledged with 202 and no body', async () => {
    const answer = await mcpPost(gw, ROUTE, '{"jsonrpc":"2.0","id":1,"result":{}}');
    expect(answer.status).toBe(202);
    expect(answer.text).toBe('');
  });

  it('a notification gets 202 with an empty body', async () => {
    for (const method of ['notifications/initialized', 'notifications/cancelled', 'notifications/whatever']) {
      const answer = await mcpPost(gw, ROUTE, { jsonrpc: '2.0', method });
      expect(answer.status).toBe(202);
      expect(answer.text).toBe('');
    }
  });
});
