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
 */
import type { EventEmitter } from 'node:events';
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import type { GatewayConfig } from '../shared/config/schema.js';
import { exposureWarnings } from '../shared/auth/exposure.js';
import { createLogger } from '../shared/log.js';
import { aggregateMetrics } from '../shared/metrics.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import { Acceptor } from './acceptor.js';
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

/** A running gateway. `close()` drains and stops every thread; it is idempotent. */
export interface Gateway {
  readonly host: string;
  readonly port: number;
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
  close(graceMs?: number): Promise<void>;
}

const SCRAPE_TIMEOUT_MS = 2_000;
const SHARD_STOP_TIMEOUT_MS = 10_000;

/** Starts the gateway; resolves once it listens. Routes answer 503 until their first snapshot. */
export async function startGateway(config: GatewayConfig): Promise<Gateway> {
  const log = createLogger(config.log.level, { thread: 'main' });
  const mainRegistry = new Registry();
  collectDefaultMetrics({ register: mainRegistry, prefix: 'mcp_gateway_' });
  const restarts = new Counter({
    name: 'mcp_gateway_thread_restarts_total',
    help: 'Worker threads restarted after an unexpected exit, by kind (shard, refresh, acceptor).',
    labelNames: ['kind'] as const,
    registers: [mainRegistry],
  });
  const deps: SupervisorDeps = { log, restarts };
  const board = new RouteStatusBoard(config.health.readiness, mainRegistry);
  const circuits = new CircuitBoard(config.tools.circuitBreaker.openMs);
  board.attachCircuits(circuits);
  const topology = new Topology(config.workers.acceptors, config.workers.shards, config.workers.channelRingBytes);
  const extraAcceptors: AcceptorThread[] = [];
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

  const acceptor0 = new Acceptor({
    index: 0,
    config,
    channels: topology.acceptorEnds(0),
    log,
    health: { readiness: () => board.readiness(), metrics: collectMetrics },
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
      await acceptor0.close(0);
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
  } catch (err) {
    // A failed start must not leave threads or a listen socket behind.
    closing = true;
    await acceptor0.close(0);
    await Promise.all(extraAcceptors.map((a) => a.stop(0)));
    await Promise.all(shards.map((s) => s.stop(SHARD_STOP_TIMEOUT_MS)));
    acceptor0.closeChannels();
    throw err;
  }

  for (const warning of exposureWarnings(config)) log.warn({ security: true }, warning);
  refresh = new RefreshThread(config, (e) => installer.handle(e), () => installer.servedRevisions(), deps);
  refresh.start();
  log.info(
    { host: config.server.host, port, shards: config.workers.shards, acceptors: config.workers.acceptors, source: config.catalog.source },
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
  return {
    host: config.server.host,
    port,
    config,
    events: installer,
    initialLoad: () => initialLoad,
    readiness: () => board.readiness(),
    crashRefreshWorker: () => refresh?.kill() ?? Promise.resolve(),
    crashShard: (index: number) => shards[index]?.kill() ?? Promise.resolve(),
    crashAcceptor: (index: number) => extraAcceptors[index - 1]?.kill() ?? Promise.resolve(),
    close(graceMs = 5_000): Promise<void> {
      closed ??= (async () => {
        closing = true;
        await refresh?.stop();
        await Promise.all([acceptor0.close(graceMs), ...extraAcceptors.map((a) => a.stop(graceMs))]);
        await Promise.all(shards.map((s) => s.stop(SHARD_STOP_TIMEOUT_MS)));
        acceptor0.closeChannels();
        log.info('gateway closed');
      })();
      return closed;
    },
  };
}
