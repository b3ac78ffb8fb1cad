/**
 * The main thread's single writer of route state. It applies the refresh
 * worker's events: keeps one {@link RouteRecord} per route, installs each
 * new snapshot on the owning shard (one install per route in flight; if
 * newer snapshots arrive meanwhile, only the newest is installed next),
 * feeds the readiness board, and tells the acceptors — through the
 * {@link RouteFanout}, the only channel that carries route state to them —
 * what each route serves.
 *
 * Ordering invariant: **a shard installs a snapshot before any acceptor can
 * see it.** An acceptor learns about a snapshot only in `onInstalled`, after
 * the shard acknowledged it; a call for that snapshot's tools therefore
 * always finds them on the shard.
 */
import { EventEmitter } from 'node:events';
import type { CatalogSource } from '../shared/catalog/types.js';
import { GatewayErrorCode } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { shardFor } from '../shared/route-hash.js';
import type { SnapshotMeta } from '../shared/snapshot/layout.js';
import type { RefreshEvent, RouteUnavailable, RouteUpdate } from '../shared/threads/messages.js';
import type { RouteStatusBoard } from './route-status.js';
import type { InstallAnswer, ShardThread } from './shard-thread.js';

/** Where route updates go (every acceptor). */
export interface RouteFanout {
  /** One route changed; delivered to every acceptor in order. */
  update(update: RouteUpdate): void;
  /** Readiness or the directory's loaded state changed. */
  stateChanged(): void;
}

/** A snapshot handed to the shard, and what readiness records once it is installed. */
interface Install {
  record: RouteRecord;
  snapshot: SharedArrayBuffer;
  meta: SnapshotMeta;
  source: CatalogSource;
  warning: string | null;
  listChanged: boolean;
}

/** A route as main knows it. A removed and re-added route gets a new record, so a late install answer for the old one is recognised. */
interface RouteRecord {
  readonly routeKey: string;
  readonly shard: number;
  /** The install its shard acknowledged: what acceptors serve. */
  served: Install | null;
  /** What a restarted shard must install: the newest snapshot handed over, unless the shard refused it (then `served`). */
  wanted: Install | null;
  /** Why there is nothing to serve, while `served` is null and a build failed. */
  unavailable: RouteUnavailable | null;
}

/** Per route key (across records): one install in flight, the newest waiting. */
interface InstallQueue {
  next: Install | null;
}

/** Catalog events for other parts of the process. */
export interface CatalogEvents {
  /** A route's tools/list changed and the new catalog is what requests see. */
  'list-changed': [routeKey: string, revision: string];
  'initial-load-complete': [];
}

/** Turns refresh events into installs, readiness and route updates. */
export class CatalogInstaller extends EventEmitter<CatalogEvents> {
  private readonly records = new Map<string, RouteRecord>();
  private readonly queues = new Map<string, InstallQueue>();
  private idleWaiters: Array<() => void> = [];
  /** False until the first route list arrived: unknown route keys answer 503 meanwhile. */
  private loaded = false;

  constructor(
    private readonly board: RouteStatusBoard,
    private readonly shards: readonly ShardThread[],
    private readonly fanout: RouteFanout,
    private readonly log: Logger,
  ) {
    super();
  }

  /** Whether a route list is known. */
  get directoryLoaded(): boolean {
    return this.loaded;
  }

  /** What a route key answers while the registry is not known. */
  pendingReason(): RouteUnavailable {
    const portalError = this.board.registryStatus.portalError;
    return portalError === null
      ? { code: GatewayErrorCode.CatalogPending, message: 'the route directory is not loaded yet' }
      : { code: GatewayErrorCode.PortalUnreachable, message: `the route directory is not loaded yet (${portalError})` };
  }

  /** Every route as an update, for an acceptor that starts from nothing (a restarted acceptor thread). */
  allRoutes(): RouteUpdate[] {
    return [...this.records.values()].map((r) => this.updateOf(r));
  }

