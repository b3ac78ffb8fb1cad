/**
 * The refresh worker as the main thread sees it: all catalog I/O runs there;
 * its events go to the {@link CatalogInstaller}. Restarted by a
 * {@link Supervisor} when it dies, with the revisions already served so it
 * does not publish unchanged routes again. Shards and acceptors keep serving
 * their snapshots meanwhile: nothing on the request path waits for it.
 */
import { Worker } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { MainToRefresh, RefreshEvent, RefreshToMain, RefreshWorkerData } from '../shared/threads/messages.js';
import { ReplyWaiters } from './reply-waiters.js';
import { workerResourceLimits } from './worker-limits.js';
import { Supervisor, type SupervisorDeps } from './supervisor.js';

/** The supervised refresh worker. */
export class RefreshThread {
  private readonly supervisor: Supervisor;
  private readonly scrapes = new ReplyWaiters<MetricObjectJson[]>();

  constructor(config: GatewayConfig, onEvent: (event: RefreshEvent) => void, served: () => Record<string, string>, deps: SupervisorDeps) {
    this.supervisor = new Supervisor(
      {
        kind: 'refresh',
        index: 0,
        spawn: () => {
          const workerData: RefreshWorkerData = { config, published: served() };
          const worker = new Worker(new URL('../workers/refresh/refresh-worker.js', import.meta.url), { workerData, name: 'refresh', resourceLimits: workerResourceLimits(config.workers, 'refresh') });
          worker.on('message', (msg: RefreshToMain) => {
            if (msg.type === 'metrics') this.scrapes.settle(msg.requestId, msg.metrics);
            else if (msg.type !== 'closed') onEvent(msg);
          });
          return worker;
        },
      },
      deps,
    );
  }

  /** Starts the worker. */
  start(): void {
    this.supervisor.start();
  }

  /** Terminates the worker as if it had crashed (operations and tests of the restart path). */
  kill(): Promise<void> {
    return this.supervisor.kill();
  }

  /** The refresh worker's metrics (empty while it is restarting). */
  scrape(timeoutMs: number): Promise<MetricObjectJson[]> {
    if (this.supervisor.current === null) return Promise.resolve([]);
    const { id, promise } = this.scrapes.create(timeoutMs, []);
    this.supervisor.current.postMessage({ type: 'metrics', requestId: id } satisfies MainToRefresh);
    return promise;
  }

  /** Stops the worker (idempotent). */
  stop(): Promise<void> {
    return this.supervisor.stop({ type: 'close' } satisfies MainToRefresh, 5_000);
  }
}
