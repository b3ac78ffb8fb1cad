/**
 * Entry point of an extra acceptor thread (`workers.acceptors > 1`). It runs
 * the same {@link Acceptor} as the main thread on the same port. Route state
 * and readiness are pushed to it by the main thread's fanout; metrics
 * scrapes are answered by the main thread, which owns the aggregation.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger, flushLogs } from '../shared/log.js';
import { loadTracer } from '../shared/tracing/tracer.js';
import type { AcceptorToMain, AcceptorWorkerData, MainToAcceptor } from '../shared/threads/messages.js';
import { Acceptor } from './acceptor.js';
import { ReplyWaiters } from './reply-waiters.js';
import { loadUws } from './uws.js';

if (parentPort === null) throw new Error('acceptor-worker must run as a worker thread');
const parent = parentPort;
const data = workerData as AcceptorWorkerData;
const log = createLogger(data.config.log.level, { thread: `acceptor-${data.acceptorIndex}` });
// Before listening (main's messages wait in the port meanwhile): null unless tracing.otlp.endpoint is set.
const tracer = await loadTracer(data.config.tracing, `acceptor-${data.acceptorIndex}`);
let readiness = { status: 503, body: '{"status":"not_ready"}' };
const scrapes = new ReplyWaiters<string | null>();

const send = (msg: AcceptorToMain): void => parent.postMessage(msg);
// The main thread loaded uWS first (acceptor 0), so this finds the same native build.
loadUws({ maxHeaderBytes: data.config.server.maxHeaderBytes });

const acceptor = new Acceptor({
  index: data.acceptorIndex,
  config: data.config,
  channels: data.channels,
  log,
  tracer,
  onUnmatchedCancel: (routeKey, sessionId, idText) => send({ type: 'cancel', routeKey, sessionId, idText }),
  health: {
    readiness: () => readiness,
    metrics: async () => {
      const { id, promise } = scrapes.create(5_000, null);
      send({ type: 'metrics-request', requestId: id });
      const text = await promise;
      if (text === null) throw new Error('main thread did not answer the metrics request');
      return { contentType: 'text/plain; version=0.0.4; charset=utf-8', text };
    },
  },
});

/**
 * A thread must not end with uWS sockets open: Node then aborts the whole
 * process ("uv_loop_close() while having open handles"), which would turn a
 * bug in one acceptor thread into the loss of every connection of every
 * thread. So a crash closes this thread's sockets first and exits with code
 * 1; the main thread's Supervisor restarts it (its clients reconnect to the
 * other acceptors meanwhile: same port, SO_REUSEPORT). This is also why
 * `kill()` of an acceptor thread posts `crash` instead of `worker.terminate()`.
 */
function crash(err: unknown): void {
  log.fatal({ err }, 'acceptor thread crashed; closing its connections');
  try {
    acceptor.abort();
    acceptor.closeChannels();
  } finally {
    flushLogs();
    process.exit(1);
  }
}
process.on('uncaughtException', crash);
process.on('unhandledRejection', crash);

parent.on('message', (msg: MainToAcceptor) => {
  switch (msg.type) {
    case 'crash':
      setImmediate(() => {
        throw new Error('crash drill: acceptor thread killed by the main thread');
      });
      break;
    case 'routes':
      acceptor.applyRoutes(msg.updates, msg.loaded, msg.pending);
      break;
    case 'readiness':
      readiness = { status: msg.status, body: msg.body };
      break;
    case 'list-changed':
      acceptor.listChanged(msg.routeKeys);
      break;
    case 'metrics-result':
      scrapes.settle(msg.requestId, msg.text);
      break;
    case 'cancel':
      acceptor.cancelFromPeer(msg.routeKey, msg.sessionId, msg.idText);
      break;
    case 'shard-down':
      acceptor.shardDown(msg.shard);
      break;
    case 'shard-channel':
      acceptor.shardReplaced(msg.shard, msg.channel);
      break;
    case 'metrics-collect':
      void acceptor.metricsJson().then((metrics) => send({ type: 'metrics', requestId: msg.requestId, metrics }));
      break;
    case 'drain':
      acceptor.startDrain();
      break;
    case 'abort':
      // Sockets first: a thread must not end with uWS sockets open (acceptor.ts closeIdleConnections).
      acceptor.abort();
      acceptor.closeChannels();
      flushLogs();
      parent.close();
      break;
    case 'close':
      void acceptor
        .close(msg.deadline)
        .then(() => tracer?.shutdown())
        .catch((err: unknown) => log.warn({ err }, 'exporting the last spans failed'))
        .finally(() => {
          acceptor.closeChannels();
          flushLogs();
          send({ type: 'closed' });
          parent.close();
        });
      break;
  }
});

acceptor.listen(data.config.server.host, data.port).then(
  () => send({ type: 'listening', acceptorIndex: data.acceptorIndex }),
  (err: unknown) => send({ type: 'listen-failed', acceptorIndex: data.acceptorIndex, message: String(err) }),
);
