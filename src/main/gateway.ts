/**
 * Composition root of the gateway process (main thread): shard workers,
 * acceptor 0 on this thread plus any extra acceptor threads, the refresh
 * worker (all catalog I/O), the route status board, health, metrics, and
 * graceful shutdown.
 *
 * ```
 *   main thread ─ Acceptor 0 (uWS) ──┐      ┌─ shard 0 (routes with hash % N = 0)
 *   acceptor-1 … (same port) ────────┼─────►├─ shard 1 …
 *                    one MessageChannel per (acceptor, shard) pair
 *   refresh worker ──events──► main: CatalogPublisher ──install──► owning shard ──publish──► acceptors
 * ```
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { GatewayConfig } from '../shared/config/schema.js';
import { createLogger } from '../shared/log.js';
import { aggregateMetrics } from '../shared/metrics.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { AcceptorToMain, AcceptorWorkerData, DirectoryEntry, MainToAcceptor } from '../shared/threads/messages.js';
import { Acceptor } from './acceptor.js';
import { CatalogPublisher, type CatalogEvents } from './catalog-publisher.js';
import { RefreshSupervisor } from './refresh-supervisor.js';
import { RouteStatusBoard } from './route-status.js';
import { ShardHandle } from './shard-pool.js';
import { loadUws } from './uws.js';
import { workerResourceLimits } from './worker-limits.js';
import { ReplyWaiters } from './worker-rpc.js';
import type { EventEmitter } from 'node:events';

/** A running gateway. `close()` drains and stops every thread; it is idempotent. */
export interface Gateway {
  readonly host: string;
  readonly port: number;
  readonly config: GatewayConfig;
  /** Catalog events (`list-changed`, `initial-load-complete`, `state-changed`). */
  readonly events: EventEmitter<CatalogEvents>;
  /** Resolves when every route has been tried once (readiness turns 200 under `initial-load`). */
  initialLoad(): Promise<void>;
  /** Readiness as `/health/ready` serves it. */
  readiness(): { status: number; body: string };
  /** Kills the refresh worker as a crash would (it is restarted); for operations drills and tests. */
  crashRefreshWorker(): Promise<void>;
  /** Kills shard `index` as a crash would (it is restarted and its routes reinstalled); drills and tests. */
  crashShard(index: number): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

const SCRAPE_TIMEOUT_MS = 2_000;

/** Starts the gateway; resolves once it listens. Routes answer 503 until their first snapshot. */
export async function startGateway(config: GatewayConfig): Promise<Gateway> {
  // First, before any thread starts: refuses a runtime without native uWS (RUNTIME_UNSUPPORTED).
  const uws = loadUws({ maxHeaderBytes: config.server.maxHeaderBytes });
  const log = createLogger(config.log.level, { thread: 'main' });
  const mainRegistry = new Registry();
  collectDefaultMetrics({ register: mainRegistry, prefix: 'mcp_gateway_' });
  const board = new RouteStatusBoard(config.health.readiness, mainRegistry);
  const shardCount = config.workers.shards;
  const acceptorCount = config.workers.acceptors;

  // channels[a][s]: acceptor a ↔ shard s.
  const channels = Array.from({ length: acceptorCount }, () => Array.from({ length: shardCount }, () => new MessageChannel()));
  const shards = Array.from(
    { length: shardCount },
    (_, s) => new ShardHandle(s, config, channels.map((row) => (row[s] as MessageChannel).port2), log, (dead) => void restartShard(dead)),
  );
  let shardRestarts = 0;
  let lastShardCrashAt = 0;
  let closingGateway = false;
  const publisher = new CatalogPublisher(board, shards, log);

  const pendingReason = (): string => {
    const portalError = board.registryStatus.portalError;
    return `the route directory is not loaded yet${portalError ? ` (${portalError})` : ''}`;
  };
  const directory = (): DirectoryEntry[] =>
    board.keys().map((routeKey) => {
      const s = board.get(routeKey);
      return { routeKey, shard: s?.shard ?? 0, unavailableReason: s?.revision === null ? (s?.lastError?.message ?? null) : null };
    });

  const acceptorWorkers: Worker[] = [];
  const acceptorScrapes = new ReplyWaiters<MetricObjectJson[]>();
  let refresh: RefreshSupervisor | null = null;

  const collectMetrics = async (): Promise<{ contentType: string; text: string }> => {
    const parts: Promise<MetricObjectJson[]>[] = [mainRegistry.getMetricsAsJSON(), acceptor0.metricsJson()];
    for (const shard of shards) parts.push(shard.scrape(SCRAPE_TIMEOUT_MS));
    if (refresh) parts.push(refresh.scrape(SCRAPE_TIMEOUT_MS));
    for (const w of acceptorWorkers) {
      const { id, promise } = acceptorScrapes.create(SCRAPE_TIMEOUT_MS, []);
      w.postMessage({ type: 'metrics-collect', requestId: id } satisfies MainToAcceptor);
      parts.push(promise);
    }
    return aggregateMetrics(await Promise.all(parts));
  };

  const acceptor0 = new Acceptor({
    index: 0,
    config,
    shardPorts: channels[0]?.map((c) => c.port1) ?? [],
    log,
    health: { readiness: () => board.readiness(), metrics: collectMetrics },
    onUnmatchedCancel: (cancelKey) => relayCancel(cancelKey, null),
  });

  /**
   * A shard died: its in-flight calls are answered with an internal error at
   * once, new calls to it are refused (503) until it is back, and the routes
   * it owned are installed again (acceptors keep answering tools/list from
   * their snapshots meanwhile). Backoff 0.2 s doubling to 30 s against a crash loop.
   */
  async function restartShard(dead: ShardHandle): Promise<void> {
    if (closingGateway) return;
    const index = dead.index;
    acceptor0.shardDown(index);
    for (const w of acceptorWorkers) w.postMessage({ type: 'shard-down', shard: index } satisfies MainToAcceptor);
    // The backoff only grows for crashes that follow each other within a minute.
    if (Date.now() - lastShardCrashAt > 60_000) shardRestarts = 0;
    lastShardCrashAt = Date.now();
    const delay = Math.min(30_000, 200 * 2 ** shardRestarts++);
    await new Promise((r) => setTimeout(r, delay));
    if (closingGateway) return;
    const fresh = Array.from({ length: acceptorCount }, () => new MessageChannel());
    fresh.forEach((channel, a) => {
      const row = channels[a];
      if (row) row[index] = channel;
    });
    const handle = new ShardHandle(index, config, fresh.map((c) => c.port2), log, (again) => void restartShard(again));
    shards[index] = handle;
    acceptor0.shardReplaced(index, (fresh[0] as MessageChannel).port1);
    acceptorWorkers.forEach((w, i) => {
      const port = (fresh[i + 1] as MessageChannel).port1;
      w.postMessage({ type: 'shard-port', shard: index, port } satisfies MainToAcceptor, [port]);
    });
    log.warn({ shard: index, restartInMs: delay }, 'shard thread restarted; reinstalling its routes');
    publisher.reinstallShard(index);
  }

  /** Offers an unmatched cancel to every other acceptor thread. */
  function relayCancel(cancelKey: string, from: Worker | null): void {
    if (from !== null) acceptor0.cancelFromPeer(cancelKey);
    for (const w of acceptorWorkers) if (w !== from) w.postMessage({ type: 'cancel', cancelKey } satisfies MainToAcceptor);
  }

  let lastDirectory = '';
  let lastReadiness = '';
  /**
   * Pushes the directory and readiness to the acceptors when they changed.
   * This thread is also acceptor 0, so the work is kept off its per-swap path:
   * catalog swaps that change only revisions leave the directory as it was.
   */
  const publishState = (): void => {
    const entries = directory();
    const reason = pendingReason();
    const signature = `${publisher.directoryLoaded}\u0000${reason}\u0000${JSON.stringify(entries)}`;
    const directoryChanged = signature !== lastDirectory;
    lastDirectory = signature;
    if (directoryChanged) acceptor0.applyDirectory(entries, publisher.directoryLoaded, reason);
    if (acceptorWorkers.length === 0) return;
    const r = board.readiness();
    const readinessChanged = r.body !== lastReadiness;
    lastReadiness = r.body;
    for (const w of acceptorWorkers) {
      if (directoryChanged) w.postMessage({ type: 'directory', entries, loaded: publisher.directoryLoaded, pendingReason: reason } satisfies MainToAcceptor);
      if (readinessChanged) w.postMessage({ type: 'readiness', status: r.status, body: r.body } satisfies MainToAcceptor);
    }
  };
  /** State changes come in bursts (a refresh cycle installs many routes): publish once per event-loop turn. */
  let publishScheduled = false;
  const schedulePublish = (): void => {
    if (publishScheduled) return;
    publishScheduled = true;
    setImmediate(() => {
      publishScheduled = false;
      publishState();
    });
  };
  publisher.on('state-changed', schedulePublish);
  // Readiness turning 200 must reach every acceptor before initialLoad() resolves.
  publisher.on('initial-load-complete', publishState);
  publishState();
  try {
    return await listenAndRun();
  } catch (err) {
    // A failed start must not leave threads or a listen socket behind.
    await acceptor0.close(0);
    for (const w of acceptorWorkers) w.postMessage({ type: 'close', graceMs: 0 } satisfies MainToAcceptor);
    await Promise.all(shards.map((s) => s.close()));
    throw err;
  }

  async function listenAndRun(): Promise<Gateway> {
    let port = await acceptor0.listen(config.server.host, config.server.port);
    if (config.server.port === 0 && acceptorCount > 1) {
      // uWS sets SO_REUSEPORT only when given a port: re-listen on the port the kernel picked so the others can share it.
      await acceptor0.close(0);
      port = await acceptor0.listen(config.server.host, port);
    }

    for (let a = 1; a < acceptorCount; a++) acceptorWorkers.push(await startAcceptorWorker(a));
    lastDirectory = '';
    publishState();

    refresh = new RefreshSupervisor(config, (e) => publisher.handle(e), () => publisher.publishedRevisions(), log);
    refresh.start();
    log.info({ host: config.server.host, port, shards: shardCount, acceptors: acceptorCount, source: config.catalog.source, node: process.version, uws: uws.release }, 'gateway listening');

    const initialLoad = new Promise<void>((resolve) => {
      if (board.initialLoadDone) resolve();
      else publisher.once('initial-load-complete', () => resolve());
    });
    void initialLoad.then(() => {
      log.info({ routes: Object.fromEntries(board.keys().map((k) => [k, board.get(k)?.state])) }, 'initial catalog load finished');
    });

    async function startAcceptorWorker(index: number): Promise<Worker> {
      const shardPorts = (channels[index] ?? []).map((c) => c.port1);
      const workerData: AcceptorWorkerData = { kind: 'acceptor', acceptorIndex: index, config, shardPorts, port };
      const worker = new Worker(new URL('./acceptor-worker.js', import.meta.url), { workerData, transferList: shardPorts, resourceLimits: workerResourceLimits(config.workers) });
      worker.on('error', (err) => log.error({ err: String(err), acceptor: index }, 'acceptor thread failed'));
      await new Promise<void>((resolve, reject) => {
        worker.on('message', (msg: AcceptorToMain) => {
          switch (msg.type) {
            case 'listening':
              resolve();
              break;
            case 'listen-failed':
              reject(new Error(`acceptor ${msg.acceptorIndex}: ${msg.message}`));
              break;
            case 'metrics-request':
              void collectMetrics().then(
                (m) => worker.postMessage({ type: 'metrics-result', requestId: msg.requestId, text: m.text } satisfies MainToAcceptor),
                () => undefined,
              );
              break;
            case 'metrics':
              acceptorScrapes.settle(msg.requestId, msg.metrics);
              break;
            case 'cancel':
              relayCancel(msg.cancelKey, worker);
              break;
            case 'closed':
              break;
          }
        });
      });
      return worker;
    }

    let closing: Promise<void> | null = null;
    return {
      host: config.server.host,
      port,
      config,
      events: publisher,
      initialLoad: () => initialLoad,
      readiness: () => board.readiness(),
      crashRefreshWorker: () => refresh?.kill() ?? Promise.resolve(),
    crashShard: (index: number) => shards[index]?.kill() ?? Promise.resolve(),
      close(graceMs = 5_000): Promise<void> {
        closing ??= (async () => {
          closingGateway = true;
          await refresh?.close();
          const acceptorsClosed = acceptorWorkers.map(
            (w) =>
              new Promise<void>((resolve) => {
                w.once('exit', () => resolve());
                w.postMessage({ type: 'close', graceMs } satisfies MainToAcceptor);
              }),
          );
          await acceptor0.close(graceMs);
          await Promise.all(acceptorsClosed);
          await Promise.all(shards.map((s) => s.close()));
          for (const row of channels) for (const c of row) c.port1.close();
          log.info('gateway closed');
        })();
        return closing;
      },
    };
  }
}
