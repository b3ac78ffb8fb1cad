/**
 * Composition root of the gateway process (main thread): starts the shard
 * workers, acceptor 0 on this thread plus any extra acceptor threads, the
 * route directory, the initial catalog load, health and metrics, and
 * graceful shutdown.
 *
 * ```
 *   main thread ─ Acceptor 0 (uWS) ──┐      ┌─ shard 0 (routes with hash % N = 0)
 *   acceptor-1 … (same port) ────────┼─────►├─ shard 1
 *                    one MessageChannel per (acceptor, shard) pair
 * ```
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { buildContextFromConfig, buildRoutes, type RouteBuildResult } from '../shared/catalog/build.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { createLogger, type Logger } from '../shared/log.js';
import { aggregateMetrics } from '../shared/metrics.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import { shardFor } from '../shared/route-hash.js';
import { decodeSnapshot } from '../shared/snapshot/layout.js';
import type { AcceptorToMain, AcceptorWorkerData, DirectoryEntry, MainToAcceptor, MainToShard, ShardToMain, ShardWorkerData } from '../shared/threads/messages.js';
import { Acceptor } from './acceptor.js';
import { RouteStatusBoard } from './route-status.js';
import { ReplyWaiters } from './worker-rpc.js';

/** A running gateway. `close()` drains and stops every thread; it is idempotent. */
export interface Gateway {
  readonly host: string;
  readonly port: number;
  readonly config: GatewayConfig;
  /** Readiness as `/health/ready` serves it. */
  readiness(): { status: number; body: string };
  close(graceMs?: number): Promise<void>;
}

const SCRAPE_TIMEOUT_MS = 2_000;

class ShardHandle {
  readonly installs = new Map<string, (result: ShardToMain) => void>();
  readonly scrapes = new ReplyWaiters<MetricObjectJson[]>();
  exited = false;
  constructor(readonly index: number, readonly worker: Worker) {}
}

