/**
 * One acceptor thread's route directory: which routes exist, which shard
 * owns each, and the snapshot that shard installed. It has one writer — the
 * main thread's route updates, applied in order (acceptor 0 by direct call,
 * the others by message) — so it can never hold a snapshot for a route main
 * does not list. An entry is replaced whole on every change (one Map store):
 * a request that took an entry keeps a consistent route + snapshot pair to
 * its end.
 */
import type { HeaderParam } from '../shared/catalog/x-mcp-header.js';
import type { ListSource } from '../shared/protocol/answer.js';
import type { ModernListSource } from '../shared/protocol/answer-modern.js';
import type { RouteEntry } from '../shared/protocol/gate.js';
import { acceptorSections } from '../shared/snapshot/layout.js';
import type { RouteUnavailable, RouteUpdate } from '../shared/threads/messages.js';
import { templateWithRoom } from './list-templates.js';

/** What an acceptor answers from, in this thread's memory: both eras' `tools/list` templates and what modern requests check. */
export interface AcceptorSnapshot extends ListSource, ModernListSource {
  /** Legacy: `{"jsonrpc":"2.0","result":{…},"id":` — append `<id>}` to answer `tools/list`. */
  readonly listTemplate: Uint8Array;
  /** 2026-07-28: `{"jsonrpc":"2.0","result":{…,"ttlMs":` — append `<ttl>},"id":<id>}`. */
  readonly modernListTemplate: Uint8Array;
  readonly builtAt: number;
  readonly headerParams: ReadonlyMap<string, readonly HeaderParam[]> | null;
}

/** A directory entry as the gate sees it. */
export type AcceptorRoute = RouteEntry<AcceptorSnapshot>;

/** Routes known to one acceptor thread. */
export class RouteDirectory {
  private readonly routes = new Map<string, AcceptorRoute>();
  /** False until main has sent a route list: every valid route key answers 503 meanwhile, not 404. */
  private loaded = false;
  private pending: AcceptorRoute = { shard: 0, snapshot: null, unavailable: null };
  /** The SharedArrayBuffer each entry's template was copied from, so an unchanged snapshot is not copied again. */
  private readonly sources = new Map<string, SharedArrayBuffer>();

  /** The entry for a route key: undefined when the route does not exist. */
  readonly lookup = (routeKey: string): AcceptorRoute | undefined => this.routes.get(routeKey) ?? (this.loaded ? undefined : this.pending);

  /** Applies main's updates in order. */
  apply(updates: readonly RouteUpdate[], loaded: boolean, pending: RouteUnavailable): void {
    this.loaded = loaded;
    this.pending = { shard: 0, snapshot: null, unavailable: pending };
    for (const u of updates) {
      if ('removed' in u) {
        this.routes.delete(u.routeKey);
        this.sources.delete(u.routeKey);
        continue;
      }
      this.routes.set(u.routeKey, { shard: u.shard, snapshot: this.snapshotFor(u.routeKey, u.snapshot), unavailable: u.unavailable });
    }
  }

  /**
   * The `tools/list` templates are copied once per publication into this
   * thread's memory: V8 copies out of a SharedArrayBuffer element by element,
   * and doing that for every answer cost 48.5 vs 31 µs CPU per 50-tool
   * `tools/list` (ADR-0003). The copies are as immutable as the snapshot
   * (but for the room after each, where answers append their tail:
   * list-templates.ts); with two eras a route costs two templates per
   * acceptor thread.
   */
  private snapshotFor(routeKey: string, buffer: SharedArrayBuffer | null): AcceptorSnapshot | null {
    if (buffer === null) {
      this.sources.delete(routeKey);
      return null;
    }
    const current = this.routes.get(routeKey)?.snapshot;
    if (current && this.sources.get(routeKey) === buffer) return current;
    this.sources.set(routeKey, buffer);
    const s = acceptorSections(buffer);
    return { listTemplate: templateWithRoom(s.listTemplate), modernListTemplate: templateWithRoom(s.modernListTemplate), builtAt: s.builtAt, headerParams: s.headerParams };
  }
}
