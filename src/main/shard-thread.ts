/**
 * A shard worker as the main thread sees it: installs and removes route
 * snapshots (each install answered by the shard), scrapes metrics, and
 * restarts the thread through a {@link Supervisor} when it dies — with fresh
 * call channels to every acceptor (the old ones may hold frames of the dead
 * thread).
 */
import { Worker } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayErrorCode } from '../shared/errors.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { MainToShard, ShardToMain, ShardWorkerData } from '../shared/threads/messages.js';
import { ReplyWaiters } from './reply-waiters.js';
import { workerResourceLimits } from './worker-limits.js';
import { Supervisor, type SupervisorDeps } from './supervisor.js';
import type { Topology } from './topology.js';

/** Install outcome as the shard reported it. */
export type InstallAnswer = Extract<ShardToMain, { type: 'installed' | 'install-failed' }>;

/** What the owner does when the shard dies and comes back. */
export interface ShardHooks {
  /** The thread died: its in-flight calls must be failed and new ones refused. */
  onCrash(index: number): void;
  /** A replacement runs with fresh channels (`topology.shardEnds(index)`); its routes must be installed again. */
  onRestart(index: number): void;
  /** A Tool Service's circuit opened or closed on this shard. */
  onCircuit(index: number, service: string, state: 'open' | 'closed' | 'half_open', at: number): void;
}

/** One supervised shard worker. */
export class ShardThread {
  private readonly installs = new Map<string, (answer: InstallAnswer) => void>();
  private readonly scrapes = new ReplyWaiters<MetricObjectJson[]>();
  private readonly supervisor: Supervisor;
  private started = false;

  constructor(
    readonly index: number,
    config: GatewayConfig,
    topology: Topology,
    deps: SupervisorDeps,
    private readonly hooks: ShardHooks,
  ) {
    this.supervisor = new Supervisor(
      {
        kind: 'shard',
        index,
        spawn: () => {
          // A restart gets fresh channels: the old ones may still hold frames for or from the dead thread.
          if (this.started) topology.rewireShard(index);
          this.started = true;
          const channels = topology.shardEnds(index);
          const workerData: ShardWorkerData = { shardIndex: index, config, channels };
          const worker = new Worker(new URL('../workers/shard/shard-worker.js', import.meta.url), {
            workerData,
            name: `shard-${index}`,
            resourceLimits: workerResourceLimits(config.workers, 'shard'),
          });
          worker.on('message', (msg: ShardToMain) => this.onMessage(msg));
          worker.on('exit', () => this.failInstalls());
          return worker;
        },
        onCrash: () => hooks.onCrash(index),
        onRestart: () => hooks.onRestart(index),
      },
      deps,
    );
  }

  /** Starts the thread. */
  start(): void {
    this.supervisor.start();
  }

  /** Installs a snapshot; resolves with the shard's answer (the caller keeps one install per route in flight). */
  install(routeKey: string, snapshot: SharedArrayBuffer): Promise<InstallAnswer> {
    if (this.supervisor.current === null) return Promise.resolve(this.unavailable(routeKey));
    return new Promise((resolve) => {
      this.installs.set(routeKey, resolve);
      this.post({ type: 'install', routeKey, snapshot });
    });
  }

  /** Drops a removed route's runtime. */
  remove(routeKey: string): void {
    this.post({ type: 'remove', routeKey });
  }

  /** Hands the shard a restarted acceptor's new channel end. */
  replaceAcceptor(acceptor: number, topology: Topology): void {
    const channel = topology.shardEnds(this.index)[acceptor];
    if (channel === undefined) return;
    this.supervisor.current?.postMessage({ type: 'acceptor-channel', acceptor, channel } satisfies MainToShard);
  }

  /** The shard's metrics (empty after a timeout or while it is restarting). */
  scrape(timeoutMs: number): Promise<MetricObjectJson[]> {
    if (this.supervisor.current === null) return Promise.resolve([]);
    const { id, promise } = this.scrapes.create(timeoutMs, []);
    this.post({ type: 'metrics', requestId: id });
    return promise;
  }

  /** Kills the thread as a crash would (operations drills and tests of the restart path). */
  kill(): Promise<void> {
    return this.supervisor.kill();
  }

  /** Asks the shard to finish its calls, close its pools and exit. */
  stop(timeoutMs: number): Promise<void> {
    return this.supervisor.stop({ type: 'close' } satisfies MainToShard, timeoutMs);
  }

  private onMessage(msg: ShardToMain): void {
    if (msg.type === 'circuit') this.hooks.onCircuit(this.index, msg.service, msg.state, msg.at);
    else if (msg.type === 'installed' || msg.type === 'install-failed') {
      const waiter = this.installs.get(msg.routeKey);
      this.installs.delete(msg.routeKey);
      waiter?.(msg);
    } else if (msg.type === 'metrics') this.scrapes.settle(msg.requestId, msg.metrics);
  }

  private failInstalls(): void {
    for (const [routeKey, waiter] of this.installs) waiter(this.unavailable(routeKey));
    this.installs.clear();
  }

  private unavailable(routeKey: string): InstallAnswer {
    return { type: 'install-failed', routeKey, error: { code: GatewayErrorCode.ShardUnavailable, message: `shard ${this.index} is not running`, details: [] } };
  }

  private post(msg: MainToShard): void {
    this.supervisor.current?.postMessage(msg);
  }
}