/** Starts the gateway and resolves once it listens and the initial catalog load has finished. */
export async function startGateway(config: GatewayConfig): Promise<Gateway> {
  const log = createLogger(config.log.level, { thread: 'main' });
  const mainRegistry = new Registry();
  collectDefaultMetrics({ register: mainRegistry, prefix: 'mcp_gateway_' });
  const board = new RouteStatusBoard(config.health.readiness, mainRegistry);
  const shardCount = config.workers.shards;
  const acceptorCount = config.workers.acceptors;

  // channels[a][s]: acceptor a ↔ shard s.
  const channels = Array.from({ length: acceptorCount }, () => Array.from({ length: shardCount }, () => new MessageChannel()));
  const shards = Array.from({ length: shardCount }, (_, s) => spawnShard(s, config, channels.map((row) => (row[s] as MessageChannel).port2), log));

  const routeKeys = Object.keys(config.catalog.static.routes);
  for (const key of routeKeys) board.add(key, shardFor(key, shardCount));
  const directory = (): DirectoryEntry[] =>
    board.keys().map((routeKey) => {
      const s = board.get(routeKey);
      return { routeKey, shard: s?.shard ?? 0, unavailableReason: s?.lastError?.message ?? null };
    });

  const acceptorWorkers: Worker[] = [];
  const acceptorScrapes = new ReplyWaiters<MetricObjectJson[]>();
  const broadcast = (msg: MainToAcceptor): void => {
    for (const w of acceptorWorkers) w.postMessage(msg);
  };
  const publishState = (): void => {
    acceptor0.applyDirectory(directory());
    broadcast({ type: 'directory', entries: directory() });
    const r = board.readiness();
    broadcast({ type: 'readiness', status: r.status, body: r.body });
  };

  const collectMetrics = async (): Promise<{ contentType: string; text: string }> => {
    const parts: Promise<MetricObjectJson[]>[] = [mainRegistry.getMetricsAsJSON(), acceptor0.metricsJson()];
    for (const shard of shards) {
      if (shard.exited) continue;
      const { id, promise } = shard.scrapes.create(SCRAPE_TIMEOUT_MS, []);
      shard.worker.postMessage({ type: 'metrics', requestId: id } satisfies MainToShard);
      parts.push(promise);
    }
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
  });
  acceptor0.applyDirectory(directory());
  const port = await acceptor0.listen(config.server.host, config.server.port);

  for (let a = 1; a < acceptorCount; a++) {
    const shardPorts = (channels[a] ?? []).map((c) => c.port1);
    const workerData: AcceptorWorkerData = { kind: 'acceptor', acceptorIndex: a, config, shardPorts, port };
    const worker = new Worker(new URL('./acceptor-worker.js', import.meta.url), { workerData, transferList: shardPorts });
    acceptorWorkers.push(worker);
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
          case 'closed':
            break;
        }
      });
      worker.on('error', (err) => log.error({ err: String(err), acceptor: a }, 'acceptor thread failed'));
    });
  }
  publishState();
  log.info({ host: config.server.host, port, shards: shardCount, acceptors: acceptorCount, routes: routeKeys.length }, 'gateway listening');

  // Initial load: every route is tried once; each route's outcome is independent of the others.
  const results = await buildRoutes(config.catalog.static.routes, buildContextFromConfig(config, 'static'));
  await Promise.all(results.map((r) => installResult(r)));
  board.completeInitialLoad();
  publishState();
  const ready = board.readiness();
  log.info({ ready: ready.status === 200, routes: Object.fromEntries(board.keys().map((k) => [k, board.get(k)?.state])) }, 'initial catalog load finished');

  async function installResult(result: RouteBuildResult): Promise<void> {
    const status = board.get(result.routeKey);
    if (!status) return;
    if (!result.ok) {
      board.failed(result.routeKey, { code: result.code, message: result.reason });
      log.error({ route: result.routeKey, code: result.code, reason: result.reason }, 'route catalog refused');
      return;
    }
    const shard = shards[status.shard];
    if (!shard) return;
    const answer = await new Promise<ShardToMain>((resolve) => {
      shard.installs.set(result.routeKey, resolve);
      shard.worker.postMessage({ type: 'install', routeKey: result.routeKey, snapshot: result.snapshot } satisfies MainToShard);
    });
    if (answer.type === 'installed') {
      const meta = decodeSnapshot(result.snapshot).meta;
      board.succeeded(result.routeKey, { toolCount: meta.toolCount, revision: meta.revision, source: meta.source });
    } else if (answer.type === 'install-failed') {
      board.failed(result.routeKey, { code: answer.error.code, message: answer.error.message });
    }
  }

  let closing: Promise<void> | null = null;
  return {
    host: config.server.host,
    port,
    config,
    readiness: () => board.readiness(),
    close(graceMs = 5_000): Promise<void> {
      closing ??= (async () => {
        const acceptorsClosed = acceptorWorkers.map(
          (w) =>
            new Promise<void>((resolve) => {
              w.once('exit', () => resolve());
              w.postMessage({ type: 'close', graceMs } satisfies MainToAcceptor);
            }),
        );
        await acceptor0.close(graceMs);
        await Promise.all(acceptorsClosed);
        await Promise.all(
          shards.map(
            (s) =>
              new Promise<void>((resolve) => {
                if (s.exited) return resolve();
                s.worker.once('exit', () => resolve());
                s.worker.postMessage({ type: 'close' } satisfies MainToShard);
              }),
          ),
        );
        for (const row of channels) for (const c of row) c.port1.close();
        log.info('gateway closed');
      })();
      return closing;
    },
  };
}

function spawnShard(index: number, config: GatewayConfig, acceptorPorts: MessagePort[], log: Logger): ShardHandle {
  const workerData: ShardWorkerData = { kind: 'shard', shardIndex: index, config, acceptorPorts };
  const worker = new Worker(new URL('../workers/shard/shard-worker.js', import.meta.url), { workerData, transferList: acceptorPorts });
  const handle = new ShardHandle(index, worker);
  worker.on('message', (msg: ShardToMain) => {
    switch (msg.type) {
      case 'installed':
      case 'install-failed': {
        const waiter = handle.installs.get(msg.routeKey);
        handle.installs.delete(msg.routeKey);
        waiter?.(msg);
        break;
      }
      case 'metrics':
        handle.scrapes.settle(msg.requestId, msg.metrics);
        break;
      case 'closed':
        break;
    }
  });
  worker.on('error', (err) => log.error({ err: String(err), shard: index }, 'shard thread crashed'));
  worker.on('exit', (code) => {
    handle.exited = true;
    if (code !== 0) log.fatal({ shard: index, code }, 'shard thread exited');
  });
  return handle;
}
