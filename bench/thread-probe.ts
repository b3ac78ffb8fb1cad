/**
 * Preloaded into every thread of a gateway under bench (NODE_OPTIONS
 * `--import`, set by bench/suite/servers.ts; Node runs `--import` modules in
 * worker threads too): each thread reports who it is and what its isolate
 * holds, so the bench can split the process's CPU and memory by role without
 * any code in the gateway.
 *
 * Why a preload: on Node 20 every kernel thread of the process is named
 * "node", so /proc alone cannot tell the shard from the acceptor. A thread's
 * own kernel id is `/proc/thread-self` → "<pid>/task/<tid>"; its role is its
 * entry script (a worker's `process.argv[1]`, e.g. shard-worker.js) or, on
 * Node ≥ 22.20/24.6, its `threadName` when the gateway names its workers.
 *
 * Each thread rewrites `$BENCH_THREAD_DIR/<tid>.json` every 250 ms (write to
 * a temporary file, then rename, so a reader never sees half a file):
 *
 *   { tid, role, threadId, sampledAt,
 *     now:  { heapUsed, heapTotal, external, arrayBuffers },   bytes, this isolate
 *     peak: { … same fields, maxima since the thread started } }
 *
 * Cost: one `process.memoryUsage()` and one small file write per thread per
 * 250 ms (tens of µs per second per thread); the timer is unref'd, so it
 * never keeps a thread alive. Any failure disables the probe, never the
 * gateway.
 */
import { readlinkSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import * as threads from 'node:worker_threads';

const SAMPLE_MS = 250;

interface Mem {
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

function start(dir: string): void {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (!Number.isInteger(tid)) return;
  // `threadName` exists from Node 22.20 / 24.6; "WorkerThread" is its unnamed default.
  const name = (threads as unknown as { threadName?: unknown }).threadName;
  const role = threads.isMainThread ? 'main' : typeof name === 'string' && name !== '' && name !== 'WorkerThread' ? name : basename(process.argv[1] ?? 'worker', '.js');
  const file = join(dir, `${tid}.json`);
  const temp = `${file}.tmp`;
  const peak: Mem = { heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
  const sample = (): void => {
    try {
      const m = process.memoryUsage();
      const now: Mem = { heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
      for (const k of Object.keys(peak) as Array<keyof Mem>) peak[k] = Math.max(peak[k], now[k]);
      writeFileSync(temp, JSON.stringify({ tid, role, threadId: threads.threadId, sampledAt: Date.now(), now, peak }));
      renameSync(temp, file);
    } catch {
      clearInterval(timer);
    }
  };
  const timer = setInterval(sample, SAMPLE_MS);
  timer.unref();
  sample();
}

const dir = process.env['BENCH_THREAD_DIR'];
if (dir !== undefined && dir !== '') {
  try {
    start(dir);
  } catch {
    // No /proc/thread-self (not Linux) or an unwritable folder: no per-thread figures.
  }
}
