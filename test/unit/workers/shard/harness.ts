/**
 * Shared set-up for the shard's tool-call tests: a real fixture Tool Service,
 * a route runtime built from its manifest through the real snapshot encoding,
 * and the real ToolServiceClient (lean HTTP/1.1 client) behind the Promise
 * adapter today's `handleToolCall` still takes.
 */
import { createServer } from 'node:net';
import { validateManifest } from '../../../../src/shared/catalog/manifest.js';
import { mergeRoute, type ServiceTools } from '../../../../src/shared/catalog/merge.js';
import { decodeSnapshot, encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import type { CallContext } from '../../../../src/shared/threads/frames.js';
import { RouteRuntime } from '../../../../src/workers/shard/route-runtime.js';
import { handleToolCall, type CallAnswer } from '../../../../src/workers/shard/tool-call.js';
import { ToolServiceClient } from '../../../../src/workers/shard/upstream.js';
import { PromiseToolCaller } from '../../../../src/workers/shard/upstream-legacy.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../../fixtures/tool-service.js';

export const ROUTE = 'core';
export const SERVICE_ID = 'fixture';
export const MAX_RESPONSE_BYTES = 4096;
export const SLOW_TIMEOUT_MS = 150;

export const SEARCH_SCHEMA = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
    filters: { type: 'object', properties: { teams: { type: 'array', items: { type: 'string' } } } },
  },
  required: ['query'],
  additionalProperties: false,
};

export interface Harness {
  svc: FixtureToolService;
  runtime: RouteRuntime;
  client: ToolServiceClient;
  /** What today's `handleToolCall` takes (deprecated adapter; removed with it at integration). */
  caller: PromiseToolCaller;
  close(): Promise<void>;
}

/** An origin on which nothing listens (a port that was just released). */
export async function closedOrigin(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export async function startHarness(): Promise<Harness> {
  const svc = await startFixtureToolService();
  const offline = await closedOrigin();
  const policy = { defaultTimeoutMs: 10_000, maxTimeoutMs: 20_000, allowedExecutionOrigins: [] };
  const manifest = manifestFor(
    [
      { name: 'run' },
      { name: 'search', inputSchema: SEARCH_SCHEMA },
      { name: 'slow', timeoutMs: SLOW_TIMEOUT_MS },
      { name: 'twin', version: '1.0.0' },
      { name: 'twin', version: '2.0.0' },
      { name: 'retired', active: false },
    ],
    SERVICE_ID,
  );
  svc.setManifest(manifest);
  const services: ServiceTools[] = [];
  for (const [id, baseUrl, m] of [
    [SERVICE_ID, svc.url, manifest],
    ['offline', offline, manifestFor([{ name: 'offline_tool' }], 'offline')],
  ] as const) {
    const result = validateManifest(m, { id, baseUrl }, policy);
    if (!result.ok) throw new Error(result.problems.join('; '));
    services.push({ serviceId: id, tools: result.tools });
  }
  const catalog = mergeRoute(ROUTE, services, { maxToolsPerRoute: 50, source: 'static' });
  const runtime = new RouteRuntime(decodeSnapshot(encodeSnapshot(catalog)));
  const client = new ToolServiceClient({ connectionsPerService: 4, maxResponseBytes: MAX_RESPONSE_BYTES });
  return {
    svc,
    runtime,
    client,
    caller: new PromiseToolCaller(client),
    close: async () => {
      await client.close();
      await svc.close();
    },
  };
}

export const noCtx: CallContext = { requestId: 'req-1', sessionId: '', traceparent: '' };

export interface Called {
  answer: CallAnswer;
  body: { jsonrpc: string; id: unknown; result?: { content: Array<{ type: string; text?: string }>; structuredContent?: unknown; isError?: boolean }; error?: { code: number; message: string } };
}

/** Sends one `tools/call` body through handleToolCall and parses the answer. */
export async function callRaw(h: Harness, bodyText: string, ctx: CallContext = noCtx): Promise<Called> {
  const answer = await handleToolCall(bodyText, ROUTE, h.runtime, ctx, h.caller);
  return { answer, body: JSON.parse(answer.body) as Called['body'] };
}

export function call(h: Harness, params: unknown, id: string | number = 1, ctx: CallContext = noCtx): Promise<Called> {
  return callRaw(h, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }), ctx);
}

/** The single text of an isError result. */
export function errorText(c: Called): string {
  if (c.body.result?.isError !== true) throw new Error(`expected isError, got ${JSON.stringify(c.body)}`);
  return c.body.result.content[0]?.text ?? '';
}
