/**
 * Runs the refresh worker and restarts it when it dies (backoff 0.5 s
 * doubling to 30 s), handing the new one the revisions already served so it
 * does not re-publish unchanged routes. Shards keep serving their last
 * snapshots meanwhile: nothing on the request path waits for this thread.
 */
import { Worker } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';
import type { Logger } from '../shared/log.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { MainToRefresh, RefreshEvent, RefreshToMain, RefreshWorkerData } from '../shared/threads/messages.js';
import { workerResourceLimits } from './worker-limits.js';
import { ReplyWaiters } from './worker-rpc.js';

const MAX_BACKOFF_MS = 30_000;

/** Owns the refresh worker thread. */
export class RefreshSupervisor {
  private worker: Worker | null = null;
  private closing = false;
  private restarts = 0;
  private readonly scrapes = new ReplyWaiters<MetricObjectJson[]>();
  private restartTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: GatewayConfig,
    private readonly onEvent: (event: RefreshEvent) => void,
    private readonly published: () => Record<string, string>,
    private readonly log: Logger,
  ) {}

  /** Starts the worker. */
  start(): void {
    const workerData: RefreshWorkerData = { kind: 'refresh', config: this.config, published: this.published() };
    const worker = new Worker(new URL('../workers/refresh/refresh-worker.js', import.meta.url), { workerData, resourceLimits: workerResourceLimits(this.config.workers) });
    this.worker = worker;
    worker.on('message', (msg: RefreshToMain) => {
      if (msg.type === 'metrics') this.scrapes.settle(msg.requestId, msg.metrics);
      else if (msg.type !== 'closed') {
        this.restarts = 0;
        this.onEvent(msg);
      }
    });
    worker.on('error', (err) => this.log.error({ err: String(err) }, 'refresh worker crashed'));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = null;
      if (this.closing) return;
      const delay = Math.min(MAX_BACKOFF_MS, 500 * 2 ** this.restarts++);
      this.log.error({ code, restartInMs: delay }, 'refresh worker exited; shards keep serving their snapshots; restarting');
      this.restartTimer = setTimeout(() => this.start(), delay);
    });
  }

  /** Terminates the worker as if it had crashed (operations and tests of the restart path). */
  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  /** The refresh worker's metrics (empty while it is restarting). */
  scrape(timeoutMs: number): Promise<MetricObjectJson[]> {
    if (this.worker === null) return Promise.resolve([]);
    const { id, promise } = this.scrapes.create(timeoutMs, []);
    this.worker.postMessage({ type: 'metrics', requestId: id } satisfies MainToRefresh);
    return promise;
  }

  /** Stops the worker (idempotent). */
  async close(): Promise<void> {
    this.closing = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'close' } satisfies MainToRefresh);
    const timer = setTimeout(() => void worker.terminate(), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
