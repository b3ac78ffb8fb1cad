/**
 * Shared set-up for the shard's tool-call tests: a real fixture Tool Service,
 * a route installed from its manifest through the real snapshot encoding,
 * the real ToolServiceClient, and the real path of a call in one thread —
 * the acceptor's decision (`answerRequest`), the call frame, the shard's
 * {@link CallExecutor}, the result frame, and the acceptor's envelope.
 */
import { closedOrigin } from '../../../helpers/ports.js';
import { validateManifest } from '../../../../src/shared/catalog/manifest.js';
import { mergeRoute, type ServiceTools } from '../../../../src/shared/catalog/merge.js';
import { acceptorSections, encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import { pino } from 'pino';
import { assembleRpcAnswer } from '../../../../src/main/reply-writer.js';
import type { CallRequest } from '../../../../src/shared/calls.js';
import { ShardMetrics } from '../../../../src/shared/metrics.js';
import { answerRequest, DEFAULT_LIMITS, type AnswerLimits } from '../../../../src/shared/protocol/answer.js';
import { replyText } from '../../../../src/shared/protocol/reply.js';
import {
  RESULT_HEAD,
  ResultKind,
  resultFrameCallId,
  resultFrameKind,
  resultFrameOutcome,
  resultFramePayloadLength,
  resultFrameStatus,
  writeCall,
  type FrameSink,
} from '../../../../src/shared/threads/call-frames.js';
import { AcceptorLink, CallExecutor, type ShardCall } from '../../../../src/workers/shard/call-executor.js';
import { CallObserver } from '../../../../src/workers/shard/call-observer.js';
import { ServiceGuards } from '../../../../src/workers/shard/service-guards.js';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import { RouteTable } from '../../../../src/workers/shard/route-table.js';
import { ToolServiceClient } from '../../../../src/workers/shard/upstream.js';
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

/** The schema of issue 11 High #1: V8's backtracking engine needs seconds for 28 characters. */
export const PATTERN_SCHEMA = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } };

/** A recursive schema: its compiled check recurses once per level of the argument. */
export const TREE_SCHEMA = {
  type: 'object',
  properties: { node: { $ref: '#/$defs/node' } },
  $defs: { node: { type: 'object', properties: { child: { $ref: '#/$defs/node' } } } },
};

export interface Harness {
  svc: FixtureToolService;
  routes: RouteTable;
  client: ToolServiceClient;
  executor: CallExecutor;
  /** Every upstream call the shard counted, in order. */
  metrics: RecordingMetrics;
  /** The acceptor's view of the route (its tools/list template). */
  listTemplate: Uint8Array;
  /** Result frames the shard wrote, as the acceptor link receives them. */
  results: FrameCollector;
  close(): Promise<void>;
}

/** Shard metrics that also remember each upstream call's cause (what the metric label gets). */
export class RecordingMetrics extends ShardMetrics {
  readonly recorded: Array<{ serviceId: string; cause: string; callId: number }> = [];
  current = 0;
  override recordCall(route: string, service: string, cause: string): void {
    this.recorded.push({ serviceId: service, cause, callId: this.current });
    super.recordCall(route, service, cause);
  }
}

/** One frame as the acceptor reads it. */
export interface ResultFrame {
  kind: number;
  outcome: number;
  status: number;
  callId: number;
  payload: Buffer;
}

/** A FrameSink that keeps a copy of every frame and wakes whoever waits for a call's final frame. */
export class FrameCollector implements FrameSink {
  buf = Buffer.alloc(1 << 20);
  readonly frames: ResultFrame[] = [];
  private readonly waiters = new Map<number, (frame: ResultFrame) => void>();

  reserve(length: number): number {
    if (length > this.buf.length) this.buf = Buffer.alloc(length);
    return 0;
  }

  commit(): void {
    const b = this.buf;
    const len = resultFramePayloadLength(b, 0);
    const frame: ResultFrame = {
      kind: resultFrameKind(b, 0),
      outcome: resultFrameOutcome(b, 0),
      status: resultFrameStatus(b, 0),
      callId: resultFrameCallId(b, 0),
      payload: Buffer.from(b.subarray(RESULT_HEAD, RESULT_HEAD + len)),
    };
    this.frames.push(frame);
    if (frame.kind === ResultKind.Result || frame.kind === ResultKind.Error) {
      this.waiters.get(frame.callId)?.(frame);
      this.waiters.delete(frame.callId);
    }
  }

  /** The final frame of `callId` (already written, or the next one). */
  final(callId: number): Promise<ResultFrame> {
    const done = this.frames.find((f) => f.callId === callId && (f.kind === ResultKind.Result || f.kind === ResultKind.Error));
    if (done !== undefined) return Promise.resolve(done);
    return new Promise((resolve) => this.waiters.set(callId, resolve));
  }
}

