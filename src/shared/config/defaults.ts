/**
 * One DEFAULTS object (the ioredis `RedisOptions.ts` way): the embedded
 * default runs the gateway against the bundled demo Tool Service with no
 * Portal or Redis.
 */
import { AUTH_DEFAULTS } from '../auth/config-schema.js';
import type { GatewayConfig } from './schema.js';

/** The port the bundled demo Tool Service listens on for `npm start`. */
export const DEMO_TOOL_SERVICE_PORT = 3001;

export const DEFAULTS: GatewayConfig = {
  server: {
    host: '127.0.0.1',
    port: 8080,
    maxBodyBytes: 1024 * 1024,
    // An 8 KB JWT plus cookies fits; uWS's own default (4 KiB) answers such clients 431.
    maxHeaderBytes: 16 * 1024,
    // Far above what a reading client has in flight (heartbeats, progress events), far below tools.maxResponseBytes (16 MiB) per stream.
    maxBufferedBytesPerConnection: 1024 * 1024,
    allowedOrigins: null,
    allowedHosts: null,
    retryAfterSeconds: 5,
    exposeErrorDetails: false,
    drainDelayMs: 5_000,
    drainTimeoutMs: 20_000,
    admin: { host: null, port: null },
  },
  // 24 MB young generation per worker (the refresh worker: 8): Node 24's default (192 MB here) made RSS after load 1.5× Node 20's, and 24 costs no CPU per call against 48 (ADR-0001).
  workers: {
    shards: 0,
    acceptors: 1,
    maxPendingCallsPerShard: 10_000,
    channelRingBytes: 256 * 1024,
    maxChannelBacklogBytes: 16 * 1024 * 1024,
    maxYoungGenerationSizeMb: 3,
  },
  catalog: {
    source: 'static',
    static: {
      routes: { demo: [{ id: 'demo-tools', baseUrl: `http://127.0.0.1:${DEMO_TOOL_SERVICE_PORT}`, manifestPath: '/manifest' }] },
    },
    portal: { url: null, timeoutMs: 5_000, maxBytes: 16 * 1024 * 1024 },
    refreshIntervalMs: 30_000,
    refreshJitterRatio: 0.1,
    maxRouteRemovalRatio: 0.5,
    maxToolsPerRoute: 50,
    manifestTimeoutMs: 5_000,
    maxManifestBytes: 8 * 1024 * 1024,
    manifestConcurrency: 8,
    manifestMaxBackoffMs: 60_000,
    conflictPolicy: 'refuse',
    prefixSeparator: '_',
    toolNamePolicy: 'refuse-tool',
  },
  tools: {
    defaultTimeoutMs: 30_000,
    maxTimeoutMs: 120_000,
    maxResponseBytes: 16 * 1024 * 1024,
    maxArgumentsDepth: 64,
    connectionsPerService: 64,
    maxQueuedCallsPerService: 1024,
    connectTimeoutMs: 10_000,
    keepAliveTimeoutMs: 4_000,
    maxResponseHeaderBytes: 16 * 1024,
    allowedExecutionOrigins: [],
    bulkhead: { maxConcurrentPerService: 64, maxQueuedPerService: 512 },
    circuitBreaker: { consecutiveFailures: 5, failureRatio: 0.5, minimumCalls: 20, windowMs: 10_000, openMs: 5_000, halfOpenProbes: 1 },
  },
  redis: { url: null, namespace: 'mcp-gateway', commandTimeoutMs: 500 },
  streaming: { heartbeatMs: 15_000, defaultLogLevel: 'info' },
  subscriptions: { maxPerAcceptor: 1_000, keepAliveMs: 15_000 },
  health: { readiness: 'initial-load', minUsableRoutes: 1 },
  auth: AUTH_DEFAULTS,
  log: { level: 'info', accessSampleRatio: 1 },
  tracing: { otlp: { endpoint: null }, serviceName: 'mcp-route-gateway', sampleRatio: 1 },
};
