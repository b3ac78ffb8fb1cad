/**
 * Composition root of the gateway process (main thread). It wires, and
 * owns nothing else:
 *
 * ```
 *   main thread ─ Acceptor 0 (uWS) ─┐  call channels   ┌─ ShardThread 0 (routes with hash % N = 0)
 *   AcceptorThread 1 … (same port) ─┼─── Topology ─────┼─ ShardThread 1 …
 *                                   │                  │
 *   RefreshThread ──events──► CatalogInstaller ──install──► owning shard ──ack──┐
 *                                   │ (board: readiness)                        │
 *                                   └──────── AcceptorFanout ◄──────────────────┘ route updates to every acceptor
 * ```
 * Every worker thread runs under a {@link Supervisor} (one restart policy).
 *
 * ~300 lines: start-up order, drain and abort are one sequence over the same
 * components; each component already lives in its own module.
 */
import type { EventEmitter } from 'node:events';
import { Counter, Registry } from '../shared/vendor/prom-client.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { exposureWarnings } from '../shared/auth/exposure.js';
import { createLogger } from '../shared/log.js';
import { aggregateMetrics, registerProcessMetrics } from '../shared/metrics.js';
import { SERVER_INFO } from '../shared/protocol/mcp.js';
import { loadTracer } from '../shared/tracing/tracer.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import { Acceptor } from './acceptor.js';
import { startAdminListener, type AdminListener } from './admin-listener.js';
import { AcceptorFanout } from './acceptor-fanout.js';
import { AcceptorThread } from './acceptor-thread.js';
import { CatalogInstaller, type CatalogEvents } from './catalog-installer.js';
import { CircuitBoard } from './circuit-board.js';
import { assertPortAvailable } from './port-check.js';
import { RefreshThread } from './refresh-thread.js';
import { RouteStatusBoard } from './route-status.js';
import { ShardThread } from './shard-thread.js';
import type { SupervisorDeps } from './supervisor.js';
import { Topology } from './topology.js';
import { loadUws } from './uws.js';

/** A running gateway. `close()` drains and stops every thread; it is idempotent. */
export interface Gateway {
  readonly host: string;
  readonly port: number;
  /** The admin listener's port (health, metrics), or null when `server.admin.port` is unset (they are on {@link port}). */
  readonly adminPort: number | null;
  readonly config: GatewayConfig;
  /** Catalog events (`list-changed`, `initial-load-complete`). */
  readonly events: EventEmitter<CatalogEvents>;
  /** Resolves when every route has been tried once (readiness turns 200 under `initial-load`). */
  initialLoad(): Promise<void>;
  /** Readiness as `/health/ready` serves it. */
  readiness(): { status: number; body: string };
  /** Kills the refresh worker as a crash would (it is restarted); for operations drills and tests. */
  crashRefreshWorker(): Promise<void>;
  /** Kills shard `index` as a crash would (it is restarted and its routes reinstalled); drills and tests. */
  crashShard(index: number): Promise<void>;
  /** Kills extra acceptor thread `index` (≥ 1) as a crash would (it is restarted); drills and tests. */
  crashAcceptor(index: number): Promise<void>;
  /**
   * The drain a rollout needs (SIGTERM; docs/operations.md "Drain sequence"):
   * readiness 503 on every listener at once and `Connection: close` on every
   * answer, traffic still served for `server.drainDelayMs`, then the traffic
   * listeners close and open requests get `server.drainTimeoutMs`; those
   * still open then are answered `SHUTTING_DOWN`; then every thread stops.
   * Idempotent, and shares its promise with {@link close}.
   */
  drain(): Promise<void>;
  /**
   * A forced exit (a second signal): closes every listener and connection
   * now — open requests are cut — and stops the acceptor threads, so the
   * process can exit without tearing down a thread that holds sockets.
   */
  abort(): Promise<void>;
  /**
   * The same without the delay: listeners close at once, open requests get
   * `timeoutMs` (default `server.drainTimeoutMs`). During a {@link drain} it
   * ends the delay now and joins it.
   */
  close(timeoutMs?: number): Promise<void>;
}

const SCRAPE_TIMEOUT_MS = 2_000;
/**
 * How long a shard may take to close its pools once every acceptor is done
 * (nothing waits for its calls any more: they were answered or cancelled).
 */
const SHARD_STOP_TIMEOUT_MS = 3_000;
/** A forced exit waits this long for the acceptor threads to close their sockets. */
const ABORT_TIMEOUT_MS = 1_000;

