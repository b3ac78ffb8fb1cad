import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Socket } from 'node:net';
import type { CatalogTool } from '../../../../src/shared/catalog/types.js';
import { CallOutcome } from '../../../../src/shared/calls.js';
import type { StreamFrame } from '../../../../src/workers/shard/notification-forwarder.js';
import { ToolServiceClient, type UpstreamCall, type UpstreamResult } from '../../../../src/workers/shard/upstream.js';
import { eventually } from '../../../helpers/eventually.js';
import { okResponse, startRawServer, type RawServer } from './http1/raw-server.js';
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
    h.svc.setBehavior('/tools/run', {
      kind: 'json',
      body: {
        content: [
          { type: 'text', text: 'ok' },
          { type: 'text', text: 5 },
        ],
      },
    });
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
    h.svc.setBehavior('/tools/slow', {
      kind: 'ndjson',
      delayMs: 20_000,
      lines: [
        { type: 'progress', progress: 1 },
        { type: 'result', result: { content: [] } },
      ],
    });
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
    expect(errorText(c)).toMatch(/^Tool Service unreachable: connection closed before the answer was complete \((RESET|ECONNRESET)\)$/);
    expect(c.answer.upstream?.cause).toBe('unreachable');
  });

  it('keeps working on the same pool after failures', async () => {
    h.svc.setBehavior('/tools/run', { kind: 'json', body: { content: [{ type: 'text', text: 'fine' }] } });
    expect((await run()).body.result).toEqual({ content: [{ type: 'text', text: 'fine' }] });
  });
});

/** A pooled call object as the shard keeps them: reused call after call, results recorded. */
class PooledCall implements UpstreamCall {
  tool!: CatalogTool;
  argumentsJson = '{}';
  routeKey = 'core';
  requestId = 'req-1';
  sessionId = '';
  traceparent = '';
  tracestate = '';
  baggage = '';
  clientCapabilitiesJson = '';
  inputResponsesJson = '';
  requestStateJson = '';
  onFrame: ((frame: StreamFrame) => void) | null = null;
  onStreamStart: (() => void) | null = null;
  results: UpstreamResult[] = [];
  private waiter: (() => void) | null = null;
  onDone(result: UpstreamResult): void {
    this.results.push(result);
    this.waiter?.();
  }
  /** Runs one call on `client` and waits for its onDone. */
  run(client: ToolServiceClient): Promise<UpstreamResult> {
    const before = this.results.length;
    const done = new Promise<void>((resolve) => (this.waiter = resolve));
    client.call(this);
    return done.then(() => this.results[before] as UpstreamResult);
  }
}

function toolAt(origin: string, name = 'raw_tool', timeoutMs = 5_000): CatalogTool {
  return { name, version: '1.0.0', active: true, serviceId: 'raw', inputSchema: { type: 'object' }, timeoutMs, executionUrl: `${origin}/tools/${name}` };
}

const text = (r: UpstreamResult): string => (JSON.parse(r.json) as { content: Array<{ text: string }> }).content[0]?.text ?? '';

