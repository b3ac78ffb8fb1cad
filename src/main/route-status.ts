/**
 * Per-route readiness (docs/architecture.md "Health, readiness, metrics"): state, tool count, revision, source,
 * last success, last error and conflicts for every route, the registry's
 * health, and the overall readiness status by the configured policy. Main
 * thread only; acceptor threads get the rendered JSON pushed to them.
 */
import { Gauge, type Registry } from '../shared/vendor/prom-client.js';
import type { CatalogSource } from '../shared/catalog/types.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayErrorCode } from '../shared/errors.js';
import type { CircuitBoard } from './circuit-board.js';

/**
 * `pending`: never built yet. `ready`: serving the latest catalog.
 * `stale`: serving an older catalog (the latest refresh failed or used a last
 * good manifest). `refused`: no usable catalog at all (answers 503).
 */
export type RouteState = 'pending' | 'ready' | 'stale' | 'refused';

/** What readiness reports for one route. */
export interface RouteStatus {
  state: RouteState;
  shard: number;
  toolCount: number;
  revision: string | null;
  source: CatalogSource | null;
  /** When the snapshot being served was built (ISO time). */
  builtAt: string | null;
  lastSuccess: string | null;
  lastError: { code: string; message: string; at: string } | null;
  conflicts: string[];
}

/** Registry health for readiness (portal mode). */
export interface RegistryStatus {
  portalUp: boolean | null;
  portalError: string | null;
  redisUp: boolean | null;
  /** Current Redis problems by subject (a route key, or `registry`): unusable copies, failed stores. */
  redisProblems: Record<string, string>;
  suspect: string | null;
  revision: string | null;
  source: CatalogSource | null;
}

/** The readiness rules: `health.*` of the configuration. */
export type ReadinessPolicy = GatewayConfig['health'];

/** Holds every route's status and renders readiness. */
export class RouteStatusBoard {
  private readonly routes = new Map<string, RouteStatus>();
  private initialLoadComplete = false;
  private draining = false;
  private registry: RegistryStatus = { portalUp: null, portalError: null, redisUp: null, redisProblems: {}, suspect: null, revision: null, source: null };
  private readonly stateGauge: Gauge<'state'>;
  private readonly toolsGauge: Gauge<'route'>;
  private circuits: CircuitBoard | null = null;

  constructor(
    private readonly policy: ReadinessPolicy,
    registry: Registry,
  ) {
    this.stateGauge = new Gauge({ name: 'mcp_gateway_routes', help: 'Routes by readiness state.', labelNames: ['state'] as const, registers: [registry] });
    this.toolsGauge = new Gauge({ name: 'mcp_gateway_route_tools', help: 'Tools exposed by each route snapshot.', labelNames: ['route'] as const, registers: [registry] });
    const board = this;
    new Gauge({
      name: 'mcp_gateway_route_snapshot_age_seconds',
      help: 'Age of the snapshot each route serves.',
      labelNames: ['route'] as const,
      registers: [registry],
      collect(): void {
        this.reset();
        const now = Date.now();
        for (const [route, s] of board.routes) if (s.builtAt !== null) this.set({ route }, (now - Date.parse(s.builtAt)) / 1000);
      },
    });
  }

  /** Registers a route as pending (no snapshot yet). Idempotent. */
  add(routeKey: string, shard: number): void {
    if (this.routes.has(routeKey)) return;
    this.routes.set(routeKey, { state: 'pending', shard, toolCount: 0, revision: null, source: null, builtAt: null, lastSuccess: null, lastError: null, conflicts: [] });
    this.refreshGauges();
  }

  /** Forgets a removed route. */
  remove(routeKey: string): void {
    this.routes.delete(routeKey);
    delete this.registry.redisProblems[routeKey];
    this.toolsGauge.remove({ route: routeKey });
    this.refreshGauges();
  }

  /** True when the route is known. */
  has(routeKey: string): boolean {
    return this.routes.has(routeKey);
  }

  /** Records a published snapshot; a `warning` (last good manifest used, warm start) makes it `stale`. */
  succeeded(routeKey: string, info: { toolCount: number; revision: string; source: CatalogSource; builtAt: number }, warning: string | null): void {
    const r = this.routes.get(routeKey);
    if (!r) return;
    Object.assign(r, { toolCount: info.toolCount, revision: info.revision, source: info.source, builtAt: new Date(info.builtAt).toISOString(), conflicts: [] });
    this.toolsGauge.set({ route: routeKey }, info.toolCount);
    this.settle(r, warning);
  }

