/**
 * One refresh cycle, and the state kept between cycles (SPEC §4): the
 * registry (Portal → memory → Redis copy, or the static config), each Tool
 * Service's last good manifest with backoff, the revision published per
 * route, and the mass-removal guard. Every route is refreshed in isolation:
 * nothing one route does can stop another's refresh (seed defect 1).
 *
 * No threads and no timers here: the refresh worker drives `cycle()` and
 * forwards the events; tests call it directly.
 */
import { fetchManifestIfChanged } from './fetch-manifest.js';
import { validateManifest, type ManifestPolicy } from '../../shared/catalog/manifest.js';
import { mergeRoute, type ServiceTools } from '../../shared/catalog/merge.js';
import { parseRegistry, staticRegistry, type Registry } from '../../shared/catalog/registry.js';
import type { CatalogSource, CatalogTool } from '../../shared/catalog/types.js';
import type { GatewayConfig, ServiceEntry } from '../../shared/config/schema.js';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import { decodeSnapshot, encodeSnapshot, snapshotMeta } from '../../shared/snapshot/layout.js';
import type { RefreshEvent } from '../../shared/threads/messages.js';
import type { PortalClient } from './portal-client.js';
import type { RedisStore } from './redis-store.js';
import { Semaphore } from './semaphore.js';

/** What a refresher needs from outside. */
export interface RefresherDeps {
  config: GatewayConfig;
  emit(event: RefreshEvent): void;
  portal: PortalClient | null;
  redis: RedisStore | null;
  /** Revisions already being served (after a refresh-worker restart), so unchanged routes are not re-published. */
  published?: Readonly<Record<string, string>>;
  now?: () => number;
}

/** Per Tool Service: the last good tools and the backoff state. */
interface ServiceState {
  tools: CatalogTool[] | null;
  /** ETag of the manifest `tools` came from: the next fetch is conditional. */
  etag: string | null;
  failures: number;
  nextAttemptAt: number;
  lastError: string | null;
}

/** A Tool Service's contribution this cycle: its tools (fresh or last good), and why not fresh. */
interface ServiceOutcome {
  entry: ServiceEntry;
  tools: CatalogTool[] | null;
  problem: { code: GatewayErrorCode; message: string } | null;
}

/** Summary of one cycle, for metrics and logs. */
export interface CycleReport {
  registry: 'portal' | 'unchanged' | 'redis' | 'memory' | 'static' | 'none';
  routes: number;
  published: number;
  failed: number;
  portalError: string | null;
  suspect: string | null;
}

/** Holds refresh state and runs cycles. */
export class Refresher {
  private registry: Registry | null = null;
  private registrySource: CatalogSource = 'static';
  private readonly published = new Map<string, string>();
  private readonly warmTried = new Set<string>();
  private readonly services = new Map<string, ServiceState>();
  private readonly limiter: Semaphore;
  private readonly policy: ManifestPolicy;
  private readonly now: () => number;
  private initialLoadDone = false;
  /** What is served, per route: its snapshot (to store in Redis) and the revision Redis holds. */
  private readonly snapshots = new Map<string, SharedArrayBuffer>();
  private readonly storedRevision = new Map<string, string>();
  /** The registry document last accepted from the Portal, and whether Redis holds it. */
  private registryDocument: { document: unknown; stored: boolean } | null = null;
  /** RedisStore.generation at the last sync: a reconnection means every copy is stored again. */
  private redisGeneration = -1;
  /** Manifest fetches of the current cycle, so a Tool Service shared by several routes is fetched once. */
  private inflight = new Map<string, Promise<ServiceOutcome>>();

  constructor(private readonly deps: RefresherDeps) {
    const { config } = deps;
    this.limiter = new Semaphore(config.catalog.manifestConcurrency);
    this.policy = {
      defaultTimeoutMs: config.tools.defaultTimeoutMs,
      maxTimeoutMs: config.tools.maxTimeoutMs,
      allowedExecutionOrigins: config.tools.allowedExecutionOrigins,
    };
    this.now = deps.now ?? Date.now;
    for (const [k, v] of Object.entries(deps.published ?? {})) this.published.set(k, v);
  }

