/**
 * The routes this shard owns: one {@link RouteRuntime} per route key,
 * replaced with one Map store when a new snapshot is installed (a call that
 * already resolved its tool keeps the old runtime's objects to its end).
 * Argument validators are shared across routes and swaps through one
 * {@link ValidatorCache}.
 */
import { decodeSnapshot, type SnapshotMeta } from '../../shared/snapshot/layout.js';
import { RouteRuntime } from './route-runtime.js';
import { ValidatorCache } from './validator-cache.js';

/** Route key → runtime, for this shard thread only. */
export class RouteTable {
  private readonly routes = new Map<string, RouteRuntime>();
  private readonly validators = new ValidatorCache();

  /** Installs a snapshot (throws SNAPSHOT_CORRUPT for a damaged one; the previous runtime then stays). */
  install(routeKey: string, snapshot: SharedArrayBuffer): SnapshotMeta {
    const runtime = new RouteRuntime(decodeSnapshot(snapshot), this.validators);
    const previous = this.routes.get(routeKey);
    this.routes.set(routeKey, runtime);
    previous?.release();
    return runtime.snapshot.meta;
  }

  /** Drops a removed route; calls already running finish on the runtime they resolved. */
  remove(routeKey: string): void {
    this.routes.get(routeKey)?.release();
    this.routes.delete(routeKey);
  }

  /** The runtime serving `routeKey`, if this shard has one. */
  get(routeKey: string): RouteRuntime | undefined {
    return this.routes.get(routeKey);
  }
}
