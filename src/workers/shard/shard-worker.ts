/**
 * Shard worker thread: owns the runtimes of its routes ({@link RouteTable})
 * and executes the `tools/call` frames every acceptor sends it
 * ({@link CallExecutor}). Control (install, remove, metrics, close, a
 * restarted acceptor's new channel) comes from the main thread; an install
 * is acknowledged to main, which only then lets acceptors see the snapshot.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import { createLogger } from '../../shared/log.js';
import { ShardMetrics } from '../../shared/metrics.js';
import { PortFrameReader, PortFrameWriter } from '../../shared/threads/port-frames.js';
import type { CallChannelEnd, MainToShard, ShardToMain, ShardWorkerData } from '../../shared/threads/messages.js';
import { AcceptorLink, CallExecutor } from './call-executor.js';
import { RouteTable } from './route-table.js';
import { ToolServiceClient } from './upstream.js';

if (parentPort === null) throw new Error('shard-worker must run as a worker thread');
const parent = parentPort;
const data = workerData as ShardWorkerData;
const { config, shardIndex } = data;
const log = createLogger(config.log.level, { thread: `shard-${shardIndex}` });
const metrics = new ShardMetrics();
const client = new ToolServiceClient({
  connectionsPerService: config.tools.connectionsPerService,
  maxResponseBytes: config.tools.maxResponseBytes,
});
const routes = new RouteTable();
const executor = new CallExecutor(routes, client, metrics, log, config.streaming.defaultLogLevel);

/** One link per acceptor thread, index = acceptor index. */
const links: Array<{ link: AcceptorLink; reader: PortFrameReader; writer: PortFrameWriter; end: CallChannelEnd }> = [];

function connect(acceptor: number, end: CallChannelEnd): void {
  const writer = new PortFrameWriter(end.port);
  const link = new AcceptorLink(acceptor, writer);
  const reader = new PortFrameReader(end.port, (buf, offset, length) => executor.onFrame(link, buf, offset, length));
  links[acceptor] = { link, reader, writer, end };
}

data.channels.forEach((end, acceptor) => connect(acceptor, end));

function send(msg: ShardToMain): void {
  parent.postMessage(msg);
}

function install(routeKey: string, snapshot: SharedArrayBuffer): void {
  try {
    routes.install(routeKey, snapshot);
    send({ type: 'installed', routeKey });
  } catch (err) {
    const wire = GatewayError.is(err) ? err.toWire() : { code: GatewayErrorCode.SnapshotCorrupt, message: String(err), details: [] };
    log.error({ route: routeKey, err: wire }, 'snapshot install failed; the previous snapshot stays');
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
        old.end.port.close();
        executor.dropLink(old.link);
      }
      connect(msg.acceptor, msg.channel);
      break;
    }
    case 'metrics':
      void metrics.registry.getMetricsAsJSON().then((m) => send({ type: 'metrics', requestId: msg.requestId, metrics: m }));
      break;
    case 'close':
      void client
        .close()
        // One more turn: answers of the last calls are flushed from their batches before the channels close.
        .then(() => new Promise((resolve) => setImmediate(resolve)))
        .finally(() => {
          for (const l of links) l.end.port.close();
          send({ type: 'closed' });
          parent.close();
        });
      break;
  }
});
