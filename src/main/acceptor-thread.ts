/**
 * An extra acceptor thread (`workers.acceptors > 1`) as the main thread sees
 * it: started on the port acceptor 0 bound, kept up to date by the
 * {@link AcceptorFanout}, and restarted by a {@link Supervisor} when it dies —
 * with fresh call channels to every shard (its clients' connections died
 * with it; the shards abandon the calls they held for it).
 */
import { Worker } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { AcceptorToMain, AcceptorWorkerData, MainToAcceptor } from '../shared/threads/messages.js';
import type { AcceptorFanout } from './acceptor-fanout.js';
import { ReplyWaiters } from './reply-waiters.js';
import type { ShardThread } from './shard-thread.js';
import { workerResourceLimits } from './worker-limits.js';
import { Supervisor, type SupervisorDeps } from './supervisor.js';
import type { Topology } from './topology.js';

/**
 * Beyond the drain deadline: time for the thread to write its last answers,
 * close its connections and exit before it is terminated (terminating a
 * thread that still has uWS sockets aborts the process: acceptor.ts
 * `closeIdleConnections`).
 */
const STOP_MARGIN_MS = 5_000;

/** What an acceptor thread asks of the main thread. */
export interface AcceptorThreadHooks {
  /** Prometheus text of the whole process (a scrape arrived on this thread). */
  collectMetrics(): Promise<string>;
  /** A `notifications/cancelled` this thread could not match: offer it to the others. */
  relayCancel(from: AcceptorThread, routeKey: string, sessionId: string, idText: string): void;
}

/** One supervised extra acceptor thread. */
export class AcceptorThread {
  private readonly supervisor: Supervisor;
  private readonly scrapes = new ReplyWaiters<MetricObjectJson[]>();
  private started = false;
  private listening: { resolve(): void; reject(err: Error): void } | null = null;

  constructor(
    readonly index: number,
    config: GatewayConfig,
    port: number,
    topology: Topology,
    shards: readonly ShardThread[],
    private readonly fanout: AcceptorFanout,
    deps: SupervisorDeps,
    private readonly hooks: AcceptorThreadHooks,
  ) {
    this.supervisor = new Supervisor(
      {
        kind: 'acceptor',
        index,
        spawn: () => {
          if (this.started) {
            // Fresh channels: shards drop the calls of the dead thread and take the new ends.
            topology.rewireAcceptor(index);
            for (const shard of shards) shard.replaceAcceptor(index, topology);
          }
          this.started = true;
          const channels = topology.acceptorEnds(index);
          const workerData: AcceptorWorkerData = { acceptorIndex: index, config, channels, port };
          const worker = new Worker(new URL('./acceptor-worker.js', import.meta.url), { workerData, name: `acceptor-${index}`, resourceLimits: workerResourceLimits(config.workers, 'acceptor') });
          worker.on('message', (msg: AcceptorToMain) => this.onMessage(worker, msg));
          worker.on('exit', () => this.fanout.removeWorker(worker));
          this.fanout.addWorker(worker);
          return worker;
        },
      },
      deps,
    );
  }

  /** Starts the thread; resolves once it listens. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.listening = { resolve, reject };
      this.supervisor.start();
    });
  }

  /** Sends a control message. */
  post(msg: MainToAcceptor): void {
    this.supervisor.current?.postMessage(msg);
  }

  /** This thread's metrics (empty after a timeout or while restarting). */
  scrape(timeoutMs: number): Promise<MetricObjectJson[]> {
    if (this.supervisor.current === null) return Promise.resolve([]);
    const { id, promise } = this.scrapes.create(timeoutMs, []);
    this.post({ type: 'metrics-collect', requestId: id });
    return promise;
  }

  /**
   * Kills the thread as a crash would (drills and tests): an uncaught
   * exception inside it (acceptor-worker.ts `crash`), never
   * `worker.terminate()`, which would leave uWS sockets open and abort the
   * process. Resolves when the thread has exited.
   */
  kill(): Promise<void> {
    const worker = this.supervisor.current;
    if (worker === null) return Promise.resolve();
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'crash' } satisfies MainToAcceptor);
    return exited;
  }

  /** The drain began: the thread's answers carry `Connection: close` from now on. */
  drain(): void {
    this.post({ type: 'drain' });
  }

  /** A forced exit: the thread closes every socket at once and exits (bounded: `timeoutMs`, then terminated). */
  abort(timeoutMs: number): Promise<void> {
    return this.supervisor.stop({ type: 'abort' } satisfies MainToAcceptor, timeoutMs);
  }

  /** Closes the listener, answers open requests until `deadline` (epoch ms, then `SHUTTING_DOWN`), exits. */
  stop(deadline: number): Promise<void> {
    return this.supervisor.stop({ type: 'close', deadline } satisfies MainToAcceptor, Math.max(0, deadline - Date.now()) + STOP_MARGIN_MS);
  }

  private onMessage(worker: Worker, msg: AcceptorToMain): void {
    switch (msg.type) {
      case 'listening':
        this.listening?.resolve();
        this.listening = null;
        break;
      case 'listen-failed':
        this.listening?.reject(new Error(`acceptor ${msg.acceptorIndex}: ${msg.message}`));
        this.listening = null;
        break;
      case 'metrics-request':
        void this.hooks.collectMetrics().then(
          (text) => worker.postMessage({ type: 'metrics-result', requestId: msg.requestId, text } satisfies MainToAcceptor),
          () => undefined,
        );
        break;
      case 'metrics':
        this.scrapes.settle(msg.requestId, msg.metrics);
        break;
      case 'cancel':
        this.hooks.relayCancel(this, msg.routeKey, msg.sessionId, msg.idText);
        break;
      case 'closed':
        break;
    }
  }
}
