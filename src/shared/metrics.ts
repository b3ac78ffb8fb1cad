/**
 * Prometheus metrics. Each thread owns a prom-client Registry; the main thread
 * gathers every thread's `getMetricsAsJSON()` and merges them with
 * `AggregatorRegistry.aggregate` on scrape, so counters are process-wide.
 * Per-request updates go to array-backed counters and histograms
 * (`fast-metrics.ts`), exported in prom-client's JSON form on scrape.
 */
import { AggregatorRegistry, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { FastCounter, FastHistogram } from './fast-metrics.js';
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

/** Request metrics recorded by an acceptor thread (hot path: array-backed, see fast-metrics.ts). */
export class AcceptorMetrics {
  /** Metrics of this thread that are not on the per-request path. */
  readonly registry = new Registry();
  private readonly requests = new FastCounter('mcp_gateway_requests_total', 'MCP requests answered, by route, JSON-RPC method and outcome.', ['route', 'method', 'outcome']);
  private readonly duration = new FastHistogram(
    'mcp_gateway_request_duration_seconds',
    'Time from the end of the request body to the answer being written, by route and method.',
    ['route', 'method'],
    LATENCY_BUCKETS,
  );

  /** Records one answered request. `route` must already be a bounded label (a known route or `(none)`). */
  record(route: string, method: string, outcome: string, seconds: number): void {
    this.requests.inc(this.requests.slot(route, method, outcome));
    this.duration.observe(this.duration.slot(route, method), seconds);
  }

  /** Every metric of this thread as prom-client JSON, for aggregation on the main thread. */
  async toJson(): Promise<MetricObjectJson[]> {
    return [...(await this.registry.getMetricsAsJSON()), this.requests.toJson(), this.duration.toJson()];
  }
}

/** Upstream (Tool Service) metrics recorded by a shard thread (hot path: array-backed). */
export class ShardMetrics {
  /** Metrics of this thread that are not on the per-call path. */
  readonly registry = new Registry();
  private readonly calls = new FastCounter(
    'mcp_gateway_tool_calls_total',
    'Tool Service calls, by route, Tool Service and cause (ok, tool_error, status, timeout, unreachable, busy, malformed, too_large, cancelled, circuit_open, bulkhead_full).',
    ['route', 'service', 'cause'],
  );

  /** Counts one upstream call. */
  recordCall(route: string, service: string, cause: string): void {
    this.calls.inc(this.calls.slot(route, service, cause));
  }

  /** Every metric of this thread as prom-client JSON. */
  async toJson(): Promise<MetricObjectJson[]> {
    return [...(await this.registry.getMetricsAsJSON()), this.calls.toJson()];
  }
}

/** Merges per-thread metric snapshots into Prometheus text. */
export async function aggregateMetrics(perThread: MetricObjectJson[][]): Promise<{ contentType: string; text: string }> {
  const registry = AggregatorRegistry.aggregate(perThread as MetricObjectWithValues<MetricValue<string>>[][]);
  return { contentType: registry.contentType, text: await registry.metrics() };
}
