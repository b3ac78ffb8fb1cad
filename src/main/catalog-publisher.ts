/**
 * Applies the refresh worker's events on the main thread: keeps the route
 * status board, sends each new snapshot to its owning shard (which publishes
 * it to every acceptor), removes dropped routes, and tells the acceptors
 * about route-set and state changes. One install per route is in flight at a
 * time; if newer snapshots arrive meanwhile, only the newest is installed next.
 */
import { EventEmitter } from 'node:events';
import type { CatalogSource } from '../shared/catalog/types.js';
import type { Logger } from '../shared/log.js';
import { shardFor } from '../shared/route-hash.js';
import { decodeSnapshot } from '../shared/snapshot/layout.js';
import type { RefreshEvent } from '../shared/threads/messages.js';
import type { RouteStatusBoard } from './route-status.js';
import type { ShardHandle } from './shard-pool.js';

interface PendingInstall {
  snapshot: SharedArrayBuffer;
  source: CatalogSource;
  warning: string | null;
  listChanged: boolean;
}

/** Events for other parts of the process (a future push channel listens to `list-changed`). */
export interface CatalogEvents {
  'list-changed': [routeKey: string, revision: string];
  'initial-load-complete': [];
  'state-changed': [];
}

/** Turns refresh events into installs and directory/readiness updates. */
export class CatalogPublisher extends EventEmitter<CatalogEvents> {
  private readonly installing = new Map<string, PendingInstall | null>();
  /** What each route's shard last installed, to install again into a restarted shard. */
  private readonly installed = new Map<string, PendingInstall>();
  /** False until the first route list arrived: unknown route keys answer 503 meanwhile. */
  directoryLoaded = false;

  constructor(
    private readonly board: RouteStatusBoard,
    private readonly shards: readonly ShardHandle[],
    private readonly log: Logger,
  ) {
    super();
  }

  /** Revisions currently served, handed to a restarted refresh worker. */
  publishedRevisions(): Record<string, string> {
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
        for (const routeKey of event.routeKeys) this.board.add(routeKey, shardFor(routeKey, this.shards.length));
        for (const routeKey of event.removed) {
          const shard = this.board.get(routeKey)?.shard;
          this.board.remove(routeKey);
          this.installed.delete(routeKey);
          if (shard !== undefined) this.shards[shard]?.remove(routeKey);
          this.log.info({ route: routeKey }, 'route removed by the registry');
        }
        this.directoryLoaded = true;
        this.emit('state-changed');
        break;
      case 'route-snapshot':
        this.enqueueInstall(event.routeKey, { snapshot: event.snapshot, source: event.source, warning: event.warning, listChanged: event.listChanged });
        break;
      case 'route-unchanged':
        this.board.unchanged(event.routeKey, event.source, event.warning);
        this.emit('state-changed');
        break;
      case 'route-failed':
        this.board.failed(event.routeKey, { code: event.code, message: event.message, conflicts: event.conflicts });
        this.emit('state-changed');
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
        this.emit('state-changed');
        break;
      case 'redis-problem':
        this.board.setRedisProblem(event.subject, event.message);
        break;
      case 'initial-load-complete':
        // Installs already sent finish first, so "ready" never precedes the snapshots it announces.
        void this.settled().then(() => {
          this.board.completeInitialLoad();
          this.emit('state-changed');
          this.emit('initial-load-complete');
        });
        break;
    }
  }

  /** A restarted shard starts empty: install again every route it owned (no list change: the catalogs are the same). */
  reinstallShard(index: number): void {
    for (const [routeKey, item] of this.installed) {
      if (this.board.get(routeKey)?.shard === index) this.enqueueInstall(routeKey, { ...item, listChanged: false });
    }
  }

  /** Resolves when no install is in flight. */
  async settled(): Promise<void> {
    while (this.installing.size > 0) await new Promise((r) => setTimeout(r, 2));
  }

  private enqueueInstall(routeKey: string, item: PendingInstall): void {
    if (this.installing.has(routeKey)) {
      this.installing.set(routeKey, item);
      return;
    }
    this.installing.set(routeKey, null);
    void this.install(routeKey, item);
  }

  private async install(routeKey: string, item: PendingInstall): Promise<void> {
    const status = this.board.get(routeKey);
    const shard = status === undefined ? undefined : this.shards[status.shard];
    if (shard !== undefined) {
      const answer = await shard.install(routeKey, item.snapshot);
      if (!this.board.has(routeKey)) shard.remove(routeKey); // removed while installing
      else if (answer.type === 'installed') {
        this.installed.set(routeKey, item);
        const meta = decodeSnapshot(item.snapshot).meta;
        this.board.succeeded(routeKey, { toolCount: meta.toolCount, revision: meta.revision, source: item.source, builtAt: meta.builtAt }, item.warning);
        // Announced only once the new catalog is what requests see.
        if (item.listChanged) this.emit('list-changed', routeKey, meta.revision);
      } else {
        // A shard that died mid-install gets this snapshot when it is restarted.
        if (answer.error.code === 'SHARD_UNAVAILABLE') this.installed.set(routeKey, item);
        this.board.failed(routeKey, { code: answer.error.code, message: answer.error.message });
      }
      this.emit('state-changed');
    }
    const next = this.installing.get(routeKey);
    if (next) {
      this.installing.set(routeKey, null);
      void this.install(routeKey, next);
    } else this.installing.delete(routeKey);
  }
}
