import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CallOutcome } from '../../../../src/shared/calls.js';
import { ToolServiceClient, type UpstreamResult } from '../../../../src/workers/shard/upstream.js';
import { call, errorText, MAX_RESPONSE_BYTES, SERVICE_ID, SLOW_TIMEOUT_MS, startHarness, type Harness } from './harness.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.svc.requests.length = 0;
});

const run = (args: unknown = {}) => call(h, { name: 'run', arguments: args }, 11);

describe('Tool Service JSON answers', () => {
  it('passes a CallToolResult through', async () => {
    const result = { content: [{ type: 'text', text: 'found 2 ✓' }], structuredContent: { hits: 2 } };
    h.svc.setBehavior('/tools/run', { kind: 'json', body: result });
    const c = await run();
    expect(c.answer.status).toBe(200);
    expect(c.answer.outcome).toBe(CallOutcome.Ok);
    expect(c.answer.upstream).toEqual({ serviceId: SERVICE_ID, cause: 'ok' });
    expect(c.body).toEqual({ jsonrpc: '2.0', id: 11, result });
  });

  it('passes a Tool Service isError result through as a tool error', async () => {
    const result = { content: [{ type: 'text', text: 'no such employee' }], isError: true };
    h.svc.setBehavior('/tools/run', { kind: 'json', body: result });
    const c = await run();
    expect(c.body.result).toEqual(result);
    expect(c.answer.outcome).toBe(CallOutcome.ToolError);
    expect(c.answer.upstream?.cause).toBe('tool_error');
  });

  it('wraps a plain object as text + structuredContent', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', body: { sum: 42.5 } });
    const c = await run();
    expect(c.body.result).toEqual({ content: [{ type: 'text', text: '{"sum":42.5}' }], structuredContent: { sum: 42.5 } });
    expect(c.answer.outcome).toBe(CallOutcome.Ok);
  });

  it('wraps arrays and numbers as text only', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', body: [1, 'two'] });
    expect((await run()).body.result).toEqual({ content: [{ type: 'text', text: '[1,"two"]' }] });
    h.svc.setBehavior('/tools/run', { kind: 'json', body: 7 });
    expect((await run()).body.result).toEqual({ content: [{ type: 'text', text: '7' }] });
  });

  it('refuses an invalid content block', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', body: { content: [{ type: 'text', text: 'ok' }, { type: 'text', text: 5 }] } });
    const c = await run();
    expect(errorText(c)).toBe('Tool Service answer is malformed: content block 1 (type "text") is not a valid MCP content block');
    expect(c.answer.outcome).toBe(CallOutcome.ToolError);
  });

  it('refuses a body that is not JSON', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'raw', contentType: 'application/json', body: '{"content": [' });
    const c = await run();
    expect(errorText(c)).toBe('Tool Service answer is malformed: the body is not valid JSON');
    expect(c.answer.upstream?.cause).toBe('malformed');
  });

  it('refuses a body over tools.maxResponseBytes', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', body: { blob: 'x'.repeat(MAX_RESPONSE_BYTES) } });
    const c = await run();
    expect(errorText(c)).toBe(`Tool Service answer is larger than tools.maxResponseBytes (${MAX_RESPONSE_BYTES})`);
    expect(c.answer.upstream?.cause).toBe('too_large');
  });
});

describe('Tool Service NDJSON answers', () => {
  const progress = { type: 'progress', progress: 1, total: 2, message: 'half' };
  const log = { type: 'log', level: 'info', data: { step: 1 } };

  it('waits through progress and log frames for the result frame', async () => {
    const result = { content: [{ type: 'text', text: 'counted to 2' }], structuredContent: { count: 2 } };
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: [progress, log, { type: 'result', result }] });
    const c = await run();
    expect(c.body).toEqual({ jsonrpc: '2.0', id: 11, result });
    expect(c.answer.outcome).toBe(CallOutcome.Ok);
    expect(c.answer.upstream?.cause).toBe('ok');
  });

  it('turns an error frame into a tool error with its message', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: [progress, { type: 'error', message: 'quota exhausted' }] });
    const c = await run();
    expect(errorText(c)).toBe('Tool Service reported an error: quota exhausted');
    expect(c.answer.outcome).toBe(CallOutcome.ToolError);
  });

  it('refuses a stream that ends without a result frame', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: [progress, log] });
    const c = await run();
    expect(errorText(c)).toBe('Tool Service stream is malformed: it ended without a result frame');
    expect(c.answer.upstream?.cause).toBe('malformed');
  });

  it('refuses a line that is not JSON', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: ['{"type":"progress","progress":1}', '{"type":"res'] });
    expect(errorText(await run())).toBe('Tool Service stream is malformed: a line is not valid JSON');
  });

  it('refuses a result frame without a result object, an invalid block and an unknown frame type', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: [{ type: 'result', result: [1] }] });
    expect(errorText(await run())).toBe('Tool Service stream is malformed: the result frame carries no result object');
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: [{ type: 'result', result: { content: [{ type: 'blob' }] } }] });
    expect(errorText(await run())).toBe('Tool Service answer is malformed: content block 0 (type "blob") is not a valid MCP content block');
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines: [{ type: 'partial' }] });
    expect(errorText(await run())).toBe('Tool Service stream is malformed: unknown frame type "partial"');
  });

  it('refuses a stream over tools.maxResponseBytes', async () => {
    const lines = Array.from({ length: 50 }, (_, i) => ({ type: 'log', level: 'info', data: `${i} ${'y'.repeat(200)}` }));
    h.svc.setBehavior('/tools/run', { kind: 'ndjson', lines });
    const c = await run();
    expect(errorText(c)).toBe(`Tool Service answer is larger than tools.maxResponseBytes (${MAX_RESPONSE_BYTES})`);
    expect(c.answer.upstream?.cause).toBe('too_large');
  });
});

