/**
 * Measured runs: what a target is, one run of it (warm-up, load, CPU of the
 * server, of its upstream, of this process and of the rest of the machine,
 * peak RSS sampled during the run, CPU per thread group), the probe pass
 * before any load, and the interleaved repeats.
 */
import { cpuTimeMicros, machineBusyMicros, measure, rssKb, runLoad, type LoadOptions, type MeasureResult, type SpawnedServer } from '../harness.js';
import { fmt } from './format.js';
import type { Options } from './options.js';
import type { Runtime } from './servers.js';
import { readThreadReports, splitCpu, taskTimes, type ThreadGroupCpu, type ThreadReport } from './threads.js';

/** baseline: what ratios divide by; reference: a comparator with its own ratios; gateway: what is judged. */
export type Role = 'baseline' | 'reference' | 'gateway';
/** Which server a row measures; ratios look comparators up by kind. */
export type ServerKind = 'bare' | 'echo' | 'inline' | 'floor-inline' | 'floor-sharded' | 'sdk' | 'gateway';

const RSS_SAMPLE_MS = 100;

/** One measured run of one target. */
export interface Run extends MeasureResult {
  workload: string;
  role: Role;
  kind: ServerKind;
  /** Stable id of the server row: kind plus runtime tag. */
  key: string;
  /** Key of the server whose row of the variant's reference workload this row divides by (default: `key`). */
  refKey?: string;
  /** Name of the server measured, e.g. "bare uWS", "gateway · node v24.22.3". */
  server: string;
  /** `process.version` of the Node the server ran on. */
  runtime: string;
  repeat: number;
  /** Non-2xx answers not expected by the workload (e.g. 404 of the mixed load's unknown route are expected). */
  unexpected: number;
  /** Server CPU ÷ wall time, in cores. */
  serverCores: number;
  /** Load generator (this process) CPU ÷ wall time, in cores. */
  clientCores: number;
  /** CPU of every other process (upstream services included) ÷ wall time, in cores. */
  otherCores: number;
  /** Highest VmRSS of the server sampled every 100 ms during warm-up and run, KiB. */
  runPeakRssKb: number;
  /** CPU µs of the upstream Tool Service per response, when the target has one. */
  upstreamMicrosPerReq?: number;
  /** Server CPU by thread group over the measured run (gateway targets). */
  threads?: ThreadGroupCpu[];
  /** Workload-specific figures (refresh: swaps and manifests per second). */
  extra?: Record<string, number>;
}

/** Something to load: a server, a request mix, and what counts as a correct answer. */
export interface Target {
  workload: string;
  role: Role;
  kind: ServerKind;
  key: string;
  /** See {@link Run.refKey}. */
  refKey?: string;
  serverName: string;
  runtime: Runtime;
  server: SpawnedServer;
  load: LoadOptions;
  /** Non-2xx statuses this load provokes on purpose. */
  expectedStatuses?: number[];
  upstream?: SpawnedServer;
  /** Where the server's threads report themselves (gateways): enables the per-thread CPU split. */
  threadDir?: string;
  /** Checks answers once before the first run; returns a problem or undefined. */
  probe(): Promise<string | undefined>;
  /** Runs before the warm-up of every run (refresh: pause/resume churn). */
  prepare?(): Promise<void>;
  /** Figures to difference over the measured run (refresh: counters). */
  counters?(): Promise<Record<string, number>>;
}

/** Per-thread memory of a gateway: reports at phase start (idle) and at phase end. */
export interface ThreadMemory {
  server: string;
  idle: ThreadReport[];
  end: ThreadReport[];
}

/** Everything a run accumulates for the report. */
export interface RunState {
  runs: Run[];
  skipped: Map<string, string>;
  notes: string[];
  started: Date;
  /** VmRSS of each server key after start-up, before any load, KiB. */
  idleRssKb: Map<string, number>;
  threadMemory: Map<string, ThreadMemory>;
  /** Runtimes of this run, primary first. */
  runtimes: Runtime[];
}

/** Samples VmRSS of `pid` every 100 ms until `stop()`, which returns the maximum seen (KiB). */
export function rssSampler(pid: number): { stop(): number } {
  let peak = rssKb(pid);
  const take = (): void => {
    const now = rssKb(pid);
    if (!(now <= peak)) peak = now;
  };
  const timer = setInterval(take, RSS_SAMPLE_MS);
  return {
    stop: () => {
      clearInterval(timer);
      take();
      return peak;
    },
  };
}

/** What one warm-up + measured load yields before it becomes a {@link Run}. */
interface Loaded {
  result: MeasureResult;
  clientMicros: number;
  busyMicros: number;
  upstreamMicros: number;
  threads: ThreadGroupCpu[] | undefined;
  counters: Record<string, number> | undefined;
}

