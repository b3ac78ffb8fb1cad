/**
 * Shard worker thread: owns the runtimes of its routes ({@link RouteTable})
 * and executes the `tools/call` frames every acceptor sends it
 * ({@link CallExecutor}). Control (install, remove, metrics, close, a
 * restarted acceptor's new channel) comes from the main thread; an install
 * is acknowledged to main, which only then lets acceptors see the snapshot.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import { createLogger, flushLogs } from '../../shared/log.js';
import { ShardMetrics } from '../../shared/metrics.js';
import { loadTracer } from '../../shared/tracing/tracer.js';
import { RingReader, RingWriter } from '../../shared/threads/ring.js';
import type { CallChannelEnd, MainToShard, ShardToMain, ShardWorkerData } from '../../shared/threads/messages.js';
import { AcceptorLink, CallExecutor, type ShardCall } from './call-executor.js';
import { CallObserver } from './call-observer.js';
import { RouteTable } from './route-table.js';
import { registerGuardMetrics, ServiceGuards } from './service-guards.js';
import { UpstreamCredentials } from '../../shared/auth/upstream-credentials.js';
import { ToolServiceClient } from './upstream.js';

if (parentPort === null) throw new Error('shard-worker must run as a worker thread');
const parent = parentPort;
const data = workerData as ShardWorkerData;
const { config, shardIndex } = data;
const log = createLogger(config.log.level, { thread: `shard-${shardIndex}` });
const metrics = new ShardMetrics();
// What the gateway presents to Tool Services, by origin (auth.upstream.profiles): headers and TLS (CA, client certificate).
const credentials = new UpstreamCredentials(config.auth, (what, message) => log.error({ source: what }, `upstream credential could not be re-read: ${message}`));
const client = new ToolServiceClient({
  credentials,
  originOptions: (origin) => {
    const tls = credentials.forOrigin(origin)?.tls();
    return tls ? { tls } : undefined;
  },
  connectionsPerService: config.tools.connectionsPerService,
  maxResponseBytes: config.tools.maxResponseBytes,
  maxQueuedCallsPerService: config.tools.maxQueuedCallsPerService,
  connectTimeoutMs: config.tools.connectTimeoutMs,
  keepAliveTimeoutMs: config.tools.keepAliveTimeoutMs,
  maxResponseHeaderBytes: config.tools.maxResponseHeaderBytes,
});
const routes = new RouteTable();
const guards = new ServiceGuards<ShardCall>(config.tools, (service, state, at) => send({ type: 'circuit', service, state, at }));
// Before any frame is read (messages from main wait in the port meanwhile): null unless tracing.otlp.endpoint is set.
const tracer = await loadTracer(config.tracing, `shard-${shardIndex}`);
const observer = new CallObserver(shardIndex, metrics, log, tracer, config.log.accessSampleRatio);
const executor = new CallExecutor(routes, client, guards, observer, log, config.streaming.defaultLogLevel);
registerGuardMetrics(metrics.registry, guards);

/** One link per acceptor thread, index = acceptor index. */
const links: Array<{ link: AcceptorLink; reader: RingReader; writer: RingWriter }> = [];
metrics.watch(
  shardIndex,
  () => observer.inFlight,
  () => links.map((l, acceptor) => ({ acceptor, shard: shardIndex, stats: l.writer.stats })),
);

function connect(acceptor: number, end: CallChannelEnd): void {
  // Answers are never refused: their calls already ran; the in-flight bound and tools.maxResponseBytes bound them.
  const writer = new RingWriter(end.send, { maxBacklogBytes: Number.POSITIVE_INFINITY });
  const link = new AcceptorLink(acceptor, writer);
  const reader = new RingReader(end.receive, (buf, offset, length) => executor.onFrame(link, buf, offset, length));
  links[acceptor] = { link, reader, writer };
}

/** Waits (bounded) until every answer left this shard's backlogs for the rings. */
async function backlogsDrained(timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (links.some((l) => l.writer.stats.backlogBytes > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
}

for (const [acceptor, end] of data.channels.entries()) connect(acceptor, end);

function send(msg: ShardToMain): void {
  parent.postMessage(msg);
}

function install(routeKey: string, snapshot: SharedArrayBuffer): void {
  try {
    routes.install(routeKey, snapshot);
    send({ type: 'installed', routeKey });
  } catch (err) {
    // A damaged snapshot is SNAPSHOT_CORRUPT (thrown as such by decodeSnapshot); anything else is a bug.
    const wire = GatewayError.is(err) ? err.toWire() : { code: GatewayErrorCode.Internal, message: `snapshot install failed: ${String(err)}`, details: [] };
    log.error({ route: routeKey, code: wire.code, err }, 'snapshot install failed; the previous snapshot stays');
    send({ type: 'install-failed', routeKey, error: wire });
  }
}

parent.on('message', (msg: MainToShard) => {
  switch (msg.type) {
    case 'install':
      install(msg.routeKey, msg.snapshot);
      break;
    case 'remove':
      routes.remove(msg.routeKey);
      break;
    case 'acceptor-channel': {
      const old = links[msg.acceptor];
      if (old !== undefined) {
        old.reader.close();
        old.writer.close();
        executor.dropLink(old.link);
      }
      connect(msg.acceptor, msg.channel);
      break;
    }
    case 'metrics':
      void metrics.toJson().then((m) => send({ type: 'metrics', requestId: msg.requestId, metrics: m }));
      break;
    case 'close':
      // Sent once every acceptor is done (answered or cancelled every call): no call here is awaited any more,
      // so the pools are destroyed, not drained — a hung Tool Service cannot hold the exit.
      client.destroy();
      // Answers of the last calls may still wait for ring space: let acceptor 0 (still reading) take them.
      void backlogsDrained(2_000)
        .then(() => tracer?.shutdown())
        .catch((err: unknown) => log.warn({ err }, 'exporting the last spans failed'))
        .finally(() => {
          for (const l of links) {
            l.reader.close();
            l.writer.close();
          }
          flushLogs();
          send({ type: 'closed' });
          parent.close();
        });
      break;
  }
});