  /** Runs one cycle. Never throws for upstream trouble: failures become events. */
  async cycle(): Promise<CycleReport> {
    const report: CycleReport = { registry: 'none', routes: 0, published: 0, failed: 0, portalError: null, suspect: null };
    this.inflight = new Map();
    await this.refreshRegistry(report);
    const registry = this.registry;
    if (registry === null) return report;
    const keys = Object.keys(registry.routes);
    report.routes = keys.length;
    await Promise.all(
      keys.map(async (routeKey) => {
        try {
          const outcome = await this.refreshRoute(routeKey, registry.routes[routeKey] ?? []);
          if (outcome === 'published') report.published++;
          if (outcome === 'failed') report.failed++;
        } catch (err) {
          // A bug in one route's refresh must not stop the others.
          report.failed++;
          this.deps.emit({ type: 'route-failed', routeKey, code: GatewayErrorCode.ManifestInvalid, message: `refresh crashed: ${String(err)}`, conflicts: [] });
        }
      }),
    );
    for (const [routeKey, reason] of Object.entries(registry.rejected)) {
      report.failed++;
      this.deps.emit({ type: 'route-failed', routeKey, code: GatewayErrorCode.RouteEntryInvalid, message: `route "${routeKey}": ${reason}`, conflicts: [] });
    }
    if (!this.initialLoadDone) {
      this.initialLoadDone = true;
      this.deps.emit({ type: 'initial-load-complete' });
    }
    await this.syncRedis();
    return report;
  }

  private async refreshRegistry(report: CycleReport): Promise<void> {
    const { config, portal, redis, emit } = this.deps;
    if (config.catalog.source === 'static' || portal === null) {
      if (this.registry === null) this.applyRegistry(staticRegistry(config.catalog.static.routes), 'static');
      report.registry = 'static';
      return;
    }
    let portalError: string | null = null;
    try {
      const poll = await portal.poll();
      if (poll.kind === 'unchanged') report.registry = 'unchanged';
      else {
        let next: Registry;
        try {
          next = parseRegistry(poll.document);
        } catch (err) {
          // Not a registry: forget its ETag, or the next poll's 304 would hide the failure.
          portal.resetEtag();
          throw err;
        }
        const suspect = this.removalSuspect(next);
        if (suspect !== null) {
          report.suspect = suspect;
          // Fetch the whole document again next time rather than trusting a 304 of the suspect one.
          portal.resetEtag();
        } else {
          this.applyRegistry(next, 'portal');
          report.registry = 'portal';
          this.registryDocument = { document: poll.document, stored: false };
        }
      }
    } catch (err) {
      portalError = GatewayError.is(err) ? err.message : String(err);
      report.portalError = portalError;
      report.registry = this.registry === null ? 'none' : 'memory';
      if (this.registry === null && redis !== null) await this.loadRegistryFromRedis(report);
    }
    emit({
      type: 'registry-status',
      portalUp: portalError === null,
      portalError,
      redisUp: redis === null ? null : redis.connected,
      suspect: report.suspect,
      revision: this.registry?.revision ?? null,
      source: this.registry === null ? null : this.registrySource,
    });
  }

  private async loadRegistryFromRedis(report: CycleReport): Promise<void> {
    const redis = this.deps.redis;
    if (redis === null) return;
    const copy = await redis.loadRegistry();
    if ('document' in copy) {
      try {
        this.applyRegistry(parseRegistry(copy.document), 'redis');
        report.registry = 'redis';
      } catch (err) {
        this.deps.emit({ type: 'redis-problem', subject: 'registry', message: `registry copy rejected: ${GatewayError.is(err) ? err.message : String(err)}` });
      }
    } else if (copy.kind !== 'missing') {
      this.deps.emit({ type: 'redis-problem', subject: 'registry', message: `registry copy unusable: ${copy.message}` });
    }
  }

  /**
   * A registry that would remove more than `catalog.maxRouteRemovalRatio` of
   * the known routes at once (an empty document from a broken Portal, say)
   * is suspect and not obeyed.
   */
  private removalSuspect(next: Registry): string | null {
    if (this.registry === null) return null;
    const before = new Set([...Object.keys(this.registry.routes), ...Object.keys(this.registry.rejected)]);
    if (before.size === 0) return null;
    const after = new Set([...Object.keys(next.routes), ...Object.keys(next.rejected)]);
    const removed = [...before].filter((k) => !after.has(k)).length;
    const ratio = removed / before.size;
    const max = this.deps.config.catalog.maxRouteRemovalRatio;
    if (ratio <= max) return null;
    return `registry revision "${next.revision}" would remove ${removed} of ${before.size} routes (${(ratio * 100).toFixed(0)}% > catalog.maxRouteRemovalRatio ${max * 100}%); ignored`;
  }

