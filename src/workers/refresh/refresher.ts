/**
 * One refresh cycle (docs/decisions/0007-catalog-refresh.md,
 * docs/architecture.md "Catalog build, refresh and publication"): the
 * registry from its {@link RegistrySource}, each route's Tool Services from
 * the {@link ManifestCache}, merge → encode → `route-snapshot` when the
 * catalog's revision changed, and the Redis copies through the
 * {@link RedisMirror}. Every route is refreshed in isolation: nothing one
 * route does — a failure, or a bug that throws — stops another's refresh.
 *
 * The state kept per route between cycles is one {@link RouteRecord} in one
 * map, created when the route is first seen and deleted when the registry no
 * longer names it.
 *
 * No threads and no timers here: the refresh worker drives `cycle()` and
 * forwards the events; tests call it directly.
 */
import { Buffer } from 'node:buffer';
import { mergeRoute, type MergedRoute, type ServiceTools } from '../../shared/catalog/merge.js';
import type { GatewayConfig, ServiceEntry } from '../../shared/config/schema.js';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import { decodeSnapshot, encodeSnapshot, type SnapshotView } from '../../shared/snapshot/layout.js';
import type { RefreshEvent } from '../../shared/threads/messages.js';
import { ManifestCache, type BugLog } from './manifest-cache.js';
import type { fetchManifestIfChanged } from './fetch-manifest.js';
import type { RefreshUpstreamAuth } from './upstream-auth.js';
import type { PortalClient } from './portal-client.js';
import { RedisMirror, type MirroredRoute } from './redis-mirror.js';
import type { RedisStore } from './redis-store.js';
import { RegistrySource, routeKeys, type RegistryChange, type RegistryOutcome } from './registry-source.js';

/** What a refresher needs from outside. */
export interface RefresherDeps {
  config: GatewayConfig;
  emit(event: RefreshEvent): void;
  portal: PortalClient | null;
  redis: RedisStore | null;
  /** Revisions already being served (after a refresh-worker restart), so unchanged routes are not re-published. */
  published?: Readonly<Record<string, string>>;
  now?: () => number;
  /** Where bugs (unexpected exceptions) are logged with their stack; default: nowhere. */
  log?: BugLog;
  /** Manifest fetch; tests replace it to make a load fail unexpectedly. */
  fetchManifest?: typeof fetchManifestIfChanged;
  /** Credentials per Tool Service origin for manifest fetches (auth.upstream.profiles). */
  upstreamAuth?: RefreshUpstreamAuth;
}

/** Summary of one cycle, for metrics and logs. */
export interface CycleReport {
  registry: RegistryOutcome;
  routes: number;
  published: number;
  failed: number;
  portalError: string | null;
  suspect: string | null;
}

/** Everything the refresher remembers about one route between cycles. */
interface RouteRecord extends MirroredRoute {
  /** The revision served: published by this worker, or by its previous life (`RefresherDeps.published`); `null` before the first. */
  revision: string | null;
  /** The snapshot this worker published (or warm-started); `null` when it published none. */
  view: SnapshotView | null;
  /** The Redis warm start was tried (it is tried once per route). */
  warmTried: boolean;
}

/** The outcome of one route's refresh. */
type RouteOutcome = 'published' | 'unchanged' | 'failed';

const NO_LOG: BugLog = { error: () => undefined };

/** Holds refresh state and runs cycles. */
export class Refresher {
  private readonly routes = new Map<string, RouteRecord>();
  private readonly registry: RegistrySource;
  private readonly manifests: ManifestCache;
  private readonly mirror: RedisMirror;
  private readonly now: () => number;
  private readonly log: BugLog;
  private initialLoadDone = false;

  constructor(private readonly deps: RefresherDeps) {
    this.now = deps.now ?? Date.now;
    this.log = deps.log ?? NO_LOG;
    this.registry = new RegistrySource(deps);
    this.manifests = new ManifestCache({
      config: deps.config,
      now: this.now,
      log: this.log,
      ...(deps.fetchManifest ? { fetch: deps.fetchManifest } : {}),
      ...(deps.upstreamAuth ? { upstreamAuth: deps.upstreamAuth } : {}),
    });
    this.mirror = new RedisMirror(deps);
    for (const [routeKey, revision] of Object.entries(deps.published ?? {})) this.record(routeKey).revision = revision;
  }

