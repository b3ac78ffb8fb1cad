/**
 * Keeps one worker thread running — a shard, the refresh worker, or an extra
 * acceptor — with one restart policy for all of them: after an unexpected
 * exit, wait `baseMs · 2^n` (capped at `maxMs`) and start it again, where
 * `n` counts the crashes that followed each other with less than
 * `resetAfterMs` of quiet in between. Every restart is counted in
 * `mcp_gateway_thread_restarts_total{kind}`.
 *
 * What a restart means for the rest of the process (rewiring channels,
 * reinstalling routes, failing in-flight calls) is the owner's business: it
 * gets `onCrash` at once and `onRestart` with the new worker.
 */
import type { Worker } from 'node:worker_threads';
import type { Counter } from '../shared/vendor/prom-client.js';
import type { Logger } from '../shared/log.js';

/** The kinds of supervised threads (the metric label). */
export type ThreadKind = 'shard' | 'refresh' | 'acceptor';

/** Restart backoff. */
export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  /** A crash after this much quiet starts the backoff from `baseMs` again. */
  resetAfterMs: number;
}

/** The one policy every supervised thread uses. */
export const RESTART_BACKOFF: BackoffPolicy = { baseMs: 200, maxMs: 30_000, resetAfterMs: 60_000 };

/** How to run one thread. */
export interface ThreadSpec {
  kind: ThreadKind;
  index: number;
  /** Creates the worker and attaches its message listeners. */
  spawn(): Worker;
  /** The thread died unexpectedly (called at once, before the backoff delay). */
  onCrash?(): void;
  /** A replacement was started. */
  onRestart?(worker: Worker): void;
}

/** Shared by every supervisor of a process. */
export interface SupervisorDeps {
  log: Logger;
  restarts: Counter<'kind'>;
  backoff?: BackoffPolicy;
  now?: () => number;
}

/** One supervised thread. `stop()` is graceful and idempotent. */
export class Supervisor {
  private worker: Worker | null = null;
  private crashes = 0;
  private lastCrashAt = Number.NEGATIVE_INFINITY;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private readonly backoff: BackoffPolicy;
  private readonly now: () => number;

  constructor(
    private readonly spec: ThreadSpec,
    private readonly deps: SupervisorDeps,
  ) {
    this.backoff = deps.backoff ?? RESTART_BACKOFF;
    this.now = deps.now ?? Date.now;
  }

  /** The running worker (null while waiting to restart, or after `stop`). */
  get current(): Worker | null {
    return this.worker;
  }

  /** Starts the thread. */
  start(): Worker {
    const worker = this.spec.spawn();
    this.worker = worker;
    const name = `${this.spec.kind}${this.spec.kind === 'refresh' ? '' : `-${this.spec.index}`}`;
    worker.on('error', (err) => this.deps.log.error({ err, thread: name }, 'thread failed'));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = null;
      if (this.stopping) return;
      const delay = this.nextDelay();
      this.deps.restarts.inc({ kind: this.spec.kind });
      this.deps.log.fatal({ thread: name, code, restartInMs: delay }, 'thread exited unexpectedly; restarting');
      this.spec.onCrash?.();
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (this.stopping) return;
        const fresh = this.start();
        this.spec.onRestart?.(fresh);
      }, delay);
    });
    return worker;
  }

  /** Kills the thread as a crash would (operations drills and tests of the restart path). */
  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  /**
   * Stops the thread for good: posts `closeMessage` (the thread finishes its
   * work and exits), terminating it after `timeoutMs` if it does not.
   */
  async stop(closeMessage: unknown, timeoutMs: number): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== null) clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage(closeMessage);
    const timer = setTimeout(() => void worker.terminate(), timeoutMs);
    await exited;
    clearTimeout(timer);
  }

  private nextDelay(): number {
    const now = this.now();
    if (now - this.lastCrashAt > this.backoff.resetAfterMs) this.crashes = 0;
    this.lastCrashAt = now;
    return Math.min(this.backoff.maxMs, this.backoff.baseMs * 2 ** this.crashes++);
  }
}
