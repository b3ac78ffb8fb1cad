/**
 * From runs to rows: medians over repeats per server and workload, and the
 * ratios the report and the targets read — each the median over repeats of
 * (row ÷ reference) within one repeat, both measured back to back. A variant
 * workload's rows (workloads.ts `VARIANTS`) divide by the baseline of the
 * workload they vary and also by that workload's row of the same server.
 */
import { median } from '../harness.js';
import { mean, mib } from './format.js';
import type { Role, Run, RunState, ServerKind } from './measure.js';
import { baseWorkload, VARIANTS, WORKLOADS, type WorkloadId } from './workloads.js';

/** Row ÷ reference, per metric. */
export interface Ratios {
  reqPerSec: number;
  cpuMicrosPerReq: number;
  p99Ms: number;
}

/** CPU of one thread group per response (median over runs). */
export interface ThreadRow {
  group: string;
  threads: number;
  microsPerReq: number;
}

/** One row of the report: a server under a workload, medians over repeats. */
export interface Summary {
  workload: string;
  role: Role;
  kind: ServerKind;
  key: string;
  server: string;
  runtime: string;
  runs: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicrosPerReq: number;
  /** VmRSS after start-up, before any load. */
  idleRssMiB: number;
  /** Highest VmRSS sampled during this row's runs (warm-ups included). */
  peakRssMiB: number;
  serverCores: number;
  clientCores: number;
  otherCores: number;
  upstreamMicrosPerReq: number;
  non2xx: number;
  unexpected: number;
  errors: number;
  statusCounts: Record<string, number>;
  extra: Record<string, number>;
  /** Against the workload's baseline (bare uWS, the Tool Service alone, the idle gateway). */
  ratios?: Ratios;
  /** Variant workloads: against the same server's row of the workload it varies (legacy request, auth off). */
  variantRatios?: Ratios;
  /** Against the inline single-threaded gateway on the same runtime (tools/call rows). */
  inlineRatios?: Ratios;
  /** Gateway rows: against the acceptor + shard floor on the same runtime (the prototype of the gateway's shape). */
  floorRatios?: Ratios;
  /** Peak RSS ÷ the SDK server's peak RSS in the same workload. */
  rssVsSdk?: number;
  threads?: ThreadRow[];
}

const perRepeat = (mine: Run[], refs: Run[], f: (r: Run) => number): number => {
  const ratios: number[] = [];
  for (const rep of new Set(mine.map((r) => r.repeat))) {
    const a = mine.filter((r) => r.repeat === rep).map(f);
    const b = refs.filter((r) => r.repeat === rep).map(f);
    if (a.length > 0 && b.length > 0) ratios.push(mean(a) / mean(b));
  }
  return median(ratios);
};

const ratiosAgainst = (mine: Run[], refs: Run[]): Ratios | undefined =>
  refs.length === 0
    ? undefined
    : { reqPerSec: perRepeat(mine, refs, (r) => r.reqPerSec), cpuMicrosPerReq: perRepeat(mine, refs, (r) => r.cpuMicrosPerReq), p99Ms: perRepeat(mine, refs, (r) => r.p99Ms) };

function threadRows(mine: Run[]): ThreadRow[] | undefined {
  const withThreads = mine.filter((r) => r.threads !== undefined && r.total > 0);
  if (withThreads.length === 0) return undefined;
  const groups = [...new Set(withThreads.flatMap((r) => (r.threads ?? []).map((g) => g.group)))];
  return groups.map((group) => {
    const per = withThreads.map((r) => r.threads?.find((g) => g.group === group));
    return {
      group,
      threads: Math.max(0, ...per.map((g) => g?.threads ?? 0)),
      microsPerReq: median(withThreads.map((r, i) => (per[i]?.micros ?? 0) / r.total)),
    };
  });
}

