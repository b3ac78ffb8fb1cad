/**
 * Keeps Redis (optional, docs/contracts/redis-v1.md) a copy of what is
 * served: the registry last accepted from the Portal and every route's
 * published snapshot, and reads a route's copy back for a warm start.
 *
 * Writes happen once per cycle ({@link RedisMirror.sync}) and only for what
 * Redis does not hold yet, so a copy that failed (Redis down, not yet
 * connected) is stored once Redis is back, not only when something changes.
 * A reconnection may be to an empty Redis (no persistence): everything is
 * stored again. Problems are reported per subject (`registry` or a route
 * key) and cleared by the next success for that subject.
 */
import type { SnapshotView } from '../../shared/snapshot/layout.js';
import type { RefreshEvent } from '../../shared/threads/messages.js';
import type { RedisStore } from './redis-store.js';

/** What the mirror reads and writes of one served route (a part of the refresher's route record). */
export interface MirroredRoute {
  /** The snapshot this worker serves for the route; `null` when it has none of its own. */
  readonly view: SnapshotView | null;
  /** The revision Redis holds for the route as far as this worker knows; `null` when unknown. */
  storedRevision: string | null;
}

/** The Redis side of the refresh state. */
export class RedisMirror {
  /** The registry document last accepted from the Portal, and whether Redis holds it. */
  private registryDocument: { document: unknown; stored: boolean } | null = null;
  /** RedisStore.generation at the last sync: a reconnection means every copy is stored again. */
  private generation = -1;

  constructor(private readonly deps: { redis: RedisStore | null; emit(event: RefreshEvent): void }) {}

  /** A Portal document was accepted: Redis gets it at the next sync. */
  registryAccepted(document: unknown): void {
    this.registryDocument = { document, stored: false };
  }

  /** The route's snapshot Redis holds, verified; a corrupt or foreign one is reported and `null`. */
  async loadSnapshot(routeKey: string): Promise<SnapshotView | null> {
    const redis = this.deps.redis;
    if (redis === null) return null;
    const copy = await redis.loadSnapshot(routeKey);
    if ('view' in copy) return copy.view;
    if (copy.kind !== 'missing') this.deps.emit({ type: 'redis-problem', subject: routeKey, message: `snapshot of route "${routeKey}" ignored: ${copy.message}` });
    return null;
  }

  /** Brings Redis up to date with what is served: the registry copy and every route snapshot Redis does not hold. */
  async sync(routes: ReadonlyMap<string, MirroredRoute>): Promise<void> {
    const { redis, emit } = this.deps;
    if (redis === null || !redis.connected) return;
    if (redis.generation !== this.generation) {
      // A restarted Redis without persistence is empty: what it held before proves nothing now.
      this.generation = redis.generation;
      for (const route of routes.values()) route.storedRevision = null;
      if (this.registryDocument !== null) this.registryDocument.stored = false;
    }
    const doc = this.registryDocument;
    if (doc !== null && !doc.stored) {
      doc.stored = await redis.saveRegistry(doc.document);
      emit({ type: 'redis-problem', subject: 'registry', message: doc.stored ? null : 'could not store the registry copy' });
    }
    await Promise.all(
      [...routes].map(async ([routeKey, route]) => {
        const view = route.view;
        if (view === null || route.storedRevision === view.meta.revision) return;
        const ok = await redis.saveSnapshot(routeKey, view.buffer);
        if (ok) route.storedRevision = view.meta.revision;
        emit({ type: 'redis-problem', subject: routeKey, message: ok ? null : `could not store the snapshot of route "${routeKey}"` });
      }),
    );
  }
}
