/**
 * V8 heap limits given to every worker thread the main thread spawns
 * (shards, refresh worker, extra acceptors), and the one place that keeps
 * the main thread's young-generation flag from reaching them.
 *
 * Only the young generation is set. Its semi-spaces stay committed (and
 * resident) once a thread has grown into them, and under sustained load V8
 * grows them to their maximum whatever the survival rate, so the maximum is
 * what a gateway under load pays per thread: Node 24's V8 sizes it from the
 * host's memory (192 MB per worker on a 24 GiB host, 48 on Node 20; 64 MB
 * on the main thread). `workers.maxYoungGenerationSizeMb` (default 3, a 1 MB
 * semi-space) caps it for the threads that serve calls; the refresh worker
 * gets at most {@link REFRESH_YOUNG_GENERATION_MB} (ADR-0001 "Memory",
 * ADR-0018). Old-generation and stack limits stay V8's.
 *
 * The main thread (acceptor 0) is out of `resourceLimits`' reach: its young
 * generation is V8's `--max-semi-space-size=N` on the node command line (the
 * image and `npm start` pass `--max-semi-space-size=1`, IMAGE_NODE_FLAGS).
 * That flag is process-wide and V8 prefers it to a worker's
 * `resourceLimits` when it creates the worker's heap, so before every worker
 * is created {@link workerResourceLimits} sets it back to 0 (unset): the
 * main thread's heap was configured at start-up and keeps N; each worker gets
 * the configured value. V8 reads the flag only when it creates a heap, so
 * resetting it changes nothing else.
 */
import { setFlagsFromString } from 'node:v8';
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

/**
 * `resourceLimits` for `new Worker(…)`, to be called right before it;
 * `undefined` (V8's defaults) when the setting is 0. Either way the worker
 * is created with V8's process-wide `--max-semi-space-size` unset (above).
 */
export function workerResourceLimits(workers: GatewayConfig['workers'], kind: WorkerKind): ResourceLimits | undefined {
  setFlagsFromString('--max-semi-space-size=0');
  const mb = workers.maxYoungGenerationSizeMb;
  if (mb === 0) return undefined;
  return { maxYoungGenerationSizeMb: kind === 'refresh' ? Math.min(mb, REFRESH_YOUNG_GENERATION_MB) : mb };
}
