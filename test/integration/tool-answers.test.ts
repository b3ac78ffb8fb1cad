/**
 * Every Tool Service answer shape and failure of SPEC §7 ("Tool execution"),
 * through a real gateway over HTTP. A failure is never a protocol error: HTTP
 * 200, `result.isError: true`, a text naming the cause; and the gateway keeps
 * serving afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService, type ToolDef } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, listToolNames, resultText, rpcBody, toolResult } from '../helpers/mcp.js';
import { freePort } from '../helpers/ports.js';

const ROUTE = 'core';
const MAX_RESPONSE_BYTES = 4096;
/** `tools.maxTimeoutMs` of the second gateway, which caps a manifest asking for much longer. */
const MAX_TIMEOUT_MS = 300;

/** A CallToolResult whose JSON text is exactly `bytes` long (ASCII only). */
function resultOfSize(bytes: number): { content: Array<{ type: 'text'; text: string }> } {
  const base = JSON.stringify({ content: [{ type: 'text', text: '' }] }).length;
  return { content: [{ type: 'text', text: 'x'.repeat(bytes - base) }] };
}

const RICH_RESULT = {
  content: [
    { type: 'text', text: 'hello ✓' },
    { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
    { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav', annotations: { audience: ['user'] } },
    { type: 'resource', resource: { uri: 'file:///report.txt', text: 'report body', mimeType: 'text/plain' } },
    { type: 'resource', resource: { uri: 'file:///blob.bin', blob: 'AAEC' } },
    { type: 'resource_link', uri: 'https://example.test/doc', name: 'doc' },
  ],
  structuredContent: { count: 3, items: ['a', 'b', 'c'] },
  _meta: { 'example.test/trace': 'abc' },
};

describe('tools/call: Tool Service answer shapes and failures (SPEC §7)', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  /** Same route and Tool Service, with `tools.maxTimeoutMs` small (kept apart so other calls have the default deadline). */
  let capped: Gateway;
  let deadPort: number;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    deadPort = await freePort();
    const tools: Array<Partial<ToolDef> & { name: string }> = [
      { name: 'ok' },
      { name: 'rich' },
      { name: 'tool_error' },
      { name: 'plain_object' },
      { name: 'plain_array' },
      { name: 'plain_string' },
      { name: 'nd_result' },
      { name: 'nd_error' },
      { name: 'nd_no_result' },
      { name: 'nd_bad_line' },
      { name: 'status_500' },
      { name: 'status_401' },
      { name: 'status_403' },
      { name: 'slow_small_timeout', timeoutMs: 100 },
      { name: 'slow_capped', timeoutMs: 600_000 },
      { name: 'refused', execution: { url: `http://127.0.0.1:${deadPort}/tools/refused` } },
      { name: 'destroyed' },
      { name: 'broken_json' },
      { name: 'bad_block' },
      { name: 'size_edge' },
      { name: 'size_over' },
      { name: 'nd_over' },
    ];
    svc.setManifest(manifestFor(tools));
    svc.setBehavior('/tools/ok', { kind: 'echo' });
    svc.setBehavior('/tools/rich', { kind: 'json', body: RICH_RESULT });
    svc.setBehavior('/tools/tool_error', { kind: 'json', body: { content: [{ type: 'text', text: 'no such employee' }], isError: true } });
    svc.setBehavior('/tools/plain_object', { kind: 'json', body: { a: 1, nested: { b: [1, 2] } } });
    svc.setBehavior('/tools/plain_array', { kind: 'json', body: [1, 2, 3] });
    svc.setBehavior('/tools/plain_string', { kind: 'json', body: 'just text' });
    svc.setBehavior('/tools/nd_result', {
      kind: 'ndjson',
      lines: [
        { type: 'progress', progress: 1, total: 2, message: 'half' },
        { type: 'log', level: 'info', data: { step: 1 } },
        { type: 'progress', progress: 2, total: 2 },
        { type: 'result', result: { content: [{ type: 'text', text: 'streamed done' }], structuredContent: { n: 2 } } },
      ],
    });
    svc.setBehavior('/tools/nd_error', {
      kind: 'ndjson',
      lines: [
        { type: 'progress', progress: 1 },
        { type: 'error', message: 'database is down' },
      ],
    });
    svc.setBehavior('/tools/nd_no_result', {
      kind: 'ndjson',
      lines: [
        { type: 'progress', progress: 1 },
        { type: 'log', level: 'info', data: 'still working' },
      ],
    });
    svc.setBehavior('/tools/nd_bad_line', { kind: 'ndjson', lines: ['{"type":"progress","progress":1}', 'this is not json'] });
    svc.setBehavior('/tools/status_500', { kind: 'json', status: 500, body: { error: 'boom' } });
    svc.setBehavior('/tools/status_401', { kind: 'json', status: 401, body: { error: 'who are you' } });
    svc.setBehavior('/tools/status_403', { kind: 'json', status: 403, body: { error: 'not yours' } });
    svc.setBehavior('/tools/slow_small_timeout', { kind: 'delay', ms: 10_000, then: { kind: 'echo' } });
    svc.setBehavior('/tools/slow_capped', { kind: 'delay', ms: 20_000, then: { kind: 'echo' } });
    svc.setBehavior('/tools/destroyed', { kind: 'destroy' });
    svc.setBehavior('/tools/broken_json', { kind: 'raw', contentType: 'application/json', body: '{"content": [{"type":"text",' });
    svc.setBehavior('/tools/bad_block', {
      kind: 'json',
      body: {
        content: [
          { type: 'text', text: 'ok' },
          { type: 'image', mimeType: 'image/png' },
        ],
      },
    });
    svc.setBehavior('/tools/size_edge', { kind: 'json', body: resultOfSize(MAX_RESPONSE_BYTES) });
    svc.setBehavior('/tools/size_over', { kind: 'json', body: resultOfSize(MAX_RESPONSE_BYTES + 1) });
    svc.setBehavior('/tools/nd_over', {
      kind: 'ndjson',
      lines: Array.from({ length: 20 }, (_, i) => ({ type: 'log', level: 'info', data: `${i}:${'y'.repeat(400)}` })),
    });
    const routes = { [ROUTE]: [{ id: 'svc', baseUrl: svc.url }] };
    const allowedExecutionOrigins = [`http://127.0.0.1:${deadPort}`];
    [gw, capped] = await Promise.all([
      startTestGateway({ catalog: { static: { routes } }, tools: { maxResponseBytes: MAX_RESPONSE_BYTES, allowedExecutionOrigins } }),
      startTestGateway({ catalog: { static: { routes } }, tools: { defaultTimeoutMs: MAX_TIMEOUT_MS, maxTimeoutMs: MAX_TIMEOUT_MS, allowedExecutionOrigins } }),
    ]);
  });
  afterAll(async () => {
    await gw?.close();
    await capped?.close();
    await svc?.close();
  });

  /** The gateway still answers a healthy call after whatever came before. */
  async function expectStillServing(): Promise<void> {
    const next = await callTool(gw, ROUTE, 'ok', { after: true }, { id: 'next' });
    expect(next.status).toBe(200);
    expect(rpcBody(next).id).toBe('next');
    const result = toolResult(next);
    expect(result.isError).not.toBe(true);
    expect((result.structuredContent as { arguments: unknown }).arguments).toEqual({ after: true });
  }

  it('passes a CallToolResult through unchanged (text, image, audio, resource, resource_link, structuredContent, _meta)', async () => {
    const answer = await callTool(gw, ROUTE, 'rich', {}, { id: 'rich-1' });
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe('rich-1');
    expect(toolResult(answer)).toEqual(RICH_RESULT);
  });

  it("passes the tool's own isError: true through as a result, not a protocol error", async () => {
    const answer = await callTool(gw, ROUTE, 'tool_error');
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).error).toBeUndefined();
    expect(toolResult(answer)).toEqual({ content: [{ type: 'text', text: 'no such employee' }], isError: true });
  });

  it('wraps a plain JSON object as text + structuredContent', async () => {
    const answer = await callTool(gw, ROUTE, 'plain_object');
    expect(answer.status).toBe(200);
    const result = toolResult(answer);
    expect(result.isError).not.toBe(true);
    expect(result.content).toHaveLength(1);
    expect(result.content[0]?.type).toBe('text');
    expect(JSON.parse(String(result.content[0]?.['text']))).toEqual({ a: 1, nested: { b: [1, 2] } });
    expect(result.structuredContent).toEqual({ a: 1, nested: { b: [1, 2] } });
  });

  it.each([
    ['plain_array', [1, 2, 3]],
    ['plain_string', 'just text'],
  ])('wraps a non-object JSON value (%s) as text without structuredContent', async (tool, value) => {
    const result = toolResult(await callTool(gw, ROUTE, tool));
    expect(result.isError).not.toBe(true);
    expect(result.content).toHaveLength(1);
    expect(JSON.parse(String(result.content[0]?.['text']))).toEqual(value);
    expect(result.structuredContent).toBeUndefined();
  });

  it('reads an NDJSON stream of progress and log frames to its result frame', async () => {
    const answer = await callTool(gw, ROUTE, 'nd_result', {}, { id: 42 });
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe(42);
    expect(toolResult(answer)).toEqual({ content: [{ type: 'text', text: 'streamed done' }], structuredContent: { n: 2 } });
  });

  it('answers the exact maxResponseBytes body (edge) normally', async () => {
    const answer = await callTool(gw, ROUTE, 'size_edge');
    expect(answer.status).toBe(200);
    const result = toolResult(answer);
    expect(result.isError).not.toBe(true);
    expect(result).toEqual(resultOfSize(MAX_RESPONSE_BYTES));
  });

  const failures: Array<[string, RegExp]> = [
    ['nd_error', /reported an error.*database is down/],
    ['nd_no_result', /ended without a result frame/],
    ['nd_bad_line', /malformed.*not valid JSON/],
    ['status_500', /HTTP 500/],
    ['status_401', /permission denied.*401/],
    ['status_403', /permission denied.*403/],
    ['slow_small_timeout', /within 100 ms.*timeout/],
    ['refused', /unreachable.*connection refused/],
    ['destroyed', /unreachable.*connection closed/],
    ['broken_json', /malformed.*not valid JSON/],
    ['bad_block', /malformed.*content block 1/],
    ['size_over', new RegExp(`larger than tools.maxResponseBytes \\(${MAX_RESPONSE_BYTES}\\)`)],
    ['nd_over', new RegExp(`larger than tools.maxResponseBytes \\(${MAX_RESPONSE_BYTES}\\)`)],
  ];

  it.each(failures)('%s → HTTP 200, isError naming the cause, and the gateway keeps serving', async (tool, cause) => {
    const answer = await callTool(gw, ROUTE, tool, {}, { id: `call-${tool}` });
    expect(answer.status).toBe(200);
    const body = rpcBody(answer);
    expect(body.id).toBe(`call-${tool}`);
    expect(body.error).toBeUndefined();
    const result = toolResult(answer);
    expect(result.isError).toBe(true);
    expect(result.content[0]?.type).toBe('text');
    expect(resultText(result)).toMatch(cause);
    await expectStillServing();
  });

  it('caps a manifest timeoutMs (600000) at tools.maxTimeoutMs, and keeps serving', async () => {
    const answer = await callTool(capped, ROUTE, 'slow_capped', {}, { id: 'capped' });
    expect(answer.status).toBe(200);
    expect(rpcBody(answer).id).toBe('capped');
    const result = toolResult(answer);
    expect(result.isError).toBe(true);
    expect(resultText(result)).toMatch(new RegExp(`within ${MAX_TIMEOUT_MS} ms.*timeout`));
    // Only tools/list here: every call on this gateway has the short deadline, which a loaded machine could hit.
    expect(await listToolNames(capped, ROUTE)).toContain('ok');
  });

  it('reports a 500 with a snippet of what the Tool Service said', async () => {
    const text = resultText(toolResult(await callTool(gw, ROUTE, 'status_500')));
    expect(text).toContain('boom');
  });
});