describe('ToolServiceClient: the callback API', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  function client(options: Partial<ConstructorParameters<typeof ToolServiceClient>[0]> = {}): ToolServiceClient {
    const c = new ToolServiceClient({ connectionsPerService: 4, maxResponseBytes: MAX_RESPONSE_BYTES, ...options });
    cleanups.push(() => c.destroy());
    return c;
  }
  async function raw(answer: Parameters<typeof startRawServer>[0]): Promise<RawServer> {
    const s = await startRawServer(answer);
    cleanups.push(() => s.close());
    return s;
  }

  it('sends one request with the contract headers and body, and calls onDone once, never inside call()', async () => {
    const s = await raw((socket) => socket.write(okResponse('{"content":[{"type":"text","text":"hi ✓"}]}').replace('text/plain', 'application/json')));
    const c = client();
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin, 'héllo_tool'.replace('é', 'e'));
    pooled.argumentsJson = '{"q":"ünïcode ✓"}';
    pooled.sessionId = 'sess-9';
    pooled.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    c.call(pooled);
    expect(pooled.results).toHaveLength(0);
    await eventually(() => expect(pooled.results).toHaveLength(1));
    expect(pooled.results[0]).toMatchObject({ json: '{"content":[{"type":"text","text":"hi ✓"}]}', isError: false, cause: 'ok' });
    const [received] = s.requests;
    const lines = received?.head.split('\r\n') ?? [];
    expect(lines[0]).toBe('POST /tools/hello_tool HTTP/1.1');
    expect(lines.slice(1).sort()).toEqual(
      [
        `host: 127.0.0.1:${s.port}`,
        'content-type: application/json',
        'accept: application/json, application/x-ndjson',
        'x-request-id: req-1',
        'x-mcp-route: core',
        'x-mcp-session-id: sess-9',
        'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        `content-length: ${Buffer.byteLength(received?.body ?? '')}`,
      ].sort(),
    );
    expect(JSON.parse(received?.body ?? '')).toEqual({ name: 'hello_tool', version: '1.0.0', arguments: { q: 'ünïcode ✓' } });
    // The same pooled object again, without optional headers: reused, one connection.
    pooled.sessionId = '';
    pooled.traceparent = '';
    await pooled.run(c);
    expect(s.requests[1]?.head).not.toMatch(/x-mcp-session-id|traceparent/);
    expect(s.connections).toBe(1);
  });

  it('does not call the Tool Service with a context value that could split the header block', async () => {
    const s = await raw((socket) => socket.write(okResponse('{}')));
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    pooled.traceparent = 'x\r\nx-injected: 1';
    const r = await pooled.run(client());
    expect(r).toMatchObject({ isError: true, cause: 'unreachable' });
    expect(text(r)).toBe('Tool Service not called: a context header value is not printable ASCII');
    expect(s.requests).toHaveLength(0);
  });

  it('cancel(): onDone gets `cancelled` at once, the upstream socket is closed, nothing arrives later', async () => {
    const s = await raw(() => {});
    const c = client();
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    c.call(pooled);
    await eventually(() => expect(s.requests).toHaveLength(1));
    c.cancel(pooled);
    expect(pooled.results).toHaveLength(1);
    expect(pooled.results[0]).toMatchObject({ isError: true, cause: 'cancelled' });
    expect(text(pooled.results[0] as UpstreamResult)).toBe('the call was cancelled by the client');
    await eventually(() => expect(s.closedByClient).toBe(1));
    c.cancel(pooled);
    expect(pooled.results).toHaveLength(1);
  });

  it('reads only a snippet of an error body and closes the socket (never a 200 MiB body to the end)', async () => {
    let written = 0;
    const s = await raw((socket) => {
      const total = 200 * 1024 * 1024;
      socket.write(`HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: ${total}\r\n\r\n`);
      const block = Buffer.alloc(64 * 1024, 'e');
      const pump = (): void => {
        while (written < total && !socket.destroyed) {
          written += block.length;
          if (!socket.write(block)) return void socket.once('drain', pump);
        }
      };
      pump();
    });
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    const r = await pooled.run(client({ maxResponseBytes: 1024 * 1024 * 1024 }));
    expect(text(r)).toBe(`Tool Service failed with HTTP 500: ${'e'.repeat(200)}`);
    expect(r.cause).toBe('status');
    await eventually(() => expect(s.closedByClient).toBe(1));
    expect(written).toBeLessThan(32 * 1024 * 1024);
  });

  it('refuses an answer whose Content-Length is over tools.maxResponseBytes without reading it', async () => {
    const s = await raw((socket) => socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${MAX_RESPONSE_BYTES + 1}\r\n\r\n`));
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    const r = await pooled.run(client());
    expect(r).toMatchObject({ cause: 'too_large' });
    expect(text(r)).toBe(`Tool Service answer is larger than tools.maxResponseBytes (${MAX_RESPONSE_BYTES})`);
  });

  it('turns an answer that breaks HTTP/1.1 framing into a malformed result', async () => {
    const s = await raw((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'));
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    const r = await pooled.run(client());
    expect(r.cause).toBe('malformed');
    expect(text(r)).toBe('Tool Service answer is malformed: not valid HTTP/1.1: both Transfer-Encoding and Content-Length (RFC 9112 §6.3) (BAD_RESPONSE)');
  });

  it('keeps the connection after an NDJSON result frame when the stream ends in the same read', async () => {
    const s = await raw((socket) => {
      const body = '{"type":"progress","progress":1}\n{"type":"result","result":{"content":[]}}\n';
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    });
    const c = client();
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    const frames: StreamFrame[] = [];
    let started = 0;
    pooled.onFrame = (f) => frames.push(f);
    pooled.onStreamStart = () => started++;
    expect(await pooled.run(c)).toEqual({ json: '{"content":[]}', isError: false, cause: 'ok', value: { content: [] } });
    expect(await pooled.run(c)).toMatchObject({ cause: 'ok' });
    expect(frames).toEqual([
      { type: 'progress', progress: 1 },
      { type: 'progress', progress: 1 },
    ]);
    expect(started).toBe(2);
    expect(s.connections).toBe(1);
  });

  it('refuses a call as busy when every connection is taken and the wait queue is full; the tool is not called', async () => {
    const held: Socket[] = [];
    const s = await raw((socket) => held.push(socket));
    const c = client({ connectionsPerService: 1, maxQueuedCallsPerService: 1 });
    const calls = [new PooledCall(), new PooledCall(), new PooledCall()];
    for (const p of calls) {
      p.tool = toolAt(s.origin);
      c.call(p);
    }
    await eventually(() => expect(calls[2]?.results).toHaveLength(1));
    expect(calls[2]?.results[0]?.cause).toBe('busy');
    expect(text(calls[2]?.results[0] as UpstreamResult)).toBe('Tool Service busy: all 1 connections are in use and 1 calls wait (tools.maxQueuedCallsPerService); the tool was not called');
    await eventually(() => expect(held).toHaveLength(1));
    held[0]?.write(okResponse('{"a":1}') + okResponse('{"a":2}'));
    // The second answer in the same write is never taken for the queued call: that one gets its own request.
    await eventually(() => expect(calls[0]?.results).toHaveLength(1));
    await eventually(() => expect(s.requests).toHaveLength(2));
    held[held.length - 1]?.write(okResponse('{"a":3}'));
    await eventually(() => expect(calls[1]?.results).toHaveLength(1));
    expect(calls[1]?.results[0]?.json).toContain('{\\"a\\":3}');
  });

  it('close() is graceful and idempotent: calls after it are refused without reaching the Tool Service', async () => {
    const closed = new ToolServiceClient({ connectionsPerService: 1, maxResponseBytes: 1024 });
    await closed.close();
    await closed.close();
    const s = await raw((socket) => socket.write(okResponse('{}')));
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    const r = await pooled.run(closed);
    expect(r).toMatchObject({ isError: true, cause: 'unreachable' });
    expect(text(r)).toBe('gateway is shutting down; the tool was not called');
    expect(s.requests).toHaveLength(0);
  });

  it('destroy() ends in-flight calls at once, saying they may have run', async () => {
    const s = await raw(() => {});
    const c = client();
    const pooled = new PooledCall();
    pooled.tool = toolAt(s.origin);
    c.call(pooled);
    await eventually(() => expect(s.requests).toHaveLength(1));
    c.destroy();
    expect(pooled.results).toHaveLength(1);
    expect(text(pooled.results[0] as UpstreamResult)).toBe('gateway is shutting down; the call was abandoned');
  });
});
