/**
 * Where the route list comes from (docs/contracts/portal-registry-v1.md,
 * docs/decisions/0007-catalog-refresh.md): the static config in static mode;
 * else the Portal (`If-None-Match`: an unchanged registry costs one 304) →
 * the registry already in memory when the Portal fails → the Redis copy
 * `{ns}:portal-registry` when nothing is in memory yet (a cold start). A
 * document that would remove more than `catalog.maxRouteRemovalRatio` of the
 * known routes is suspect and not obeyed (§4 of the registry contract).
 *
 * Emits `registry-status` once per poll (portal mode) and `routes` whenever
 * the route set is replaced; the orchestration learns what changed from the
 * returned {@link RegistryPoll}.
 */
import { parseRegistry, staticRegistry, type Registry } from '../../shared/catalog/registry.js';
import type { CatalogSource } from '../../shared/catalog/types.js';
import type { GatewayConfig } from '../../shared/config/schema.js';
import { GatewayError } from '../../shared/errors.js';
import type { RefreshEvent } from '../../shared/threads/messages.js';
import type { PortalClient } from './portal-client.js';
import type { RedisStore } from './redis-store.js';

/** How this cycle's registry was obtained. */
export type RegistryOutcome = 'portal' | 'unchanged' | 'redis' | 'memory' | 'static' | 'none';

/** A registry that replaced the previous one. */
export interface RegistryChange {
  registry: Registry;
  /** Route keys (usable or rejected) the previous registry had and this one has not. */
  removed: string[];
  /** The Portal document accepted (to copy into Redis); `null` when the registry came from the config or from Redis. */
  document: unknown;
}

/** What one poll produced. */
export interface RegistryPoll {
  outcome: RegistryOutcome;
  portalError: string | null;
  suspect: string | null;
  /** Set when the registry was replaced by this poll. */
  change: RegistryChange | null;
}

/** What a registry source needs from outside. */
export interface RegistrySourceDeps {
  config: GatewayConfig;
  emit(event: RefreshEvent): void;
  portal: PortalClient | null;
  redis: RedisStore | null;
}

/** Holds the registry in force and replaces it from the Portal, the config or Redis. */
export class RegistrySource {
  private registry: Registry | null = null;
  private registrySource: CatalogSource = 'static';

  constructor(private readonly deps: RegistrySourceDeps) {}

  /** The registry in force, `null` until one is known. */
  get current(): Registry | null {
    return this.registry;
  }

  /** Where the registry in force came from. */
  get source(): CatalogSource {
    return this.registrySource;
  }

  /** Polls once. Never throws for Portal or Redis trouble: it is reported in `registry-status`. */
  async poll(): Promise<RegistryPoll> {
    const { config, portal, redis, emit } = this.deps;
    if (config.catalog.source === 'static' || portal === null) {
      const change = this.registry === null ? this.apply(staticRegistry(config.catalog.static.routes), 'static', null) : null;
      return { outcome: 'static', portalError: null, suspect: null, change };
    }
    const result: RegistryPoll = { outcome: 'none', portalError: null, suspect: null, change: null };
    try {
      const poll = await portal.poll();
      if (poll.kind === 'unchanged') result.outcome = 'unchanged';
      else {
        let next: Registry;
        try {
          next = parseRegistry(poll.document);
        } catch (err) {
          // Not a registry: forget its ETag, or the next poll's 304 would hide the failure.
          portal.resetEtag();
          throw err;
        }
        result.suspect = this.removalSuspect(next);
        if (result.suspect !== null) {
          // Fetch the whole document again next time rather than trusting a 304 of the suspect one.
          portal.resetEtag();
        } else {
          result.change = this.apply(next, 'portal', poll.document);
          result.outcome = 'portal';
        }
      }
    } catch (err) {
      result.portalError = GatewayError.is(err) ? err.message : String(err);
      result.outcome = this.registry === null ? 'none' : 'memory';
      if (this.registry === null && redis !== null) {
        const fromRedis = await this.loadFromRedis(redis);
        if (fromRedis !== null) {
          result.change = fromRedis;
          result.outcome = 'redis';
        }
      }
    }
    emit({
      type: 'registry-status',
      portalUp: result.portalError === null,
      portalError: result.portalError,
      redisUp: redis === null ? null : redis.connected,
      suspect: result.suspect,
      revision: this.registry?.revision ?? null,
      source: this.registry === null ? null : this.registrySource,
    });
    return result;
  }

  /** Cold start with the Portal down: the last good registry Redis holds, if it is usable. */
  private async loadFromRedis(redis: RedisStore): Promise<RegistryChange | null> {
    const copy = await redis.loadRegistry();
    if ('document' in copy) {
      try {
        return this.apply(parseRegistry(copy.document), 'redis', null);
      } catch (err) {
        this.deps.emit({ type: 'redis-problem', subject: 'registry', message: `registry copy rejected: ${GatewayError.is(err) ? err.message : String(err)}` });
      }
    } else if (copy.kind !== 'missing') {
      this.deps.emit({ type: 'redis-problem', subject: 'registry', message: `registry copy unusable: ${copy.message}` });
    }
    return null;
  }

  /**
   * A registry that would remove more than `catalog.maxRouteRemovalRatio` of
   * the known routes at once (an empty document from a broken Portal, say)
   * is suspect and not obeyed.
   */
  private removalSuspect(next: Registry): string | null {
    if (this.registry === null) return null;
    const before = routeKeys(this.registry);
    if (before.length === 0) return null;
    const after = new Set(routeKeys(next));
    const removed = before.filter((k) => !after.has(k)).length;
    const ratio = removed / before.length;
    const max = this.deps.config.catalog.maxRouteRemovalRatio;
    if (ratio <= max) return null;
    return `registry revision "${next.revision}" would remove ${removed} of ${before.length} routes (${(ratio * 100).toFixed(0)}% > catalog.maxRouteRemovalRatio ${max * 100}%); ignored`;
  }

  private apply(next: Registry, source: CatalogSource, document: unknown): RegistryChange {
    const keys = routeKeys(next).sort();
    const kept = new Set(keys);
    const removed = this.registry === null ? [] : routeKeys(this.registry).filter((k) => !kept.has(k));
    this.registry = next;
    this.registrySource = source;
    this.deps.emit({ type: 'routes', routeKeys: keys, removed });
    return { registry: next, removed, document };
  }
}

/** Every route key a registry names: the usable routes and the rejected ones (readiness shows those as refused). */
export function routeKeys(registry: Registry): string[] {
  return [...Object.keys(registry.routes), ...Object.keys(registry.rejected)];
}
