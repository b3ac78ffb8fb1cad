/**
 * Per-thread memory of a running gateway, without touching its code: preload
 * this module into every thread (`node --import ./dist/bench/memory-probe.js
 * dist/src/main/cli.js …`; `--import` is inherited by worker threads) and send
 * the process SIGUSR2. The main thread asks every thread over a
 * BroadcastChannel for `process.memoryUsage()` (heap, external, ArrayBuffers of
 * that thread's isolate), V8 heap and space statistics and its
 * `resourceLimits`, and writes one JSON document (plus the process RSS) to
 * the file named by `MEMORY_PROBE_OUT`.
 */
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { BroadcastChannel, isMainThread, resourceLimits, threadId } from 'node:worker_threads';

/** One thread's numbers, in bytes. */
export interface ThreadMemory {
  threadId: number;
  /** `main`, or the worker's role from its entry script (`shard`, `acceptor`, `refresh`). */
  kind: string;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  /** Young generation: committed size of V8's `new_space` (two semi-spaces in use) and the bytes live in it. */
  newSpaceSize: number;
  newSpaceUsed: number;
  oldSpaceSize: number;
  mallocedMemory: number;
  heapSizeLimit: number;
  resourceLimits: Record<string, number>;
}

/** What SIGUSR2 writes. */
export interface MemoryReport {
  rss: number;
  threads: ThreadMemory[];
}

const CHANNEL = 'mcp-gateway-memory-probe';
const REPLY_WAIT_MS = 500;

function sample(): ThreadMemory {
  const mu = process.memoryUsage();
  const heap = getHeapStatistics();
  const spaces = getHeapSpaceStatistics();
  const space = (name: string) => spaces.find((s) => s.space_name === name);
  // A worker's process.argv[1] is its entry script (shard-worker.js, acceptor-worker.js, refresh-worker.js).
  const kind = isMainThread ? 'main' : basename(process.argv[1] ?? '').replace(/-worker\.js$/, '') || 'worker';
  return {
    threadId,
    kind,
    heapUsed: mu.heapUsed,
    heapTotal: mu.heapTotal,
    external: mu.external,
    arrayBuffers: mu.arrayBuffers,
    newSpaceSize: space('new_space')?.space_size ?? 0,
    newSpaceUsed: space('new_space')?.space_used_size ?? 0,
    oldSpaceSize: space('old_space')?.space_size ?? 0,
    mallocedMemory: heap.malloced_memory,
    heapSizeLimit: heap.heap_size_limit,
    resourceLimits: { ...resourceLimits },
  };
}

const channel = new BroadcastChannel(CHANNEL);
channel.unref();

if (isMainThread) {
  const out = process.env['MEMORY_PROBE_OUT'];
  process.on('SIGUSR2', () => {
    const threads: ThreadMemory[] = [sample()];
    channel.onmessage = (event) => {
      const msg = (event as MessageEvent).data as { type?: string; sample?: ThreadMemory };
      if (msg.type === 'reply' && msg.sample) threads.push(msg.sample);
    };
    channel.unref(); // setting onmessage refs the channel; a probe must never keep a thread alive
    channel.postMessage({ type: 'sample' });
    setTimeout(() => {
      channel.onmessage = () => undefined;
      channel.unref();
      const report: MemoryReport = { rss: process.memoryUsage.rss(), threads: threads.sort((a, b) => a.threadId - b.threadId) };
      if (out) writeFileSync(out, JSON.stringify(report));
    }, REPLY_WAIT_MS);
  });
} else {
  channel.onmessage = (event) => {
    if (((event as MessageEvent).data as { type?: string }).type === 'sample') channel.postMessage({ type: 'reply', sample: sample() });
  };
  channel.unref();
}