  /** Runs one cycle. Never throws for upstream trouble: failures become events. */
  async cycle(): Promise<CycleReport> {
    const poll = await this.registry.poll();
    if (poll.change !== null) this.registryChanged(poll.change);
    const report: CycleReport = { registry: poll.outcome, routes: 0, published: 0, failed: 0, portalError: poll.portalError, suspect: poll.suspect };
    const registry = this.registry.current;
    if (registry === null) return report;
    this.manifests.beginCycle();
    const keys = Object.keys(registry.routes);
    report.routes = keys.length;
    await Promise.all(
      keys.map(async (routeKey) => {
        let outcome: RouteOutcome;
        try {
          outcome = await this.refreshRoute(routeKey, registry.routes[routeKey] ?? []);
        } catch (err) {
          // A bug in one route's refresh must not stop the others, and must not pass for a manifest problem.
          this.log.error({ err, route: routeKey }, 'route refresh crashed');
          this.deps.emit({ type: 'route-failed', routeKey, code: GatewayErrorCode.Internal, message: `refresh of route "${routeKey}" crashed: ${String(err)}`, conflicts: [] });
          outcome = 'failed';
        }
        if (outcome === 'published') report.published++;
        if (outcome === 'failed') report.failed++;
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
    await this.mirror.sync(this.routes);
    return report;
  }

  /** A new registry: forget the routes it no longer names (their whole record) and the Tool Services no route names. */
  private registryChanged(change: RegistryChange): void {
    const live = new Set(routeKeys(change.registry));
    for (const routeKey of [...this.routes.keys()]) if (!live.has(routeKey)) this.routes.delete(routeKey);
    this.manifests.retain(change.registry);
    if (change.document !== null) this.mirror.registryAccepted(change.document);
  }

  private record(routeKey: string): RouteRecord {
    let record = this.routes.get(routeKey);
    if (record === undefined) {
      record = { revision: null, view: null, storedRevision: null, warmTried: false };
      this.routes.set(routeKey, record);
    }
    return record;
  }

  private async refreshRoute(routeKey: string, entries: ServiceEntry[]): Promise<RouteOutcome> {
    const { emit, config } = this.deps;
    const route = this.record(routeKey);
    const source = this.registry.source;
    const outcomes = await Promise.all(entries.map((e) => this.manifests.tools(e)));
    const services: ServiceTools[] = [];
    const unusable: string[] = [];
    let unusableCode: GatewayErrorCode | null = null;
    for (const o of outcomes) {
      if (o.tools !== null) services.push({ serviceId: o.entry.id, tools: o.tools });
      else {
        unusable.push(o.problem?.message ?? `Tool Service "${o.entry.id}" has no usable manifest`);
        unusableCode ??= o.problem?.code ?? GatewayErrorCode.ManifestUnreachable;
      }
    }
    if (unusableCode !== null) {
      await this.refused(routeKey, route, unusableCode, `route "${routeKey}" not replaced: ${unusable.join('; ')}`, []);
      return 'failed';
    }
    let catalog: MergedRoute;
    try {
      catalog = mergeRoute(routeKey, services, {
        maxToolsPerRoute: config.catalog.maxToolsPerRoute,
        conflictPolicy: config.catalog.conflictPolicy,
        prefixSeparator: config.catalog.prefixSeparator,
        source,
        now: this.now(),
      });
    } catch (err) {
      // Expected refusals (conflict, cap) are GatewayErrors; anything else is a bug for cycle() to report.
      if (!GatewayError.is(err)) throw err;
      await this.refused(routeKey, route, err.code, err.message, err.code === GatewayErrorCode.ToolNameConflict ? [...err.details] : []);
      return 'failed';
    }
    const degraded = outcomes.flatMap((o) => (o.problem === null ? [] : [o.problem.message]));
    // Tools refused one by one (SEP-986 names, x-mcp-header, icons, prefix limits): the route serves the others, readiness says why.
    const refused = [...outcomes.flatMap((o) => o.refused), ...catalog.refused].map((r) => r.problem);
    const warnings = [
      ...(degraded.length > 0 ? [`serving last good manifest: ${degraded.join('; ')}`] : []),
      ...(refused.length > 0 ? [`${refused.length} tool(s) refused: ${refused.slice(0, 10).join('; ')}${refused.length > 10 ? '; …' : ''}`] : []),
    ];
    const warning = warnings.length > 0 ? warnings.join(' | ') : null;
    if (route.revision === catalog.revision) {
      emit({ type: 'route-unchanged', routeKey, source, warning });
      return 'unchanged';
    }
    const view = decodeSnapshot(encodeSnapshot(catalog));
    const replaced = route.revision !== null;
    // A new revision need not change what tools/list shows (a timeout, an execution address): only then is it a list change.
    const listChanged = replaced && (route.view === null || !sameBytes(route.view.listTemplate, view.listTemplate) || !sameBytes(route.view.modernListTemplate, view.modernListTemplate));
    emit({ type: 'route-snapshot', routeKey, snapshot: view.buffer, meta: view.meta, source, warning, listChanged });
    // Recorded only once sent: a publication that threw is tried again next cycle, not taken for served.
    route.revision = catalog.revision;
    route.view = view;
    return 'published';
  }

  /** The route keeps what it serves; a route that serves nothing yet first tries its Redis copy (once). */
  private async refused(routeKey: string, route: RouteRecord, code: GatewayErrorCode, message: string, conflicts: string[]): Promise<void> {
    if (route.revision === null) await this.warmStart(routeKey, route);
    this.deps.emit({ type: 'route-failed', routeKey, code, message, conflicts });
  }

  /** First catalog of a route failed: serve its Redis snapshot if there is a good one (tried once per route). */
  private async warmStart(routeKey: string, route: RouteRecord): Promise<void> {
    if (route.warmTried) return;
    route.warmTried = true;
    const stored = await this.mirror.loadSnapshot(routeKey);
    if (stored === null) return;
    // Re-encoded by this code: a copy another version wrote (older format, other presentation rules or serverInfo) is never served as is.
    const { meta } = stored;
    const view = decodeSnapshot(encodeSnapshot({ routeKey, revision: meta.revision, source: meta.source, builtAt: meta.builtAt, tools: stored.catalogTools({ trusted: true }) }));
    this.deps.emit({ type: 'route-snapshot', routeKey, snapshot: view.buffer, meta: view.meta, source: 'redis', warning: 'warm start from the Redis copy', listChanged: false });
    route.revision = view.meta.revision;
    route.view = view;
    route.storedRevision = view.meta.revision;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}