export async function startHarness(): Promise<Harness> {
  const svc = await startFixtureToolService();
  const offline = await closedOrigin();
  const policy = { defaultTimeoutMs: 10_000, maxTimeoutMs: 20_000, allowedExecutionOrigins: [] };
  const manifest = manifestFor(
    [
      { name: 'run' },
      { name: 'search', inputSchema: SEARCH_SCHEMA },
      { name: 'pattern', inputSchema: PATTERN_SCHEMA },
      { name: 'tree', inputSchema: TREE_SCHEMA },
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
  const snapshot = encodeSnapshot(catalog);
  const routes = new RouteTable();
  routes.install(ROUTE, snapshot);
  const client = new ToolServiceClient({ connectionsPerService: 4, maxResponseBytes: MAX_RESPONSE_BYTES });
  const metrics = new RecordingMetrics();
  const guards = new ServiceGuards<ShardCall>(DEFAULTS.tools, () => undefined);
  const log = pino({ level: 'silent' });
  const executor = new CallExecutor(routes, client, guards, new CallObserver(0, metrics, log, null, 0), log, 'info');
  return {
    svc,
    routes,
    client,
    executor,
    metrics,
    listTemplate: Buffer.from(acceptorSections(snapshot).listTemplate),
    results: new FrameCollector(),
    close: async () => {
      await client.close();
      await svc.close();
    },
  };
}

/** Request context headers, as the acceptor validated them. */
export interface CallContext {
  requestId: string;
  sessionId: string;
  traceparent: string;
}

export const noCtx: CallContext = { requestId: 'req-1', sessionId: '', traceparent: '' };

export interface Called {
  /** HTTP status, the outcome byte (undefined when the acceptor answered without a hop) and the upstream call's cause, if one was made. */
  answer: { status: number; outcome: number | undefined; upstream?: { serviceId: string; cause: string } };
  body: { jsonrpc: string; id: unknown; result?: { content: Array<{ type: string; text?: string }>; structuredContent?: unknown; isError?: boolean }; error?: { code: number; message: string } };
}

let nextCallId = 1;

/**
 * Sends one `tools/call` body the way the gateway does: the acceptor's
 * decision, then (for a checked call) a call frame through the shard's
 * executor, and the acceptor's envelope around the final result frame.
 */
export async function callRaw(h: Harness, bodyText: string, ctx: CallContext = noCtx, routeKey = ROUTE, limits: AnswerLimits = DEFAULT_LIMITS): Promise<Called> {
  const decision = answerRequest(Buffer.from(bodyText), { listTemplate: h.listTemplate }, limits);
  if (decision.kind === 'reply') {
    return { answer: { status: decision.reply.status, outcome: undefined }, body: JSON.parse(replyText(decision.reply)) as Called['body'] };
  }
  const request: CallRequest = {
    routeKey,
    toolName: decision.toolName,
    argumentsJson: decision.argumentsJson,
    requestId: ctx.requestId,
    sessionId: ctx.sessionId,
    traceparent: ctx.traceparent,
    progressTokenJson: decision.progressTokenJson,
    logLevel: decision.logLevel,
    sse: false,
    modern: decision.modern,
    tracestate: decision.tracestate,
    baggage: decision.baggage,
    clientCapabilitiesJson: decision.clientCapabilitiesJson,
    inputResponsesJson: decision.inputResponsesJson,
    requestStateJson: decision.requestStateJson,
  };
  const callId = nextCallId++;
  const frame = new FrameCollectorInput();
  writeCall(frame, callId, request, decision.argumentsBytes);
  h.metrics.current = callId;
  h.executor.onFrame(new AcceptorLink(0, h.results), frame.buf, 0, frame.length);
  const result = await h.results.final(callId);
  const counted = h.metrics.recorded.filter((c) => c.callId === callId).at(-1);
  const text = Buffer.from(assembleRpcAnswer(decision.idText, result.kind === ResultKind.Error, result.payload, false)).toString('utf8');
  const answer: Called['answer'] = { status: result.status, outcome: result.outcome };
  if (counted !== undefined) answer.upstream = { serviceId: counted.serviceId, cause: counted.cause };
  return { answer, body: JSON.parse(text) as Called['body'] };
}

/** A one-frame sink for the call direction. */
class FrameCollectorInput implements FrameSink {
  buf = Buffer.alloc(0);
  length = 0;
  reserve(length: number): number {
    this.buf = Buffer.alloc(length);
    this.length = length;
    return 0;
  }
  commit(): void {}
}

export function call(h: Harness, params: unknown, id: string | number = 1, ctx: CallContext = noCtx): Promise<Called> {
  return callRaw(h, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }), ctx);
}

/** The single text of an isError result. */
export function errorText(c: Called): string {
  if (c.body.result?.isError !== true) throw new Error(`expected isError, got ${JSON.stringify(c.body)}`);
  return c.body.result.content[0]?.text ?? '';
}