describe('Tool Service failures', () => {
  it('names the status of a non-2xx answer', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', status: 500, body: { error: 'database down' } });
    const c = await run();
    expect(errorText(c)).toBe('Tool Service failed with HTTP 500: {"error":"database down"}');
    expect(c.answer.status).toBe(200);
    expect(c.answer.outcome).toBe(CallOutcome.ToolError);
    expect(c.answer.upstream?.cause).toBe('status');
  });

  it.each([401, 403])('says permission denied for %i', async (status) => {
    h.svc.setBehavior('/tools/run', { kind: 'raw', status, contentType: 'text/plain', body: 'token expired' });
    expect(errorText(await run())).toBe(`Tool Service refused the call: permission denied (HTTP ${status}): token expired`);
  });

  it('names 404 for an execution path the service does not serve', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', status: 404, body: {} });
    expect(errorText(await run())).toBe('Tool Service failed with HTTP 404: {}');
  });

  it('times out at the tool timeout from the manifest', async () => {
    h.svc.setBehavior('/tools/slow', { kind: 'delay', ms: 20_000, then: { kind: 'json', body: { late: true } } });
    const c = await call(h, { name: 'slow', arguments: {} });
    expect(errorText(c)).toBe(`Tool Service did not answer within ${SLOW_TIMEOUT_MS} ms (timeout)`);
    expect(c.answer.upstream?.cause).toBe('timeout');
    expect(h.svc.requests).toHaveLength(1);
  });

  it('times out a stream that starts and then stalls', async () => {
    h.svc.setBehavior('/tools/slow', { kind: 'ndjson', delayMs: 20_000, lines: [{ type: 'progress', progress: 1 }, { type: 'result', result: { content: [] } }] });
    const c = await call(h, { name: 'slow', arguments: {} });
    expect(errorText(c)).toBe(`Tool Service did not answer within ${SLOW_TIMEOUT_MS} ms (timeout)`);
    expect(c.answer.upstream?.cause).toBe('timeout');
  });

  it('reports a refused connection', async () => {
    const c = await call(h, { name: 'offline_tool', arguments: {} });
    expect(errorText(c)).toBe('Tool Service unreachable: connection refused (ECONNREFUSED)');
    expect(c.answer.upstream).toEqual({ serviceId: 'offline', cause: 'unreachable' });
  });

  it('reports a connection destroyed before the answer', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'destroy' });
    const c = await run();
    expect(errorText(c)).toMatch(/^Tool Service unreachable: connection closed before the answer was complete \((UND_ERR_SOCKET|ECONNRESET)\)$/);
    expect(c.answer.upstream?.cause).toBe('unreachable');
  });

  it('keeps working on the same pool after failures', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', body: { content: [{ type: 'text', text: 'fine' }] } });
    expect((await run()).body.result).toEqual({ content: [{ type: 'text', text: 'fine' }] });
  });
});

describe('ToolServiceClient lifecycle', () => {
  it('refuses calls once closed, without calling the Tool Service; close is idempotent', async () => {
    const client = new ToolServiceClient({ connectionsPerService: 1, maxResponseBytes: 1024 });
    await client.close();
    await client.close();
    const tool = h.routes.get('core')?.resolve('run');
    if (tool?.kind !== 'tool') throw new Error('run should resolve');
    const r = await new Promise<UpstreamResult>((onDone) =>
      client.call({ tool: tool.tool, argumentsJson: '{}', routeKey: 'core', requestId: 'r', sessionId: '', traceparent: '', onFrame: null, onStreamStart: null, onDone }),
    );
    expect(r).toMatchObject({ isError: true, cause: 'unreachable' });
    expect(JSON.parse(r.json)).toEqual({ content: [{ type: 'text', text: 'gateway is shutting down; the tool was not called' }], isError: true });
    expect(h.svc.requests).toHaveLength(0);
  });
});
