/**
 * Carries route state and readiness from the main thread to every acceptor:
 * acceptor 0 (on this thread) by direct call, the others by one message per
 * flush. Changes come in bursts (a refresh cycle installs many routes), so
 * they are collected per route — the newest update of each route wins, a
 * route's updates keep their order — and flushed once per event-loop turn.
 * Nothing is compared by re-serialising the directory: only routes marked
 * dirty travel.
 */
import type { Worker } from 'node:worker_threads';
import type { MainToAcceptor, RouteUnavailable, RouteUpdate } from '../shared/threads/messages.js';
import type { Acceptor } from './acceptor.js';
import type { RouteFanout } from './catalog-installer.js';

/** What the fanout reads when it flushes. */
export interface FanoutSource {
  readonly directoryLoaded: boolean;
  pendingReason(): RouteUnavailable;
  allRoutes(): RouteUpdate[];
  readiness(): { status: number; body: string };
}

/** The main thread's one channel of route state to acceptors. */
export class AcceptorFanout implements RouteFanout {
  private readonly dirty = new Map<string, RouteUpdate>();
  /** Routes whose tools/list changed since the last flush; delivered after the route updates of the same flush. */
  private readonly changedLists = new Set<string>();
  private stateDirty = true;
  private scheduled = false;
  private lastLoaded: boolean | null = null;
  private lastPending = '';
  private lastReadiness = '';
  private source: FanoutSource | null = null;
  private readonly workers = new Set<Worker>();

  constructor(private readonly acceptor0: Acceptor) {}

  /** Connects the state this fanout publishes (set once, at composition). */
  attach(source: FanoutSource): void {
    this.source = source;
  }

  /** An acceptor thread to keep up to date; a new or restarted one first gets the whole directory. */
  addWorker(worker: Worker): void {
    this.workers.add(worker);
    const source = this.source;
    if (source === null) return;
    post(worker, { type: 'routes', updates: source.allRoutes(), loaded: source.directoryLoaded, pending: source.pendingReason() });
    const r = source.readiness();
    post(worker, { type: 'readiness', status: r.status, body: r.body });
  }

  /** Stops sending to an acceptor thread that exited. */
  removeWorker(worker: Worker): void {
    this.workers.delete(worker);
  }

  update(update: RouteUpdate): void {
    // Delete first so that a route that changes again moves behind the others changed since (per-route order is all that matters).
    this.dirty.delete(update.routeKey);
    this.dirty.set(update.routeKey, update);
    this.schedule();
  }

  stateChanged(): void {
    this.stateDirty = true;
    this.schedule();
  }

  /**
   * A route's tools/list changed (CatalogInstaller `list-changed`, emitted
   * after its update was queued here). Sent in the same flush, after the
   * route updates, so every acceptor serves the new snapshot before its
   * subscribers hear of it.
   */
  listChanged(routeKey: string): void {
    this.changedLists.add(routeKey);
    this.schedule();
  }

  /** Sends everything pending now (readiness turning 200 must reach every acceptor before `initialLoad()` resolves). */
  flush(): void {
    this.scheduled = false;
    const source = this.source;
    if (source === null) return;
    const updates = [...this.dirty.values()];
    this.dirty.clear();
    const loaded = source.directoryLoaded;
    const pending = source.pendingReason();
    const pendingKey = `${pending.code}\u0000${pending.message}`;
    const directoryChanged = updates.length > 0 || loaded !== this.lastLoaded || pendingKey !== this.lastPending;
    this.lastLoaded = loaded;
    this.lastPending = pendingKey;
    if (directoryChanged) this.acceptor0.applyRoutes(updates, loaded, pending);
    const changed = this.changedLists.size > 0 ? [...this.changedLists] : null;
    this.changedLists.clear();
    if (changed !== null) this.acceptor0.listChanged(changed);
    if (this.workers.size === 0) {
      this.stateDirty = false;
      return;
    }
    let readiness: { status: number; body: string } | null = null;
    if (this.stateDirty) {
      // Rendered only when something changed; acceptor 0 reads it directly on each probe.
      const r = source.readiness();
      if (r.body !== this.lastReadiness) readiness = r;
      this.lastReadiness = r.body;
      this.stateDirty = false;
    }
    for (const w of this.workers) {
      if (directoryChanged) post(w, { type: 'routes', updates, loaded, pending });
      if (changed !== null) post(w, { type: 'list-changed', routeKeys: changed });
      if (readiness !== null) post(w, { type: 'readiness', status: readiness.status, body: readiness.body });
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }
}

function post(worker: Worker, msg: MainToAcceptor): void {
  worker.postMessage(msg);
}