/** The row of `key` under `workload`, or undefined when it has no runs. */
export function summarize(runs: Run[], workload: string, key: string, idleRssKb: Map<string, number>): Summary | undefined {
  const mine = runs.filter((r) => r.workload === workload && r.key === key);
  const first = mine[0];
  if (first === undefined) return undefined;
  const med = (f: (r: Run) => number): number => median(mine.map(f));
  const statusCounts: Record<string, number> = {};
  for (const r of mine) for (const [s, n] of Object.entries(r.statusCounts)) statusCounts[s] = (statusCounts[s] ?? 0) + n;
  const extraKeys = [...new Set(mine.flatMap((r) => Object.keys(r.extra ?? {})))];
  const peaks = mine.map((r) => r.runPeakRssKb).filter(Number.isFinite);
  const s: Summary = {
    workload,
    role: first.role,
    kind: first.kind,
    key,
    server: first.server,
    runtime: first.runtime,
    runs: mine.length,
    reqPerSec: med((r) => r.reqPerSec),
    p50Ms: med((r) => r.p50Ms),
    p99Ms: med((r) => r.p99Ms),
    cpuMicrosPerReq: med((r) => r.cpuMicrosPerReq),
    idleRssMiB: mib(idleRssKb.get(key) ?? Number.NaN),
    peakRssMiB: peaks.length > 0 ? mib(Math.max(...peaks)) : Number.NaN,
    serverCores: med((r) => r.serverCores),
    clientCores: med((r) => r.clientCores),
    otherCores: med((r) => r.otherCores),
    upstreamMicrosPerReq: med((r) => r.upstreamMicrosPerReq ?? Number.NaN),
    non2xx: mine.reduce((a, r) => a + r.non2xx, 0),
    unexpected: mine.reduce((a, r) => a + r.unexpected, 0),
    errors: mine.reduce((a, r) => a + r.errors, 0),
    statusCounts,
    extra: Object.fromEntries(extraKeys.map((k) => [k, med((r) => r.extra?.[k] ?? Number.NaN)])),
  };
  if (first.role !== 'baseline') {
    const baseOf = baseWorkload(workload);
    const base = ratiosAgainst(
      mine,
      runs.filter((r) => r.workload === baseOf && r.role === 'baseline'),
    );
    if (base !== undefined) s.ratios = base;
    const variantOf = VARIANTS[workload as WorkloadId]?.of;
    const ref =
      variantOf === undefined
        ? undefined
        : ratiosAgainst(
            mine,
            runs.filter((r) => r.workload === variantOf && r.key === (first.refKey ?? key)),
          );
    if (ref !== undefined) s.variantRatios = ref;
    // A comparator of the same workload on the row's runtime (or on the only runtime it ran on).
    const against = (kind: ServerKind): Ratios | undefined => {
      const refs = runs.filter((r) => r.workload === workload && r.kind === kind);
      const sameRuntime = refs.filter((r) => r.runtime === first.runtime);
      return ratiosAgainst(mine, sameRuntime.length > 0 ? sameRuntime : refs);
    };
    const inline = first.kind === 'inline' ? undefined : against('inline');
    if (inline !== undefined) s.inlineRatios = inline;
    const floor = first.kind === 'gateway' ? against('floor-sharded') : undefined;
    if (floor !== undefined) s.floorRatios = floor;
  }
  const threads = threadRows(mine);
  if (threads !== undefined) s.threads = threads;
  return s;
}

const ROLE_ORDER: Role[] = ['baseline', 'reference', 'gateway'];

/** Every row: workloads in table order, then baseline, comparators, gateways (runtimes in run order). */
export function allSummaries(state: RunState): Summary[] {
  const out: Summary[] = [];
  const workloads = [...WORKLOADS, ...new Set(state.runs.map((r) => r.workload))].filter((w, i, a) => a.indexOf(w) === i);
  for (const w of workloads) {
    const rows = ROLE_ORDER.flatMap((role) => [...new Set(state.runs.filter((r) => r.workload === w && r.role === role).map((r) => r.key))]);
    const summaries = rows.map((key) => summarize(state.runs, w, key, state.idleRssKb)).filter((s): s is Summary => s !== undefined);
    const sdks = summaries.filter((s) => s.kind === 'sdk');
    for (const s of summaries) {
      if (s.kind === 'sdk' || s.role === 'baseline') continue;
      // The SDK server on the row's runtime; a run that has it on one runtime only divides by that one.
      const sdk = sdks.find((r) => r.runtime === s.runtime) ?? sdks[0];
      if (sdk !== undefined) s.rssVsSdk = s.peakRssMiB / sdk.peakRssMiB;
    }
    out.push(...summaries);
  }
  return out;
}
