/**
 * Prometheus metrics. Each thread owns a prom-client Registry; the main thread
 * gathers every thread's `getMetricsAsJSON()` and merges them with
 * `AggregatorRegistry.aggregate` on scrape, so counters are process-wide.
 * Hot-path updates go through cached label children (no label hashing per request).
 */
import { AggregatorRegistry, Counter, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { MetricObjectJson } from './metrics-types.js';

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Methods are a closed set on labels; anything else is `other` (bounded cardinality). */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'logging/setLevel',
  'notifications/initialized',
  'notifications/cancelled',
  'server/discover',
  'subscriptions/listen',
]);

/** Label value for a JSON-RPC method. */
export function methodLabel(method: string): string {
  if (KNOWN_METHODS.has(method)) return method;
  return method.startsWith('notifications/') ? 'notifications/other' : 'other';
}

/** Request metrics recorded by an acceptor thread. */
export class AcceptorMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'mcp_gateway_requests_total',
    help: 'MCP requests answered, by route, JSON-RPC method and outcome.',
    labelNames: ['route', 'method', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'mcp_gateway_request_duration_seconds',
    help: 'Time from the end of the request body to the answer being written, by route and method.',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly counterChildren = new Map<string, { inc(): void }>();
  private readonly histogramChildren = new Map<string, { observe(v: number): void }>();

  /** Records one answered request. `route` must already be a bounded label (a known route or `(none)`). */
  record(route: string, method: string, outcome: string, seconds: number): void {
    const key = route + '\u0000' + method + '\u0000' + outcome;
    let c = this.counterChildren.get(key);
    if (c === undefined) {
      c = this.requests.labels(route, method, outcome);
      this.counterChildren.set(key, c);
    }
    c.inc();
    const hkey = route + '\u0000' + method;
    let h = this.histogramChildren.get(hkey);
    if (h === undefined) {
      h = this.duration.labels(route, method);
      this.histogramChildren.set(hkey, h);
    }
    h.observe(seconds);
  }
}

/** Upstream (Tool Service) metrics recorded by a shard thread. */
export class ShardMetrics {
  readonly registry = new Registry();
  private readonly calls = new Counter({
    name: 'mcp_gateway_tool_calls_total',
    help: 'Tool Service calls, by route, Tool Service and cause (ok, tool_error, status, timeout, unreachable, busy, malformed, too_large).',
    labelNames: ['route', 'service', 'cause'] as const,
    registers: [this.registry],
  });
  private readonly children = new Map<string, { inc(): void }>();

  /** Counts one upstream call. */
  recordCall(route: string, service: string, cause: string): void {
    const key = route + '\u0000' + service + '\u0000' + cause;
    let c = this.children.get(key);
    if (c === undefined) {
      c = this.calls.labels(route, service, cause);
      this.children.set(key, c);
    }
    c.inc();
  }
}

/** Merges per-thread metric snapshots into Prometheus text. */
export async function aggregateMetrics(perThread: MetricObjectJson[][]): Promise<{ contentType: string; text: string }> {
  const registry = AggregatorRegistry.aggregate(perThread as MetricObjectWithValues<MetricValue<string>>[][]);
  return { contentType: registry.contentType, text: await registry.metrics() };
}
