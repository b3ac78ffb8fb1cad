/**
 * Per-thread CPU and memory of a server process, from
 * `/proc/<pid>/task/<tid>/stat` and the self-reports that bench/thread-probe.ts
 * writes from inside each JavaScript thread of the gateway.
 *
 * Attribution of a kernel thread (tid) to a group:
 *  - tid = pid                        → "main" (acceptor 0 runs there in the default layout)
 *  - a thread-probe report for the tid → its role: "acceptor", "shard", "refresh", or the script name
 *  - comm "V8Worker"/"DelayedTaskSche" → "V8 platform" (GC helpers, concurrent compiler) — Node ≥ 22 names them
 *  - comm "libuv-worker"               → "libuv pool"
 *  - comm naming a role (Node ≥ 22.20/24.6 names a thread after its
 *    Worker's `name` option)             → that role
 *  - comm "node" (Node 20 names no thread): the first 5 such threads by tid
 *    are the V8 platform (Node creates its DelayedTaskScheduler and 4
 *    `--v8-pool-size` workers before anything else; verified on 20.20: the GC
 *    time of an allocating loop lands on tids pid+2…pid+5), the rest "other"
 *    (inspector signal thread, libuv pool)
 *  - anything else                     → "other"
 * CPU of threads that exited during a run is only in the process total: it
 * appears as "exited / rounding" (the difference, 10 ms tick resolution).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { clkTck } from '../harness.js';

/** The variable that tells bench/thread-probe.ts where to write. */
export const THREAD_DIR_ENV = 'BENCH_THREAD_DIR';

/** Heap figures of one isolate, bytes. */
export interface IsolateMemory {
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

/** What one JavaScript thread of the gateway reports about itself. */
export interface ThreadReport {
  tid: number;
  role: string;
  threadId: number;
  sampledAt: number;
  now: IsolateMemory;
  peak: IsolateMemory;
}

/** CPU of one group of threads over a run. */
export interface ThreadGroupCpu {
  group: string;
  threads: number;
  micros: number;
}

const V8_PLATFORM = 'V8 platform (GC, JIT)';
/** Threads that may be JavaScript workers when no thread-probe report arrived (e.g. a custom BENCH_GATEWAY_CMD). */
const UNREPORTED = 'other (no thread-probe reports)';
const NODE20_PLATFORM_THREADS = 5;

/** Every report in `dir` (unreadable or half-written files are skipped). */
export function readThreadReports(dir: string | undefined): Map<number, ThreadReport> {
  const out = new Map<number, ThreadReport>();
  if (dir === undefined) return out;
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return out;
  }
  for (const f of files) {
    try {
      const r = JSON.parse(readFileSync(join(dir, f), 'utf8')) as ThreadReport;
      if (Number.isInteger(r.tid) && typeof r.role === 'string') out.set(r.tid, r);
    } catch {
      // Being replaced right now: the next read sees it.
    }
  }
  return out;
}

/** CPU µs (user + system) and name of every live thread of `pid`. */
export function taskTimes(pid: number): Map<number, { comm: string; micros: number }> {
  const out = new Map<number, { comm: string; micros: number }>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  const tick = 1_000_000 / clkTck();
  for (const t of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      const rest = stat.slice(close + 2).split(' ');
      // rest[0] is field 3; utime and stime are fields 14 and 15.
      out.set(Number(t), { comm: stat.slice(open + 1, close), micros: (Number(rest[11]) + Number(rest[12])) * tick });
    } catch {
      // The thread exited between readdir and read.
    }
  }
  return out;
}

/** A JS thread's group from its reported role. */
export function roleGroup(role: string): string {
  for (const g of ['acceptor', 'shard', 'refresh']) if (role.includes(g)) return g;
  return role;
}

/** Group of every tid of `pid` (see the module comment for the rules). */
export function classify(pid: number, tids: Iterable<number>, comms: Map<number, string>, reports: Map<number, ThreadReport>): Map<number, string> {
  const out = new Map<number, string>();
  let unnamedRank = 0;
  for (const tid of [...tids].sort((a, b) => a - b)) {
    const report = reports.get(tid);
    const comm = comms.get(tid) ?? '';
    if (tid === pid) out.set(tid, 'main');
    else if (report !== undefined) out.set(tid, roleGroup(report.role));
    else if (comm === 'V8Worker' || comm === 'DelayedTaskSche') out.set(tid, V8_PLATFORM);
    else if (comm === 'libuv-worker') out.set(tid, 'libuv pool');
    else if (/acceptor|shard|refresh/.test(comm)) out.set(tid, roleGroup(comm));
    else if (comm === 'WorkerThread') out.set(tid, UNREPORTED);
    else if (comm === 'node') out.set(tid, unnamedRank++ < NODE20_PLATFORM_THREADS ? V8_PLATFORM : reports.size === 0 ? UNREPORTED : 'other');
    else out.set(tid, 'other');
  }
  return out;
}

/**
 * CPU per group between two {@link taskTimes} snapshots; `processMicros` (the
 * process total over the same interval) adds the "exited / rounding" rest.
 */
export function splitCpu(
  pid: number,
  before: Map<number, { comm: string; micros: number }>,
  after: Map<number, { comm: string; micros: number }>,
  reports: Map<number, ThreadReport>,
  processMicros: number,
): ThreadGroupCpu[] {
  const comms = new Map([...after].map(([tid, t]) => [tid, t.comm]));
  const groups = classify(pid, after.keys(), comms, reports);
  const byGroup = new Map<string, ThreadGroupCpu>();
  let attributed = 0;
  for (const [tid, t] of after) {
    const group = groups.get(tid) ?? 'other';
    const micros = t.micros - (before.get(tid)?.micros ?? 0);
    attributed += micros;
    const g = byGroup.get(group) ?? { group, threads: 0, micros: 0 };
    g.threads++;
    g.micros += micros;
    byGroup.set(group, g);
  }
  const order = ['main', 'acceptor', 'shard', 'refresh', V8_PLATFORM, 'libuv pool', 'other'];
  const rank = (g: string): number => (order.includes(g) ? order.indexOf(g) : order.length - 1);
  const out = [...byGroup.values()].sort((a, b) => rank(a.group) - rank(b.group) || a.group.localeCompare(b.group));
  out.push({ group: 'exited / rounding', threads: 0, micros: processMicros - attributed });
  return out;
}
