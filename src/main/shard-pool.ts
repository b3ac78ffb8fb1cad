/**
 * The shard worker threads as the main thread sees them: spawn, install or
 * remove a route snapshot (one in flight per route, awaited), scrape
 * metrics, close.
 */
import { Worker, type MessagePort } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';
import type { Logger } from '../shared/log.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { MainToShard, ShardToMain, ShardWorkerData } from '../shared/threads/messages.js';
import { workerResourceLimits } from './worker-limits.js';
import { ReplyWaiters } from './worker-rpc.js';

/** Install outcome as the shard reported it. */
export type InstallAnswer = Extract<ShardToMain, { type: 'installed' | 'install-failed' }>;

/** One shard worker. */
export class ShardHandle {
  private readonly installs = new Map<string, (answer: InstallAnswer) => void>();
  private readonly scrapes = new ReplyWaiters<MetricObjectJson[]>();
  private exited = false;
  private closing = false;
  private readonly worker: Worker;

  constructor(
    readonly index: number,
    config: GatewayConfig,
    acceptorPorts: MessagePort[],
    log: Logger,
    onUnexpectedExit: (handle: ShardHandle) => void = () => undefined,
  ) {
    const workerData: ShardWorkerData = { kind: 'shard', shardIndex: index, config, acceptorPorts };
    this.worker = new Worker(new URL('../workers/shard/shard-worker.js', import.meta.url), {
      workerData,
      transferList: acceptorPorts,
      resourceLimits: workerResourceLimits(config.workers),
    });
    this.worker.on('message', (msg: ShardToMain) => {
      if (msg.type === 'installed' || msg.type === 'install-failed') {
        const waiter = this.installs.get(msg.routeKey);
        this.installs.delete(msg.routeKey);
        waiter?.(msg);
      } else if (msg.type === 'metrics') this.scrapes.settle(msg.requestId, msg.metrics);
    });
    this.worker.on('error', (err) => log.error({ err: String(err), shard: index }, 'shard thread crashed'));
    this.worker.on('exit', (code) => {
      this.exited = true;
      for (const [routeKey, waiter] of this.installs) waiter({ type: 'install-failed', routeKey, error: { code: 'SHARD_UNAVAILABLE', message: `shard ${index} exited`, details: [] } });
      this.installs.clear();
      if (!this.closing) {
        log.fatal({ shard: index, code }, 'shard thread exited');
        onUnexpectedExit(this);
      }
    });
  }

  /** Installs a snapshot; resolves with the shard's answer (the caller keeps one install per route in flight). */
  install(routeKey: string, snapshot: SharedArrayBuffer): Promise<InstallAnswer> {
    if (this.exited) return Promise.resolve({ type: 'install-failed', routeKey, error: { code: 'SHARD_UNAVAILABLE', message: `shard ${this.index} is not running`, details: [] } });
    return new Promise((resolve) => {
      this.installs.set(routeKey, resolve);
      this.post({ type: 'install', routeKey, snapshot });
    });
  }

  /** Drops a removed route's runtime. */
  remove(routeKey: string): void {
    this.post({ type: 'remove', routeKey });
  }

  /** The shard's metrics (empty after a timeout or exit). */
  scrape(timeoutMs: number): Promise<MetricObjectJson[]> {
    if (this.exited) return Promise.resolve([]);
    const { id, promise } = this.scrapes.create(timeoutMs, []);
    this.post({ type: 'metrics', requestId: id });
    return promise;
  }

  /** Kills the thread as a crash would (operations drills and tests of the restart path). */
  async kill(): Promise<void> {
    await this.worker.terminate();
  }

  /** Asks the shard to close its pools and exit; resolves when it has. */
  close(): Promise<void> {
    this.closing = true;
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      this.worker.once('exit', () => resolve());
      this.post({ type: 'close' });
    });
  }

  private post(msg: MainToShard): void {
    if (!this.exited) this.worker.postMessage(msg);
  }
}