  /** The latest refresh produced the catalog already served (now from `source`: a warm-started route becomes `portal`). */
  unchanged(routeKey: string, source: CatalogSource, warning: string | null): void {
    const r = this.routes.get(routeKey);
    if (!r || r.revision === null) return;
    r.conflicts = [];
    r.source = source;
    this.settle(r, warning);
  }

  /** Records a refused build: the route keeps its snapshot (stale) or has none (refused). */
  failed(routeKey: string, error: { code: string; message: string; conflicts?: string[] }): void {
    const r = this.routes.get(routeKey);
    if (!r) return;
    r.lastError = { code: error.code, message: error.message, at: new Date().toISOString() };
    r.conflicts = error.conflicts ?? [];
    r.state = r.revision === null ? 'refused' : 'stale';
    this.refreshGauges();
  }

  /** Sets or (with `null`) clears a Redis problem. */
  setRedisProblem(subject: string, message: string | null): void {
    if (message === null) delete this.registry.redisProblems[subject];
    else this.registry.redisProblems[subject] = message;
  }

  /** Updates registry health. */
  setRegistry(status: Partial<RegistryStatus>): void {
    this.registry = { ...this.registry, ...status };
  }

  /** Registry health as last reported. */
  get registryStatus(): Readonly<RegistryStatus> {
    return this.registry;
  }

  /** Shows Tool Service circuits in readiness (set once, at composition). */
  attachCircuits(circuits: CircuitBoard): void {
    this.circuits = circuits;
  }

  /** Marks the initial load (every route tried once) as finished. */
  completeInitialLoad(): void {
    this.initialLoadComplete = true;
  }

  /** The process is shutting down: readiness is 503 from now on, whatever the routes say (docs/operations.md "Drain sequence"). */
  startDraining(): void {
    this.draining = true;
  }

  /** True once every route was tried once. */
  get initialLoadDone(): boolean {
    return this.initialLoadComplete;
  }

  /** The status of one route. */
  get(routeKey: string): RouteStatus | undefined {
    return this.routes.get(routeKey);
  }

  /** Every route key. */
  keys(): string[] {
    return [...this.routes.keys()];
  }

  /**
   * 503 until the initial load finished; then 200, even when some routes are
   * refused or stale (one bad route must not take every replica out of
   * service) — as long as at least `health.minUsableRoutes` routes serve a
   * catalog: a replica whose every route is refused serves nothing and must
   * not take traffic. `all-routes` also wants every route to have a usable
   * snapshot. Draining is always 503.
   */
  readiness(): { status: number; body: string } {
    const routes: Record<string, RouteStatus> = {};
    let usable = 0;
    for (const [k, v] of this.routes) {
      routes[k] = v;
      if (v.revision !== null) usable++;
    }
    const allUsable = usable === this.routes.size;
    const ready = !this.draining && this.initialLoadComplete && usable >= this.policy.minUsableRoutes && (this.policy.readiness === 'initial-load' || allUsable);
    const body = JSON.stringify({
      status: ready ? 'ready' : this.draining ? 'draining' : 'not_ready',
      policy: this.policy.readiness,
      minUsableRoutes: this.policy.minUsableRoutes,
      usableRoutes: usable,
      initialLoadComplete: this.initialLoadComplete,
      draining: this.draining,
      registry: this.registry,
      routes,
      // Open circuits do not make a replica unready: the other services and routes serve.
      toolServices: this.circuits?.render() ?? {},
    });
    return { status: ready ? 200 : 503, body };
  }

  private settle(r: RouteStatus, warning: string | null): void {
    r.lastSuccess = new Date().toISOString();
    if (warning !== null) r.lastError = { code: GatewayErrorCode.Degraded, message: warning, at: r.lastSuccess };
    r.state = warning === null ? 'ready' : 'stale';
    this.refreshGauges();
  }

  private refreshGauges(): void {
    const counts: Record<RouteState, number> = { pending: 0, ready: 0, stale: 0, refused: 0 };
    for (const r of this.routes.values()) counts[r.state]++;
    for (const [state, n] of Object.entries(counts)) this.stateGauge.set({ state }, n);
  }
}