  /** Revisions currently served, handed to a restarted refresh worker. */
  servedRevisions(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const k of this.board.keys()) {
      const rev = this.board.get(k)?.revision;
      if (rev) out[k] = rev;
    }
    return out;
  }

  /** Applies one refresh event. */
  handle(event: RefreshEvent): void {
    switch (event.type) {
      case 'routes':
        for (const routeKey of event.routeKeys) this.add(routeKey);
        for (const routeKey of event.removed) this.remove(routeKey);
        this.loaded = true;
        this.fanout.stateChanged();
        break;
      case 'route-snapshot': {
        const record = this.records.get(event.routeKey);
        if (record === undefined) {
          this.log.warn({ route: event.routeKey }, 'snapshot for a route that is not in the directory; ignored');
          break;
        }
        const { snapshot, meta, source, warning, listChanged } = event;
        this.enqueue({ record, snapshot, meta, source, warning, listChanged });
        break;
      }
      case 'route-unchanged':
        this.board.unchanged(event.routeKey, event.source, event.warning);
        this.fanout.stateChanged();
        break;
      case 'route-failed':
        this.board.failed(event.routeKey, { code: event.code, message: event.message, conflicts: event.conflicts });
        this.markUnavailable(event.routeKey, { code: event.code, message: event.message });
        this.fanout.stateChanged();
        break;
      case 'registry-status':
        this.board.setRegistry({
          portalUp: event.portalUp,
          portalError: event.portalError,
          redisUp: event.redisUp,
          suspect: event.suspect,
          revision: event.revision,
          source: event.source,
        });
        this.fanout.stateChanged();
        break;
      case 'redis-problem':
        this.board.setRedisProblem(event.subject, event.message);
        break;
      case 'initial-load-complete':
        // Installs already sent finish first, so "ready" never precedes the snapshots it announces.
        void this.idle().then(() => {
          this.board.completeInitialLoad();
          this.fanout.stateChanged();
          this.emit('initial-load-complete');
        });
        break;
    }
  }

  /** A restarted shard starts empty: installs again every route it owns; resolves when all are answered. */
  reinstallShard(index: number): Promise<void> {
    for (const record of this.records.values()) {
      if (record.shard === index && record.wanted !== null) this.enqueue({ ...record.wanted, listChanged: false });
    }
    return this.idle();
  }

  /** Resolves when no install is in flight. */
  idle(): Promise<void> {
    if (this.queues.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private add(routeKey: string): void {
    if (this.records.has(routeKey)) return;
    const record: RouteRecord = { routeKey, shard: shardFor(routeKey, this.shards.length), served: null, wanted: null, unavailable: null };
    this.records.set(routeKey, record);
    this.board.add(routeKey, record.shard);
    this.fanout.update(this.updateOf(record));
  }

  private remove(routeKey: string): void {
    const record = this.records.get(routeKey);
    if (record === undefined) return;
    this.records.delete(routeKey);
    this.board.remove(routeKey);
    // Acceptors stop routing to it first; an install still in flight is answered later and ignored (its record is gone).
    this.fanout.update({ routeKey, removed: true });
    this.shards[record.shard]?.remove(routeKey);
    this.log.info({ route: routeKey }, 'route removed by the registry');
  }

  private markUnavailable(routeKey: string, unavailable: RouteUnavailable): void {
    const record = this.records.get(routeKey);
    if (record === undefined || record.served !== null) return;
    record.unavailable = unavailable;
    this.fanout.update(this.updateOf(record));
  }

  private enqueue(install: Install): void {
    install.record.wanted = install;
    const queue = this.queues.get(install.record.routeKey);
    if (queue !== undefined) {
      queue.next = install;
      return;
    }
    this.queues.set(install.record.routeKey, { next: null });
    void this.install(install);
  }

  private async install(item: Install): Promise<void> {
    const routeKey = item.record.routeKey;
    const shard = this.shards[item.record.shard];
    if (shard !== undefined) this.onInstalled(item, await shard.install(routeKey, item.snapshot));
    const queue = this.queues.get(routeKey);
    const next = queue?.next ?? null;
    if (queue !== undefined && next !== null) {
      queue.next = null;
      void this.install(next);
      return;
    }
    this.queues.delete(routeKey);
    if (this.queues.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private onInstalled(item: Install, answer: InstallAnswer): void {
    const record = item.record;
    // A record that was removed (or replaced by a re-added route) meanwhile: the shard was told to remove it after this install.
    if (this.records.get(record.routeKey) !== record) return;
    if (answer.type === 'installed') {
      record.served = item;
      record.unavailable = null;
      this.board.succeeded(record.routeKey, { toolCount: item.meta.toolCount, revision: item.meta.revision, source: item.source, builtAt: item.meta.builtAt }, item.warning);
      // The invariant of this module: acceptors see a snapshot only after its shard installed it.
      this.fanout.update(this.updateOf(record));
      // Announced only once the new catalog is what requests see.
      if (item.listChanged) this.emit('list-changed', record.routeKey, item.meta.revision);
    } else {
      // A shard that died mid-install gets this snapshot when it is restarted; one that refused it keeps serving the last good one.
      if (answer.error.code !== GatewayErrorCode.ShardUnavailable && record.wanted === item) record.wanted = record.served;
      this.board.failed(record.routeKey, { code: answer.error.code, message: answer.error.message });
      if (record.served === null) {
        record.unavailable = { code: answer.error.code, message: answer.error.message };
        this.fanout.update(this.updateOf(record));
      }
    }
    this.fanout.stateChanged();
  }

  private updateOf(record: RouteRecord): RouteUpdate {
    return { routeKey: record.routeKey, shard: record.shard, snapshot: record.served?.snapshot ?? null, unavailable: record.served === null ? record.unavailable : null };
  }
}
