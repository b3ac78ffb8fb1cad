/**
 * V8 heap limits given to every worker thread the main thread spawns
 * (shards, refresh worker, extra acceptors).
 *
 * Only the young generation is set: Node 24's V8 sizes it from the host's
 * memory (192 MB per thread on a 24 GiB host, against 48 MB on Node 20), and
 * a shard under load grows into it (32 → 128 MB): RSS after load was 1.5×
 * Node 20's. `workers.maxYoungGenerationSizeMb` (default 48, Node 20's value)
 * brings that to 1.23× (bench/runtime-memory.ts, ADR-0001). Old-generation
 * and stack limits stay V8's.
 */
import type { ResourceLimits } from 'node:worker_threads';
import type { GatewayConfig } from '../shared/config/schema.js';

/** `resourceLimits` for `new Worker(…)`; `undefined` (V8's defaults) when the setting is 0. */
export function workerResourceLimits(workers: GatewayConfig['workers']): ResourceLimits | undefined {
  return workers.maxYoungGenerationSizeMb > 0 ? { maxYoungGenerationSizeMb: workers.maxYoungGenerationSizeMb } : undefined;
}
