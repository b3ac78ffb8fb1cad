/**
 * The refresh worker thread: all Portal, manifest and Redis I/O and all
 * catalog building happen here, off the request path. It runs refresh
 * cycles back to back (interval ± jitter), forwards the refresher's events
 * to the main thread, and answers metrics scrapes.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Counter, Gauge, Histogram, Registry } from '../../shared/vendor/prom-client.js';
import { GatewayErrorCode } from '../../shared/errors.js';
import { createLogger } from '../../shared/log.js';
import type { MainToRefresh, RefreshEvent, RefreshToMain, RefreshWorkerData } from '../../shared/threads/messages.js';
import { UpstreamCredentials } from '../../shared/auth/upstream-credentials.js';
import { PortalClient } from './portal-client.js';
import { Refresher } from './refresher.js';
import { RefreshUpstreamAuth } from './upstream-auth.js';

if (parentPort === null) throw new Error('refresh-worker must run as a worker thread');
const parent = parentPort;
const data = workerData as RefreshWorkerData;
const { config } = data;
const log = createLogger(config.log.level, { thread: 'refresh' });

const registry = new Registry();
const cycles = new Counter({ name: 'mcp_gateway_refresh_cycles_total', help: 'Refresh cycles, by how the registry was obtained.', labelNames: ['registry'] as const, registers: [registry] });
const cycleSeconds = new Histogram({
  name: 'mcp_gateway_refresh_cycle_duration_seconds',
  help: 'Duration of a whole refresh cycle.',
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});
const failures = new Counter({ name: 'mcp_gateway_refresh_failures_total', help: 'Refresh failures by cause (route codes, portal, redis).', labelNames: ['cause'] as const, registers: [registry] });
const portalUp = new Gauge({ name: 'mcp_gateway_portal_up', help: '1 when the last Portal poll succeeded (portal mode only).', registers: [registry] });
const redisUp = new Gauge({ name: 'mcp_gateway_redis_up', help: '1 when the Redis connection is up (when redis.url is set).', registers: [registry] });
const suspect = new Gauge({ name: 'mcp_gateway_registry_suspect', help: '1 while the latest registry document is ignored by the mass-removal guard.', registers: [registry] });
const listChanged = new Counter({ name: 'mcp_gateway_list_changed_total', help: 'Route tools/list changes published.', labelNames: ['route'] as const, registers: [registry] });

const send = (msg: RefreshToMain): void => parent.postMessage(msg);

/**
 * Catalog rebuilds are background work: on Linux, lower this thread's CPU
 * priority (nice +10) so that, on a busy machine, building and encoding
 * snapshots yields to the acceptor and shard threads serving requests.
 * `setpriority` with a thread id affects that thread only; elsewhere this is a no-op.
 */
function lowerOwnPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, 10);
  } catch {
    // Not Linux, or not permitted: refresh simply runs at normal priority.
  }
}
lowerOwnPriority();

function emit(event: RefreshEvent): void {
  switch (event.type) {
    case 'route-failed':
      failures.inc({ cause: event.code });
      log.warn({ route: event.routeKey, code: event.code, reason: event.message }, 'route refresh failed');
      break;
    case 'registry-status':
      if (config.catalog.source === 'portal') portalUp.set(event.portalUp ? 1 : 0);
      if (event.redisUp !== null) redisUp.set(event.redisUp ? 1 : 0);
      suspect.set(event.suspect === null ? 0 : 1);
      if (!event.portalUp) failures.inc({ cause: GatewayErrorCode.PortalUnreachable });
      if (event.suspect !== null) {
        failures.inc({ cause: GatewayErrorCode.RegistrySuspect });
        log.error({ code: GatewayErrorCode.RegistrySuspect, reason: event.suspect }, 'suspect registry ignored');
      }
      if (event.portalError !== null) log.warn({ code: GatewayErrorCode.PortalUnreachable, reason: event.portalError }, 'Portal poll failed');
      break;
    case 'redis-problem':
      if (event.message !== null) {
        failures.inc({ cause: GatewayErrorCode.RedisUnavailable });
        log.warn({ code: GatewayErrorCode.RedisUnavailable, subject: event.subject, reason: event.message }, 'Redis problem');
      }
      break;
    case 'route-snapshot':
      if (event.listChanged) listChanged.inc({ route: event.routeKey });
      break;
    default:
      break;
  }
  send(event);
}

// Credentials the gateway presents to the Portal and to manifest endpoints, by origin (auth.upstream.profiles).
const upstreamAuth = new RefreshUpstreamAuth(new UpstreamCredentials(config.auth, (what, message) => log.error({ source: what }, `upstream credential could not be re-read: ${message}`)));
const portal =
  config.catalog.source === 'portal' && config.catalog.portal.url !== null
    ? new PortalClient({ url: config.catalog.portal.url, timeoutMs: config.catalog.portal.timeoutMs, maxBytes: config.catalog.portal.maxBytes, upstreamAuth })
    : null;
// Loaded only when Redis is configured: ioredis and its dependencies are ~55 modules (ADR-0016).
const redis = config.redis.url !== null ? new (await import('./redis-store.js')).RedisStore(config.redis.url, config.redis.namespace, config.redis.commandTimeoutMs) : null;
const refresher = new Refresher({ config, emit, portal, redis, published: data.published, log, upstreamAuth });

let stopped = false;
let timer: NodeJS.Timeout | null = null;

/** interval × (1 ± jitter): replicas started together drift apart instead of polling in lockstep. */
function nextDelay(): number {
  const { refreshIntervalMs, refreshJitterRatio } = config.catalog;
  return Math.max(0, refreshIntervalMs * (1 + refreshJitterRatio * (Math.random() * 2 - 1)));
}

async function loop(): Promise<void> {
  if (stopped) return;
  const end = cycleSeconds.startTimer();
  try {
    const report = await refresher.cycle();
    cycles.inc({ registry: report.registry });
    log.debug({ report }, 'refresh cycle finished');
  } catch (err) {
    log.error({ err }, 'refresh cycle crashed; the next cycle runs on schedule');
  } finally {
    end();
  }
  if (!stopped) timer = setTimeout(() => void loop(), nextDelay());
}

parent.on('message', (msg: MainToRefresh) => {
  if (msg.type === 'metrics') {
    void registry.getMetricsAsJSON().then((metrics) => send({ type: 'metrics', requestId: msg.requestId, metrics }));
  } else if (msg.type === 'close') {
    stopped = true;
    if (timer !== null) clearTimeout(timer);
    void (redis?.close() ?? Promise.resolve()).finally(() => {
      send({ type: 'closed' });
      parent.close();
      // Pending manifest fetches may hold the loop open; nothing here is worth waiting for.
      setImmediate(() => process.exit(0));
    });
  }
});

void loop();
