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

  /** The entry for a route key, if the route exists. */
  lookup = (routeKey: string): RouteEntry | undefined => this.routes.get(routeKey);

  /** Applies the full directory from the main thread: adds, updates and removes routes. */
  apply(entries: readonly DirectoryEntry[]): void {
    const keep = new Set<string>();
    for (const e of entries) {
      keep.add(e.routeKey);
      const current = this.routes.get(e.routeKey);
      const snapshot = current && current.shard === e.shard ? current.snapshot : null;
      this.routes.set(e.routeKey, { shard: e.shard, snapshot, unavailableReason: e.unavailableReason });
    }
    for (const key of [...this.routes.keys()]) if (!keep.has(key)) this.routes.delete(key);
  }

  /**
   * Swaps in a snapshot published by `shard`. Ignored for a route the
   * directory does not (yet) list: the main thread's directory decides which
   * routes exist, and it is applied before any install is sent.
   */
  publish(routeKey: string, shard: number, buffer: SharedArrayBuffer): void {
    const current = this.routes.get(routeKey);
    if (current === undefined || current.shard !== shard) return;
    this.routes.set(routeKey, { shard, snapshot: decodeSnapshot(buffer), unavailableReason: null });
  }

  /** Route keys, for diagnostics. */
  keys(): string[] {
    return [...this.routes.keys()];
  }
}
