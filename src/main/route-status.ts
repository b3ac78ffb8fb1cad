/**
 * Per-route readiness (SPEC §4, §8): state, tool count, revision, source,
 * last success and last error for every route, and the overall readiness
 * status by the configured policy. Main thread only; acceptor threads get the
 * rendered JSON pushed to them.
 */
import { Gauge, type Registry } from 'prom-client';
import type { CatalogSource } from '../shared/catalog/types.js';
import type { GatewayConfig } from '../shared/config/schema.js';

/** A route's serving state. `refused`: no usable catalog; `stale`: serving an older catalog after a refused rebuild. */
export type RouteState = 'pending' | 'ready' | 'stale' | 'refused';

/** What readiness reports for one route. */
export interface RouteStatus {
  state: RouteState;
  shard: number;
  toolCount: number;
  revision: string | null;
  source: CatalogSource | null;
  lastSuccess: string | null;
  lastError: { code: string; message: string; at: string } | null;
}

/** Holds every route's status and renders readiness. */
export class RouteStatusBoard {
  private readonly routes = new Map<string, RouteStatus>();
  private initialLoadComplete = false;
  private readonly stateGauge: Gauge<'state'>;
  private readonly toolsGauge: Gauge<'route'>;

  constructor(
    private readonly policy: GatewayConfig['health']['readiness'],
    registry: Registry,
  ) {
    this.stateGauge = new Gauge({ name: 'mcp_gateway_routes', help: 'Routes by readiness state.', labelNames: ['state'] as const, registers: [registry] });
    this.toolsGauge = new Gauge({ name: 'mcp_gateway_route_tools', help: 'Tools exposed by each route snapshot.', labelNames: ['route'] as const, registers: [registry] });
  }

  /** Registers a route as pending (no snapshot yet). */
  add(routeKey: string, shard: number): void {
    this.routes.set(routeKey, { state: 'pending', shard, toolCount: 0, revision: null, source: null, lastSuccess: null, lastError: null });
    this.refreshGauges();
  }

  /** Records a published snapshot. */
  succeeded(routeKey: string, info: { toolCount: number; revision: string; source: CatalogSource }): void {
    const r = this.routes.get(routeKey);
    if (!r) return;
    Object.assign(r, { state: 'ready', toolCount: info.toolCount, revision: info.revision, source: info.source, lastSuccess: new Date().toISOString() });
    this.toolsGauge.set({ route: routeKey }, info.toolCount);
    this.refreshGauges();
  }

  /** Records a refused build: the route keeps its snapshot (stale) or has none (refused). */
  failed(routeKey: string, error: { code: string; message: string }): void {
    const r = this.routes.get(routeKey);
    if (!r) return;
    r.lastError = { ...error, at: new Date().toISOString() };
    r.state = r.revision === null ? 'refused' : 'stale';
    this.refreshGauges();
  }

  /** Marks the initial load (every route tried once) as finished. */
  completeInitialLoad(): void {
    this.initialLoadComplete = true;
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
   * refused (one bad route must not take every replica out of service).
   * `all-routes` also wants every route to have a usable snapshot.
   */
  readiness(): { status: number; body: string } {
    const routes: Record<string, RouteStatus> = {};
    let allUsable = true;
    for (const [k, v] of this.routes) {
      routes[k] = v;
      if (v.revision === null) allUsable = false;
    }
    const ready = this.initialLoadComplete && (this.policy === 'initial-load' || allUsable);
    const body = JSON.stringify({ status: ready ? 'ready' : 'not_ready', policy: this.policy, initialLoadComplete: this.initialLoadComplete, routes });
    return { status: ready ? 200 : 503, body };
  }

  private refreshGauges(): void {
    const counts: Record<RouteState, number> = { pending: 0, ready: 0, stale: 0, refused: 0 };
    for (const r of this.routes.values()) counts[r.state]++;
    for (const [state, n] of Object.entries(counts)) this.stateGauge.set({ state }, n);
  }
}