async function warmUpAndLoad(t: Target, o: Options): Promise<Loaded> {
  if (o.warmupSec > 0) await runLoad({ ...t.load, durationSec: o.warmupSec });
  const countersBefore = await t.counters?.();
  const upstreamBefore = t.upstream !== undefined ? cpuTimeMicros(t.upstream.pid) : 0;
  const tasksBefore = t.threadDir !== undefined ? taskTimes(t.server.pid) : undefined;
  const busyBefore = machineBusyMicros();
  const clientBefore = process.cpuUsage();
  const result = await measure(t.server.pid, t.load);
  const client = process.cpuUsage(clientBefore);
  const busyMicros = machineBusyMicros() - busyBefore;
  const threads = tasksBefore !== undefined ? splitCpu(t.server.pid, tasksBefore, taskTimes(t.server.pid), readThreadReports(t.threadDir), result.cpuMicros) : undefined;
  const upstreamMicros = t.upstream !== undefined ? cpuTimeMicros(t.upstream.pid) - upstreamBefore : 0;
  const countersAfter = await t.counters?.();
  let counters: Record<string, number> | undefined;
  if (countersBefore !== undefined && countersAfter !== undefined) {
    counters = {};
    for (const [k, v] of Object.entries(countersAfter)) counters[`${k}PerSec`] = (v - (countersBefore[k] ?? 0)) / result.durationSec;
  }
  return { result, clientMicros: client.user + client.system, busyMicros, upstreamMicros, threads, counters };
}

/** One run: prepare, warm-up (discarded), measured load; logs one line. */
export async function measureTarget(t: Target, o: Options, repeat: number): Promise<Run> {
  await t.prepare?.();
  const rss = rssSampler(t.server.pid);
  let loaded: Loaded;
  try {
    loaded = await warmUpAndLoad(t, o);
  } finally {
    rss.stop();
  }
  const { result, clientMicros } = loaded;
  const expected = (t.expectedStatuses ?? []).reduce((a, s) => a + (result.statusCounts[s] ?? 0), 0);
  const run: Run = {
    ...result,
    workload: t.workload,
    role: t.role,
    kind: t.kind,
    key: t.key,
    ...(t.refKey !== undefined ? { refKey: t.refKey } : {}),
    server: t.serverName,
    runtime: t.runtime.version,
    repeat,
    unexpected: result.non2xx - expected,
    serverCores: result.cpuMicros / 1e6 / result.durationSec,
    clientCores: clientMicros / 1e6 / result.durationSec,
    otherCores: Math.max(0, loaded.busyMicros - result.cpuMicros - clientMicros) / 1e6 / result.durationSec,
    runPeakRssKb: rss.stop(),
  };
  if (loaded.threads !== undefined) run.threads = loaded.threads;
  if (t.upstream !== undefined && result.total > 0) run.upstreamMicrosPerReq = loaded.upstreamMicros / result.total;
  if (loaded.counters !== undefined) run.extra = loaded.counters;
  const extra =
    run.extra === undefined
      ? ''
      : `  ${Object.entries(run.extra)
          .map(([k, v]) => `${k} ${fmt(v, 0)}`)
          .join(' ')}`;
  console.log(
    `  r${repeat} ${`${t.workload} · ${t.serverName}`.padEnd(40)} ${fmt(run.reqPerSec, 0).padStart(6)} req/s  p50 ${fmt(run.p50Ms, 2).padStart(6)}  p99 ${fmt(run.p99Ms, 2).padStart(6)} ms  ` +
      `${fmt(run.cpuMicrosPerReq, 1).padStart(6)} µs/req  RSS ${fmt(run.runPeakRssKb / 1024, 0)} MiB  non-2xx ${run.non2xx}${run.unexpected > 0 ? ` (${run.unexpected} unexpected)` : ''}  ` +
      `client ${fmt(run.clientCores, 2)} other ${fmt(run.otherCores, 2)} cores${extra}`,
  );
  return run;
}

/** Probes every target once; a wrong baseline aborts the run, any other wrong target is skipped. */
export async function probeTargets(targets: Target[], state: RunState): Promise<Target[]> {
  const ok: Target[] = [];
  for (const t of targets) {
    const problem = await t.probe();
    if (problem === undefined) {
      ok.push(t);
      continue;
    }
    if (t.role === 'baseline') throw new Error(`baseline ${t.workload} · ${t.serverName} answers wrongly: ${problem}`);
    state.skipped.set(`${t.workload}/${t.key}`, problem);
    console.log(`  ${t.workload} · ${t.serverName}: skipped — ${problem}`);
  }
  return ok;
}

/** Runs every target once per repeat, interleaved, alternating order. */
export async function runInterleaved(targets: Target[], o: Options, state: RunState): Promise<void> {
  for (let repeat = 1; repeat <= o.repeats; repeat++) {
    const order = repeat % 2 === 1 ? targets : [...targets].reverse();
    for (const t of order) state.runs.push(await measureTarget(t, o, repeat));
  }
}

/** Records a server's VmRSS now as its idle RSS (call after start-up, before any load). */
export function recordIdleRss(state: RunState, key: string, pid: number): void {
  state.idleRssKb.set(key, rssKb(pid));
}