/** Starts the gateway; resolves once it listens. Routes answer 503 until their first snapshot. */
export async function startGateway(config: GatewayConfig): Promise<Gateway> {
  // First, before any thread starts: refuses a runtime without native uWS (RUNTIME_UNSUPPORTED).
  const uws = loadUws({ maxHeaderBytes: config.server.maxHeaderBytes });
  const log = createLogger(config.log.level, { thread: 'main' });
  const mainRegistry = new Registry();
  registerProcessMetrics(mainRegistry, { version: SERVER_INFO.version, uws: uws.release });
  // Acceptor 0's tracer (this thread); each worker thread loads its own. Null unless tracing.otlp.endpoint is set.
  const tracer = await loadTracer(config.tracing, 'main');
  const restarts = new Counter({
    name: 'mcp_gateway_thread_restarts_total',
    help: 'Worker threads restarted after an unexpected exit, by kind (shard, refresh, acceptor).',
    labelNames: ['kind'] as const,
    registers: [mainRegistry],
  });
  const deps: SupervisorDeps = { log, restarts };
  const board = new RouteStatusBoard(config.health, mainRegistry);
  const circuits = new CircuitBoard(config.tools.circuitBreaker.openMs);
  board.attachCircuits(circuits);
  const topology = new Topology(config.workers.acceptors, config.workers.shards, config.workers.channelRingBytes);
  const extraAcceptors: AcceptorThread[] = [];
  let admin: AdminListener | null = null;
  let refresh: RefreshThread | null = null;
  let closing = false;

  const collectMetrics = async (): Promise<{ contentType: string; text: string }> => {
    const parts: Array<Promise<MetricObjectJson[]>> = [mainRegistry.getMetricsAsJSON(), acceptor0.metricsJson()];
    for (const shard of shards) parts.push(shard.scrape(SCRAPE_TIMEOUT_MS));
    if (refresh !== null) parts.push(refresh.scrape(SCRAPE_TIMEOUT_MS));
    for (const a of extraAcceptors) parts.push(a.scrape(SCRAPE_TIMEOUT_MS));
    return aggregateMetrics(await Promise.all(parts));
  };

  /** Offers an unmatched cancel to every other acceptor thread (the call may live there). */
  const relayCancel = (from: AcceptorThread | null, routeKey: string, sessionId: string, idText: string): void => {
    if (from !== null) acceptor0.cancelFromPeer(routeKey, sessionId, idText);
    for (const a of extraAcceptors) if (a !== from) a.post({ type: 'cancel', routeKey, sessionId, idText });
  };

  const health = { readiness: () => board.readiness(), metrics: collectMetrics };
  const acceptor0 = new Acceptor({
    index: 0,
    config,
    channels: topology.acceptorEnds(0),
    log,
    health,
    tracer,
    onUnmatchedCancel: (routeKey, sessionId, idText) => relayCancel(null, routeKey, sessionId, idText),
  });
  const fanout = new AcceptorFanout(acceptor0);

  const shards: ShardThread[] = Array.from(
    { length: config.workers.shards },
    (_, s) =>
      new ShardThread(s, config, topology, deps, {
        // Calls it held are answered at once with an internal error; new calls get 503 until it is back.
        onCircuit: (index, service, state, at) => {
          circuits.set(index, service, state, at);
          fanout.stateChanged();
        },
        onCrash: (index) => {
          circuits.forgetShard(index);
          acceptor0.shardDown(index);
          for (const a of extraAcceptors) a.post({ type: 'shard-down', shard: index });
        },
        // Acceptors get the new channels only once its routes are installed again, so no call finds it empty.
        onRestart: (index) => {
          void installer.reinstallShard(index).then(() => {
            if (closing) return;
            const end0 = topology.acceptorEnds(0)[index];
            if (end0 !== undefined) acceptor0.shardReplaced(index, end0);
            for (const a of extraAcceptors) {
              const end = topology.acceptorEnds(a.index)[index];
              if (end !== undefined) a.post({ type: 'shard-channel', shard: index, channel: end });
            }
            log.warn({ shard: index }, 'shard thread restarted; its routes are installed again');
          });
        },
      }),
  );
  const installer = new CatalogInstaller(board, shards, fanout, log);
  fanout.attach({
    get directoryLoaded() {
      return installer.directoryLoaded;
    },
    pendingReason: () => installer.pendingReason(),
    allRoutes: () => installer.allRoutes(),
    readiness: () => board.readiness(),
  });
  // Readiness turning 200 must reach every acceptor before initialLoad() resolves.
  installer.on('initial-load-complete', () => fanout.flush());
  // subscriptions/listen streams on every acceptor hear of a new catalog once it is what requests see.
  installer.on('list-changed', (routeKey) => fanout.listChanged(routeKey));
  for (const shard of shards) shard.start();
  fanout.flush();

  let port: number;
  try {
    await assertPortAvailable({ host: config.server.host, port: config.server.port, hostKey: 'server.host', portKey: 'server.port' });
    port = await acceptor0.listen(config.server.host, config.server.port);
    if (config.server.port === 0 && config.workers.acceptors > 1) {
      // uWS sets SO_REUSEPORT only when given a port: re-listen on the port the kernel picked so the others can share it.
      acceptor0.stopListening();
      port = await acceptor0.listen(config.server.host, port);
    }
    for (let a = 1; a < config.workers.acceptors; a++) {
      const thread = new AcceptorThread(a, config, port, topology, shards, fanout, deps, {
        collectMetrics: async () => (await collectMetrics()).text,
        relayCancel,
      });
      extraAcceptors.push(thread);
      await thread.start();
    }
    const adminPort = config.server.admin.port;
    if (adminPort !== null) admin = await startAdminListener({ host: config.server.admin.host ?? config.server.host, port: adminPort, health, log });
  } catch (err) {
    // A failed start must not leave threads or a listen socket behind.
    closing = true;
    await admin?.close();
    await acceptor0.close(Date.now());
    await Promise.all(extraAcceptors.map((a) => a.stop(Date.now())));
    await Promise.all(shards.map((s) => s.stop(SHARD_STOP_TIMEOUT_MS)));
    acceptor0.closeChannels();
    throw err;
  }

  for (const warning of exposureWarnings(config)) log.warn({ security: true }, warning);
  refresh = new RefreshThread(
    config,
    (e) => installer.handle(e),
    () => installer.servedRevisions(),
    deps,
  );
  refresh.start();
  log.info(
    {
      host: config.server.host,
      port,
      adminHost: admin === null ? null : (config.server.admin.host ?? config.server.host),
      adminPort: admin?.port ?? null,
      shards: config.workers.shards,
      acceptors: config.workers.acceptors,
      source: config.catalog.source,
      node: process.version,
      uws: uws.release,
    },
    'gateway listening',
  );

  const initialLoad = new Promise<void>((resolve) => {
    if (board.initialLoadDone) resolve();
    else installer.once('initial-load-complete', () => resolve());
  });
  void initialLoad.then(() => {
    log.info({ routes: Object.fromEntries(board.keys().map((k) => [k, board.get(k)?.state])) }, 'initial catalog load finished');
  });

  let closed: Promise<void> | null = null;
  /** Ends the drain delay early (close() during a drain). */
  let endDelay: (() => void) | null = null;
  /** The drain: one sequence whatever asked for it first (docs/operations.md "Drain sequence"). */
  const shutdown = (delayMs: number, timeoutMs: number): Promise<void> => {
    if (closed !== null && delayMs === 0) endDelay?.();
    closed ??= (async () => {
      closing = true;
      // 1. Readiness fails on every listener at once; answers close their connections; traffic is still served.
      board.startDraining();
      fanout.stateChanged();
      fanout.flush();
      acceptor0.startDrain();
      for (const a of extraAcceptors) a.drain();
      log.info({ delayMs, timeoutMs }, 'draining: readiness fails, traffic still served until the listeners close');
      if (delayMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delayMs);
          endDelay = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        endDelay = null;
      }
      // 2. Listeners close; open requests get until the deadline, then SHUTTING_DOWN. No new catalog work meanwhile.
      const deadline = Date.now() + timeoutMs;
      log.info({ timeoutMs }, 'draining: listeners closed, waiting for open requests');
      await Promise.all([refresh?.stop(), acceptor0.close(deadline), ...extraAcceptors.map((a) => a.stop(deadline))]);
      // 3. Nothing waits for a shard's answer any more: shards close their pools.
      await Promise.all(shards.map((s) => s.stop(SHARD_STOP_TIMEOUT_MS)));
      acceptor0.closeChannels();
      // Last: probes and scrapes are answered (readiness 503) for the whole drain.
      await admin?.close();
      await tracer?.shutdown().catch((err: unknown) => log.warn({ err }, 'exporting the last spans failed'));
      log.info('gateway closed');
    })();
    return closed;
  };
  return {
    host: config.server.host,
    port,
    adminPort: admin?.port ?? null,
    config,
    events: installer,
    initialLoad: () => initialLoad,
    readiness: () => board.readiness(),
    crashRefreshWorker: () => refresh?.kill() ?? Promise.resolve(),
    crashShard: (index: number) => shards[index]?.kill() ?? Promise.resolve(),
    crashAcceptor: (index: number) => extraAcceptors[index - 1]?.kill() ?? Promise.resolve(),
    drain: () => shutdown(config.server.drainDelayMs, config.server.drainTimeoutMs),
    abort: async () => {
      closing = true;
      acceptor0.abort();
      await Promise.all(extraAcceptors.map((a) => a.abort(ABORT_TIMEOUT_MS)));
    },
    close: (timeoutMs = config.server.drainTimeoutMs) => shutdown(0, timeoutMs),
  };
}
