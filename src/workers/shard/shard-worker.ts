/**
 * Shard worker thread. Owns the snapshots of its routes: installs a snapshot
 * (decode, compile validators), publishes it to every acceptor with one
 * message each, and executes the `tools/call` requests acceptors hand it in
 * batches. Results go back batched, one transferred buffer per acceptor per
 * event-loop turn.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { GatewayError } from '../../shared/errors.js';
import { createLogger } from '../../shared/log.js';
import { ShardMetrics } from '../../shared/metrics.js';
import { decodeSnapshot } from '../../shared/snapshot/layout.js';
import { CallOutcome, FrameBatch, readCalls, type CallFrame } from '../../shared/threads/frames.js';
import type { AcceptorToShard, MainToShard, ShardToAcceptor, ShardToMain, ShardWorkerData } from '../../shared/threads/messages.js';
import { RouteRuntime } from './route-runtime.js';
import { ValidatorCache } from './validator-cache.js';
import { CancelSignal } from './cancel.js';
import { handleToolCall, type CallAnswer, type CallOptions } from './tool-call.js';
import { ToolServiceClient } from './upstream.js';
import { PromiseToolCaller } from './upstream-legacy.js';
import { errorResponseText } from '../../shared/protocol/jsonrpc.js';
import { JsonRpcErrorCode } from '../../shared/errors.js';

if (parentPort === null) throw new Error('shard-worker must run as a worker thread');
const parent = parentPort;
const data = workerData as ShardWorkerData;
const { config, shardIndex } = data;
const log = createLogger(config.log.level, { thread: `shard-${shardIndex}` });
const metrics = new ShardMetrics();
const client = new ToolServiceClient({
  connectionsPerService: config.tools.connectionsPerService,
  maxResponseBytes: config.tools.maxResponseBytes,
  maxQueuedCallsPerService: config.tools.maxQueuedCallsPerService,
  connectTimeoutMs: config.tools.connectTimeoutMs,
  keepAliveTimeoutMs: config.tools.keepAliveTimeoutMs,
  maxResponseHeaderBytes: config.tools.maxResponseHeaderBytes,
});
const caller = new PromiseToolCaller(client);
const decoder = new TextDecoder();

/** routeKey → runtime. Replaced with one `set` per publish: readers never see a half-built route. */
const routes = new Map<string, RouteRuntime>();
const validators = new ValidatorCache();

/** One outgoing result batch per acceptor port, flushed once per event-loop turn. */
class ResultChannel {
  private readonly batch = new FrameBatch();
  private scheduled = false;

  constructor(readonly port: MessagePort) {}

  /** Calls in flight on this acceptor's channel, so a cancel can reach them. */
  readonly inflight = new Map<number, CancelSignal>();

  push(callId: number, answer: CallAnswer): void {
    this.batch.pushResult(callId, answer.status, answer.outcome, answer.body);
    this.schedule();
  }

  pushEvent(callId: number, json: string): void {
    this.batch.pushEvent(callId, json);
    this.schedule();
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const { buffer, length } = this.batch.take();
    const msg: ShardToAcceptor = { type: 'results', buffer, length };
    this.port.postMessage(msg, [buffer]);
  };
}

const channels = data.acceptorPorts.map((port) => new ResultChannel(port));

function send(msg: ShardToMain): void {
  parent.postMessage(msg);
}

function install(routeKey: string, snapshot: SharedArrayBuffer): void {
  try {
    const runtime = new RouteRuntime(decodeSnapshot(snapshot), validators);
    const previous = routes.get(routeKey);
    routes.set(routeKey, runtime);
    previous?.release();
    const msg: ShardToAcceptor = { type: 'publish', routeKey, snapshot };
    for (const c of channels) c.port.postMessage(msg);
    send({ type: 'installed', routeKey, revision: runtime.snapshot.meta.revision });
  } catch (err) {
    const wire = GatewayError.is(err) ? err.toWire() : { code: 'SNAPSHOT_CORRUPT' as const, message: String(err), details: [] };
    log.error({ route: routeKey, err: wire }, 'snapshot install failed; the previous snapshot stays');
    send({ type: 'install-failed', routeKey, error: wire });
  }
}

async function execute(channel: ResultChannel, frame: CallFrame): Promise<void> {
  const cancel = new CancelSignal();
  channel.inflight.set(frame.callId, cancel);
  const options: CallOptions = { cancel, defaultLogLevel: config.streaming.defaultLogLevel };
  if (frame.ctx.sse) {
    options.sendEvent = (json) => {
      if (!cancel.cancelled) channel.pushEvent(frame.callId, json);
    };
  }
  let answer: CallAnswer;
  try {
    answer = await handleToolCall(decoder.decode(frame.body), frame.routeKey, routes.get(frame.routeKey), frame.ctx, caller, options);
    if (answer.upstream) {
      metrics.recordCall(frame.routeKey, answer.upstream.serviceId, answer.upstream.cause);
      if (answer.upstream.cause !== 'ok' && answer.upstream.cause !== 'tool_error' && answer.upstream.cause !== 'cancelled') {
        log.warn({ requestId: frame.ctx.requestId, route: frame.routeKey, service: answer.upstream.serviceId, cause: answer.upstream.cause }, 'tool call failed upstream');
      }
    }
  } catch (err) {
    log.error({ requestId: frame.ctx.requestId, route: frame.routeKey, err: String(err) }, 'tool call crashed in the shard');
    answer = { status: 500, outcome: CallOutcome.RpcError, body: errorResponseText(null, JsonRpcErrorCode.InternalError, 'Internal error') };
  }
  channel.inflight.delete(frame.callId);
  // A cancelled call sends nothing more: the acceptor already finished its side.
  if (!cancel.cancelled) channel.push(frame.callId, answer);
}

channels.forEach((channel) => {
  channel.port.on('message', (msg: AcceptorToShard) => {
    if (msg.type === 'cancel') {
      for (const id of msg.callIds) channel.inflight.get(id)?.cancel();
      return;
    }
    // The frames' bodies are views into msg.buffer, which this thread now owns (transferred).
    for (const frame of readCalls(msg.buffer, msg.length)) void execute(channel, frame);
  });
});

parent.on('message', (msg: MainToShard) => {
  switch (msg.type) {
    case 'install':
      install(msg.routeKey, msg.snapshot);
      break;
    case 'remove':
      // Acceptors stop routing to it through the main thread's directory; calls already here finish on the old runtime.
      routes.get(msg.routeKey)?.release();
      routes.delete(msg.routeKey);
      break;
    case 'metrics':
      void metrics.registry.getMetricsAsJSON().then((m) => send({ type: 'metrics', requestId: msg.requestId, metrics: m }));
      break;
    case 'close':
      void client.close().finally(() => {
        for (const c of channels) c.port.close();
        send({ type: 'closed' });
        parent.close();
      });
      break;
  }
});
