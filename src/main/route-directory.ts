/**
 * The acceptor's in-memory route directory: which routes exist, which shard
 * owns each, and the snapshot that shard last published. An entry is replaced
 * whole on every change (one Map store), so a request that took an entry
 * keeps a consistent route + snapshot pair to its end.
 */
import { decodeSnapshot, type SnapshotView } from '../shared/snapshot/layout.js';
import type { DirectoryEntry } from '../shared/threads/messages.js';
import type { RouteLookup } from '../shared/protocol/gate.js';

/** A directory entry as the gate sees it. */
export type RouteEntry = Readonly<RouteLookup<SnapshotView>>;

/** Routes known to one acceptor thread. */
export class RouteDirectory {
  private readonly routes = new Map<string, RouteEntry>();
  /** Snapshots published for routes this thread's directory does not list yet (messages on different ports race). */
  private readonly unclaimed = new Map<string, { shard: number; snapshot: SnapshotView }>();
  /** False until the main thread has sent a route list: then every route key answers 503, not 404. */
  private loaded = false;
  private notLoaded: RouteEntry = { shard: 0, snapshot: null, unavailableReason: 'the route directory is not loaded yet' };

  /** The entry for a route key: undefined when the route does not exist. */
  lookup = (routeKey: string): RouteEntry | undefined => this.routes.get(routeKey) ?? (this.loaded ? undefined : this.notLoaded);

  /**
   * Applies the full directory from the main thread: adds, updates and
   * removes routes. `loaded` false means the registry is not known yet
   * (Portal unreachable at a cold start): unknown keys then answer 503 with
   * `pendingReason`, since they may well exist.
   */
  apply(entries: readonly DirectoryEntry[], loaded = true, pendingReason?: string): void {
    this.loaded = loaded;
    if (pendingReason !== undefined) this.notLoaded = { shard: 0, snapshot: null, unavailableReason: pendingReason };
    const keep = new Set<string>();
    for (const e of entries) {
      keep.add(e.routeKey);
      const current = this.routes.get(e.routeKey);
      let snapshot = current && current.shard === e.shard ? current.snapshot : null;
      const stashed = this.unclaimed.get(e.routeKey);
      if (stashed !== undefined && stashed.shard === e.shard) {
        snapshot = stashed.snapshot;
        this.unclaimed.delete(e.routeKey);
      }
      this.routes.set(e.routeKey, { shard: e.shard, snapshot, unavailableReason: e.unavailableReason });
    }
    for (const key of [...this.routes.keys()]) if (!keep.has(key)) this.routes.delete(key);
  }

  /**
   * Swaps in a snapshot published by `shard` (one Map store). The
   * `tools/list` template is copied once, here, into this thread's memory:
   * V8 copies out of a SharedArrayBuffer with a slow element-wise path, and
   * doing that for every answer cost 48.5 vs 31 µs CPU per 50-tool
   * `tools/list` (ADR-0003). The copy is as immutable as the snapshot.
   */
  publish(routeKey: string, shard: number, buffer: SharedArrayBuffer): void {
    const shared = decodeSnapshot(buffer);
    const view: SnapshotView = { ...shared, listTemplate: Buffer.from(shared.listTemplate), catalogTools: shared.catalogTools };
    const current = this.routes.get(routeKey);
    if (current === undefined || current.shard !== shard) {
      this.unclaimed.set(routeKey, { shard, snapshot: view });
      return;
    }
    this.routes.set(routeKey, { shard, snapshot: view, unavailableReason: null });
  }


  /** Route keys, for diagnostics. */
  keys(): string[] {
    return [...this.routes.keys()];
  }
}
