/**
 * V8 heap limits given to every worker thread the main thread spawns
 * (shards, refresh worker, extra acceptors).
 *
 * Only the young generation is set: Node 24's V8 sizes it from the host's
 * memory (192 MB per thread on a 24 GiB host, against 48 MB on Node 20), and
 * a shard under load grows into it (32 → 128 MB): RSS after load was 1.5×
 * Node 20's (bench/runtime-memory.ts, ADR-0001). `workers.maxYoungGenerationSizeMb`
 * (default 24) caps it for the threads that serve calls: 24 MB cost no
 * measurable CPU per call against 48 and took ~15 MB off the peak RSS under
 * `tools/call` load (ADR-0001 "Memory"). The refresh worker gets at most
 * {@link REFRESH_YOUNG_GENERATION_MB}. Old-generation and stack limits stay V8's.
 */
import type { ResourceLimits } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';

/**
 * Young generation of the refresh worker (MB), whatever larger value the
 * setting asks for: a catalog build allocates in bursts that no request
 * waits on, so more frequent scavenges cost little (+3–5 % CPU of a 300-route
 * build, bench/catalog-build.ts) while the larger semi-spaces it would keep
 * committed between refreshes cost ~17 MB of RSS.
 */
export const REFRESH_YOUNG_GENERATION_MB = 8;

/** Which kind of worker thread the limits are for. */
export type WorkerKind = 'shard' | 'acceptor' | 'refresh';

/** `resourceLimits` for `new Worker(…)`; `undefined` (V8's defaults) when the setting is 0. */
export function workerResourceLimits(workers: GatewayConfig['workers'], kind: WorkerKind): ResourceLimits | undefined {
  const mb = workers.maxYoungGenerationSizeMb;
  if (mb === 0) return undefined;
  return { maxYoungGenerationSizeMb: kind === 'refresh' ? Math.min(mb, REFRESH_YOUNG_GENERATION_MB) : mb };
}
