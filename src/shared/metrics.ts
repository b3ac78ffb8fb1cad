/**
 * Prometheus metrics. Each thread owns a prom-client Registry; the main thread
 * gathers every thread's `getMetricsAsJSON()` and merges them with
 * `AggregatorRegistry.aggregate` on scrape, so counters are process-wide.
 * Hot-path updates go through cached label children (no label hashing per request).
 */
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
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
    help: 'Time from the request head to the answer being written, by route and method.',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly counterChildren = new Map<string, { inc(): void }>();
  private readonly histogramChildren = new Map<string, { observe(v: number): void }>();

  /** Exports this acceptor thread's call rings toward the shards (read at scrape time). */
  watchChannels(channels: () => readonly ChannelStat[]): void {
    channelGauges(this.registry, 'to_shard', channels);
  }

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
    help: 'Tool Service calls, by route, Tool Service and cause (ok, tool_error, status, timeout, unreachable, busy, malformed, too_large, cancelled).',
    labelNames: ['route', 'service', 'cause'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'mcp_gateway_tool_call_duration_seconds',
    help: 'Time from handing a call to the Tool Service client to its outcome (answer, failure, timeout or cancel), by route and Tool Service.',
    labelNames: ['route', 'service'] as const,
    buckets: UPSTREAM_BUCKETS,
    registers: [this.registry],
  });
  private readonly children = new Map<string, { inc(): void }>();
  private readonly durationChildren = new Map<string, { observe(v: number): void }>();

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

  /** Counts one upstream call and its duration. Labels are bounded by the registry (routes × their Tool Services). */
  recordCall(route: string, service: string, cause: string, seconds: number): void {
    const key = route + '\u0000' + service + '\u0000' + cause;
    let c = this.children.get(key);
    if (c === undefined) {
      c = this.calls.labels(route, service, cause);
      this.children.set(key, c);
    }
    c.inc();
    const dkey = route + '\u0000' + service;
    let d = this.durationChildren.get(dkey);
    if (d === undefined) {
      d = this.duration.labels(route, service);
      this.durationChildren.set(dkey, d);
    }
    d.observe(seconds);
  }

  /** Drops a removed route's series, so route churn cannot grow the label sets without bound. */
  forgetRoute(route: string): void {
    const prefix = route + '\u0000';
    for (const key of this.children.keys()) {
      if (!key.startsWith(prefix)) continue;
      const [, service, cause] = key.split('\u0000') as [string, string, string];
      this.calls.remove(route, service, cause);
      this.children.delete(key);
    }
    for (const key of this.durationChildren.keys()) {
      if (!key.startsWith(prefix)) continue;
      this.duration.remove(route, key.slice(prefix.length));
      this.durationChildren.delete(key);
    }
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