  private applyRegistry(next: Registry, source: CatalogSource): void {
    const routes = [...Object.keys(next.routes), ...Object.keys(next.rejected)].sort();
    const removed = this.registry === null ? [] : [...Object.keys(this.registry.routes), ...Object.keys(this.registry.rejected)].filter((k) => !routes.includes(k));
    for (const k of removed) {
      this.published.delete(k);
      this.warmTried.delete(k);
      this.snapshots.delete(k);
    }
    this.registry = next;
    this.registrySource = source;
    this.pruneServices(next);
    this.deps.emit({ type: 'routes', routeKeys: routes, removed });
  }

  private pruneServices(registry: Registry): void {
    const live = new Set(Object.values(registry.routes).flatMap((entries) => entries.map(serviceKey)));
    for (const key of [...this.services.keys()]) if (!live.has(key)) this.services.delete(key);
  }

  private async refreshRoute(routeKey: string, entries: ServiceEntry[]): Promise<'published' | 'unchanged' | 'failed'> {
    const { emit, config, redis } = this.deps;
    const outcomes = await Promise.all(entries.map((e) => this.serviceTools(e)));
    const unusable = outcomes.filter((o) => o.tools === null);
    if (unusable.length > 0) {
      const message = `route "${routeKey}" not replaced: ${unusable.map((o) => o.problem?.message ?? `Tool Service "${o.entry.id}" has no usable manifest`).join('; ')}`;
      const code = unusable[0]?.problem?.code ?? GatewayErrorCode.ManifestUnreachable;
      if (!this.published.has(routeKey)) await this.warmStart(routeKey);
      emit({ type: 'route-failed', routeKey, code, message, conflicts: [] });
      return 'failed';
    }
    const services: ServiceTools[] = outcomes.map((o) => ({ serviceId: o.entry.id, tools: o.tools as CatalogTool[] }));
    let catalog;
    try {
      catalog = mergeRoute(routeKey, services, { maxToolsPerRoute: config.catalog.maxToolsPerRoute, source: this.registrySource, now: this.now() });
    } catch (err) {
      const e = GatewayError.is(err) ? err : new GatewayError(GatewayErrorCode.ManifestInvalid, String(err));
      if (!this.published.has(routeKey)) await this.warmStart(routeKey);
      emit({ type: 'route-failed', routeKey, code: e.code, message: e.message, conflicts: e.code === GatewayErrorCode.ToolNameConflict ? [...e.details] : [] });
      return 'failed';
    }
    const degraded = outcomes.filter((o) => o.problem !== null).map((o) => o.problem?.message ?? '');
    const warning = degraded.length > 0 ? `serving last good manifest: ${degraded.join('; ')}` : null;
    const previous = this.published.get(routeKey);
    if (previous === catalog.revision) {
      emit({ type: 'route-unchanged', routeKey, source: this.registrySource, warning });
      return 'unchanged';
    }
    const snapshot = encodeSnapshot(catalog);
    const before = this.snapshots.get(routeKey);
    this.published.set(routeKey, catalog.revision);
    this.snapshots.set(routeKey, snapshot);
    // A new revision need not change what tools/list shows (a timeout, an execution address): only then is it a list change.
    const listChanged = previous !== undefined && (before === undefined || !sameListBytes(before, snapshot));
    emit({ type: 'route-snapshot', routeKey, snapshot, meta: snapshotMeta(catalog), source: this.registrySource, warning, listChanged });
    return 'published';
  }

  /** First catalog of a route failed: serve its Redis snapshot if there is a good one (once per route). */
  private async warmStart(routeKey: string): Promise<void> {
    const redis = this.deps.redis;
    if (redis === null || this.warmTried.has(routeKey)) return;
    this.warmTried.add(routeKey);
    const copy = await redis.loadSnapshot(routeKey);
    if ('view' in copy) {
      this.published.set(routeKey, copy.view.meta.revision);
      this.snapshots.set(routeKey, copy.view.buffer);
      this.storedRevision.set(routeKey, copy.view.meta.revision);
      this.deps.emit({ type: 'route-snapshot', routeKey, snapshot: copy.view.buffer, meta: copy.view.meta, source: 'redis', warning: 'warm start from the Redis copy', listChanged: false });
    } else if (copy.kind !== 'missing') {
      this.deps.emit({ type: 'redis-problem', subject: routeKey, message: `snapshot of route "${routeKey}" ignored: ${copy.message}` });
    }
  }

