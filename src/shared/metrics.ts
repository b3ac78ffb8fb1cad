/**
 * Prometheus metrics. Each thread owns a prom-client Registry; the main thread
 * gathers every thread's `getMetricsAsJSON()` and merges them with
 * `AggregatorRegistry.aggregate` on scrape, so counters are process-wide.
 * Per-request updates go to array-backed counters and histograms
 * (`fast-metrics.ts`), exported in prom-client's JSON form on scrape.
 */
import { AggregatorRegistry, collectDefaultMetrics, Gauge, Registry, type MetricObjectWithValues, type MetricValue } from './vendor/prom-client.js';
import { FastCounter, FastHistogram } from './fast-metrics.js';
import type { MetricObjectJson } from './metrics-types.js';
import type { RingWriterStats } from './threads/ring-writer.js';

const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Tool Service calls take milliseconds to minutes (`tools.maxTimeoutMs`): fewer, wider buckets per (route, service) series. */
const UPSTREAM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** One direction of one call channel (acceptor × shard pair), as its writer counts it. */
export interface ChannelStat {
  acceptor: number;
  shard: number;
  stats: Readonly<RingWriterStats>;
}

/**
 * Backlog of one side's ring writers (`direction`: `to_shard` written by
 * acceptors, `to_acceptor` by shards), read at scrape time: nothing on the
 * call path. Frames wait in a backlog only when the ring is full.
 */
function channelGauges(registry: Registry, direction: 'to_shard' | 'to_acceptor', channels: () => readonly ChannelStat[]): void {
  const labelNames = ['direction', 'acceptor', 'shard'] as const;
  new Gauge({
    name: 'mcp_gateway_channel_backlog_bytes',
    help: 'Bytes of call frames (to_shard) or answer frames (to_acceptor) waiting for space in a full call ring, per acceptor x shard channel.',
    labelNames,
    registers: [registry],
    collect(): void {
      this.reset();
      for (const c of channels()) this.set({ direction, acceptor: c.acceptor, shard: c.shard }, c.stats.backlogBytes);
    },
  });
  new Gauge({
    name: 'mcp_gateway_channel_backlog_frames',
    help: 'Frames waiting for space in a full call ring, per acceptor x shard channel and direction.',
    labelNames,
    registers: [registry],
    collect(): void {
      this.reset();
      for (const c of channels()) this.set({ direction, acceptor: c.acceptor, shard: c.shard }, c.stats.backlogFrames);
    },
  });
}

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
    'Time from the request head to the answer being written, by route and method.',
    ['route', 'method'],
    LATENCY_BUCKETS,
  );

  /** Exports this acceptor thread's call rings toward the shards (read at scrape time). */
  watchChannels(channels: () => readonly ChannelStat[]): void {
    channelGauges(this.registry, 'to_shard', channels);
  }

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

  private readonly duration = new FastHistogram(
    'mcp_gateway_tool_call_duration_seconds',
    'Time from handing a call to the Tool Service client to its outcome (answer, failure, timeout or cancel), by route and Tool Service.',
    ['route', 'service'],
    UPSTREAM_BUCKETS,
  );

  /**
   * Exports this shard's in-flight calls and its answer rings toward the
   * acceptors, read at scrape time (nothing on the call path).
   */
  watch(shard: number, inFlight: () => number, channels: () => readonly ChannelStat[]): void {
    new Gauge({
      name: 'mcp_gateway_shard_calls_in_flight',
      help: 'Tool calls a shard is executing (received, not yet answered), by shard.',
      labelNames: ['shard'] as const,
      registers: [this.registry],
      collect(): void {
        this.set({ shard }, inFlight());
      },
    });
    channelGauges(this.registry, 'to_acceptor', channels);
  }

  /** Counts one upstream call (or a call its guard refused). */
  recordCall(route: string, service: string, cause: string): void {
    this.calls.inc(this.calls.slot(route, service, cause));
  }

  /** Observes how long a Tool Service call took. Labels are bounded by the registry (routes × their Tool Services). */
  observeCall(route: string, service: string, seconds: number): void {
    this.duration.observe(this.duration.slot(route, service), seconds);
  }

  /** Every metric of this thread as prom-client JSON. */
  async toJson(): Promise<MetricObjectJson[]> {
    return [...(await this.registry.getMetricsAsJSON()), this.calls.toJson(), this.duration.toJson()];
  }
}

/**
 * `mcp_gateway_build_info` (value 1; what runs: gateway version, Node
 * version, uWebSockets.js package) and the default process and Node.js
 * metrics under their standard names (`process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `nodejs_eventloop_lag_seconds`, …): the
 * main thread's registry. Process metrics cover every thread (CPU, RSS, open
 * fds); the `nodejs_*` heap and event-loop metrics are the main thread's.
 */
export function registerProcessMetrics(registry: Registry, build: { version: string; uws: string }): void {
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'mcp_gateway_build_info',
    help: 'Always 1; the labels say what runs: gateway version, Node.js version, uWebSockets.js package.',
    labelNames: ['version', 'node', 'uws'] as const,
    registers: [registry],
  }).set({ version: build.version, node: process.version, uws: build.uws }, 1);
}

/** Merges per-thread metric snapshots into Prometheus text. */
export async function aggregateMetrics(perThread: MetricObjectJson[][]): Promise<{ contentType: string; text: string }> {
  const registry = AggregatorRegistry.aggregate(perThread as MetricObjectWithValues<MetricValue<string>>[][]);
  return { contentType: registry.contentType, text: await registry.metrics() };
}