  /**
   * Brings Redis up to date with what is served: every snapshot whose
   * revision Redis does not hold, and the last accepted registry. Runs each
   * cycle, so copies that failed (Redis down, not yet connected) are stored
   * once Redis is back, not only when something changes.
   */
  private async syncRedis(): Promise<void> {
    const { redis, emit } = this.deps;
    if (redis === null || !redis.connected) return;
    if (redis.generation !== this.redisGeneration) {
      // A restarted Redis without persistence is empty: what it held before proves nothing now.
      this.redisGeneration = redis.generation;
      this.storedRevision.clear();
      if (this.registryDocument !== null) this.registryDocument.stored = false;
    }
    const doc = this.registryDocument;
    if (doc !== null && !doc.stored) {
      doc.stored = await redis.saveRegistry(doc.document);
      emit({ type: 'redis-problem', subject: 'registry', message: doc.stored ? null : 'could not store the registry copy' });
    }
    await Promise.all(
      [...this.snapshots].map(async ([routeKey, snapshot]) => {
        const revision = this.published.get(routeKey);
        if (revision === undefined || this.storedRevision.get(routeKey) === revision) return;
        const ok = await redis.saveSnapshot(routeKey, snapshot);
        if (ok) this.storedRevision.set(routeKey, revision);
        emit({ type: 'redis-problem', subject: routeKey, message: ok ? null : `could not store the snapshot of route "${routeKey}"` });
      }),
    );
  }

  private serviceTools(entry: ServiceEntry): Promise<ServiceOutcome> {
    const key = serviceKey(entry);
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const outcome = this.loadService(key, entry);
    this.inflight.set(key, outcome);
    return outcome;
  }

  private loadService(key: string, entry: ServiceEntry): Promise<ServiceOutcome> {
    let state = this.services.get(key);
    if (state === undefined) {
      state = { tools: null, etag: null, failures: 0, nextAttemptAt: 0, lastError: null };
      this.services.set(key, state);
    }
    const s = state;
    if (s.tools !== null && s.nextAttemptAt > this.now()) {
      return Promise.resolve({ entry, tools: s.tools, problem: { code: GatewayErrorCode.ManifestUnreachable, message: `Tool Service "${entry.id}" backing off after: ${s.lastError ?? 'failure'}` } });
    }
    const { config } = this.deps;
    return this.limiter.run(async () => {
      try {
        const fetched = await fetchManifestIfChanged(entry, {
          timeoutMs: config.catalog.manifestTimeoutMs,
          maxBytes: config.catalog.maxManifestBytes,
          etag: s.tools !== null ? s.etag : null,
        });
        if (fetched.kind === 'not-modified' && s.tools !== null) {
          Object.assign(s, { failures: 0, nextAttemptAt: 0, lastError: null });
          return { entry, tools: s.tools, problem: null };
        }
        const raw = fetched.kind === 'manifest' ? fetched.manifest : undefined;
        const result = validateManifest(raw, entry, this.policy);
        if (!result.ok) {
          throw new GatewayError(GatewayErrorCode.ManifestInvalid, `Tool Service "${entry.id}" manifest is invalid: ${result.problems.join('; ')}`, result.problems);
        }
        Object.assign(s, { tools: result.tools, etag: fetched.kind === 'manifest' ? fetched.etag : null, failures: 0, nextAttemptAt: 0, lastError: null });
        return { entry, tools: result.tools, problem: null };
      } catch (err) {
        const e = GatewayError.is(err) ? err : new GatewayError(GatewayErrorCode.ManifestUnreachable, String(err));
        s.failures++;
        const backoff = Math.min(config.catalog.manifestMaxBackoffMs, config.catalog.refreshIntervalMs * 2 ** (s.failures - 1));
        s.nextAttemptAt = this.now() + backoff;
        s.lastError = e.message;
        return { entry, tools: s.tools, problem: { code: e.code, message: e.message } };
      }
    });
  }
}

function sameListBytes(a: SharedArrayBuffer, b: SharedArrayBuffer): boolean {
  return Buffer.from(decodeSnapshot(a).listTemplate).equals(Buffer.from(decodeSnapshot(b).listTemplate));
}

function serviceKey(entry: ServiceEntry): string {
  return `${entry.id}\u0000${entry.baseUrl}\u0000${entry.manifestPath ?? '/manifest'}`;
}
