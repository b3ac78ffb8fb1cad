/**
 * The bench's targets as data, checked at the end of every run against the
 * gateway rows (each runtime's gateway separately). A target compares one
 * figure of a gateway row with a reference measured in the same run — the
 * workload's baseline, the inline single-threaded gateway, the SDK server,
 * a variant's reference row of the same gateway — or with a fixed figure
 * from a committed run.
 */
import { fmt, ratioText } from './format.js';
import type { Ratios, Summary } from './summary.js';
import type { WorkloadId } from './workloads.js';

type Metric = 'cpuMicrosPerReq' | 'reqPerSec' | 'p99Ms' | 'peakRssMiB';

/** One target: metric of a workload's gateway row against a reference, and its bound. */
interface TargetSpec {
  workload: WorkloadId;
  metric: Metric;
  /**
   * base: the workload's baseline; inline: the inline gateway; floor: the acceptor + shard floor;
   * sdk: the SDK server (peak RSS); variant: the same gateway's row of the workload this variant
   * varies; a number: a fixed figure.
   */
  against: 'base' | 'inline' | 'floor' | 'sdk' | 'variant' | { value: number; unit: string };
  name: string;
  requirement: string;
  atMost?: number;
  atLeast?: number;
}

/** Figures of the committed run bench/results/2026-11-30.md that targets are relative to. */
const COMMITTED_2026_11_30 = { mixedCpuMicros: 101.3, list5CpuRatio: 1.08, list50CpuRatio: 1.03 };
const LIST_REGRESSION = 1.05;
/** The gateway's own budget for the 2026-07-28 era and for a credential check (no issue sets one): ≤ 10 % more CPU per request. */
const VARIANT_BUDGET = 1.1;
const OWN_BUDGET = "the gateway's own budget, not from an issue";
/**
 * What the gateway's guarantees may cost over the issue's prototype of its shape, measured in the same run
 * (ADR-0019): argument and answer validation, strict response framing, edge checks, guards, metrics.
 */
const FLOOR_BUDGET = 1.3;

/** Issue 9's targets, the earlier ones they do not replace, and the gateway's own budgets (the variant rows, the distance to the floor). */
export const TARGETS: readonly TargetSpec[] = [
  {
    workload: 'list5',
    metric: 'cpuMicrosPerReq',
    against: 'base',
    name: 'tools/list · 5 tools: CPU/req',
    requirement: `≤ ${(LIST_REGRESSION * COMMITTED_2026_11_30.list5CpuRatio).toFixed(2)}× bare uWS (1.05 × the 1.08× of 2026-11-30)`,
    atMost: LIST_REGRESSION * COMMITTED_2026_11_30.list5CpuRatio,
  },
  {
    workload: 'list50',
    metric: 'cpuMicrosPerReq',
    against: 'base',
    name: 'tools/list · 50 tools: CPU/req',
    requirement: `≤ ${(LIST_REGRESSION * COMMITTED_2026_11_30.list50CpuRatio).toFixed(2)}× bare uWS (1.05 × the 1.03× of 2026-11-30)`,
    atMost: LIST_REGRESSION * COMMITTED_2026_11_30.list50CpuRatio,
  },
  { workload: 'list50', metric: 'reqPerSec', against: 'base', name: 'tools/list · 50 tools: req/s', requirement: '≥ 0.9× bare uWS', atLeast: 0.9 },
  { workload: 'call', metric: 'cpuMicrosPerReq', against: 'base', name: 'tools/call: CPU/call', requirement: "≤ 3.5× the Tool Service's own", atMost: 3.5 },
  { workload: 'call', metric: 'cpuMicrosPerReq', against: 'inline', name: 'tools/call: CPU/call vs inline', requirement: "≤ 0.7× the inline gateway's", atMost: 0.7 },
  {
    workload: 'call',
    metric: 'cpuMicrosPerReq',
    against: 'floor',
    name: 'tools/call: CPU/call vs the floor',
    requirement: `≤ ${FLOOR_BUDGET.toFixed(2)}× the acceptor + shard floor's (${OWN_BUDGET}: the issue's prototype of this shape, ADR-0019)`,
    atMost: FLOOR_BUDGET,
  },
  { workload: 'call', metric: 'reqPerSec', against: 'inline', name: 'tools/call: req/s vs inline', requirement: "≥ 1.3× the inline gateway's", atLeast: 1.3 },
  { workload: 'call', metric: 'p99Ms', against: 'inline', name: 'tools/call: p99 vs inline', requirement: "≤ 0.8× the inline gateway's", atMost: 0.8 },
  { workload: 'call', metric: 'reqPerSec', against: 'base', name: 'tools/call: req/s vs Tool Service', requirement: '≥ 0.5× the Tool Service called directly', atLeast: 0.5 },
  { workload: 'call', metric: 'peakRssMiB', against: 'sdk', name: 'tools/call: peak RSS under load', requirement: "≤ 0.6× the SDK server's", atMost: 0.6 },
  {
    workload: 'mixed',
    metric: 'cpuMicrosPerReq',
    against: { value: COMMITTED_2026_11_30.mixedCpuMicros, unit: 'µs' },
    name: 'mixed · 40 routes: CPU/req',
    requirement: `≤ 0.6× ${COMMITTED_2026_11_30.mixedCpuMicros} µs (2026-11-30) = ${(0.6 * COMMITTED_2026_11_30.mixedCpuMicros).toFixed(1)} µs`,
    atMost: 0.6,
  },
  { workload: 'refresh', metric: 'p99Ms', against: 'base', name: 'refresh under load: tools/list p99', requirement: '≤ 1.2× idle p99', atMost: 1.2 },
  {
    workload: 'list50-modern',
    metric: 'cpuMicrosPerReq',
    against: 'variant',
    name: 'tools/list · 50 tools, 2026-07-28: CPU/req',
    requirement: `≤ ${VARIANT_BUDGET.toFixed(2)}× the legacy request's (${OWN_BUDGET})`,
    atMost: VARIANT_BUDGET,
  },
  {
    workload: 'call-auth',
    metric: 'cpuMicrosPerReq',
    against: 'variant',
    name: 'tools/call · API key: CPU/call',
    requirement: `≤ ${VARIANT_BUDGET.toFixed(2)}× auth off (${OWN_BUDGET})`,
    atMost: VARIANT_BUDGET,
  },
  {
    workload: 'call-jwt',
    metric: 'cpuMicrosPerReq',
    against: 'variant',
    name: 'tools/call · JWT (cached): CPU/call',
    requirement: `≤ ${VARIANT_BUDGET.toFixed(2)}× auth off (${OWN_BUDGET})`,
    atMost: VARIANT_BUDGET,
  },
];

/** A target's outcome for one gateway row. */
export interface TargetCheck {
  name: string;
  /** The gateway row judged (server name, carries the runtime in a two-runtime run). */
  server: string;
  requirement: string;
  measured: string;
  /** null: not measured in this run. */
  met: boolean | null;
  /**
   * Targets against the inline gateway: the acceptor + shard floor of the gateway row's runtime
   * (the issue's own prototype of the gateway's shape, ADR-0019) judged by the same bound — whether
   * the shape can meet the target at all in this run (ADR-0025). Absent for other targets.
   */
  floor?: { measured: string; met: boolean | null };
}

/** A gateway row's ratios to each kind of reference. */
const RATIOS_AGAINST: Record<'base' | 'inline' | 'floor' | 'variant', (row: Summary) => Ratios | undefined> = {
  base: (row) => row.ratios,
  inline: (row) => row.inlineRatios,
  floor: (row) => row.floorRatios,
  variant: (row) => row.variantRatios,
};

/** The target's ratio for `row`; NaN and "–" when the row did not run. */
function measuredRatio(t: TargetSpec, row: Summary | undefined): { ratio: number; text: string } {
  if (row === undefined) return { ratio: Number.NaN, text: '–' };
  if (typeof t.against === 'object') {
    const v = row[t.metric];
    const ratio = v / t.against.value;
    return { ratio, text: Number.isFinite(ratio) ? `${fmt(v, 1)} ${t.against.unit} (${ratioText(ratio)})` : '–' };
  }
  let ratio: number | undefined;
  if (t.against === 'sdk') ratio = t.metric === 'peakRssMiB' ? row.rssVsSdk : undefined;
  else if (t.metric !== 'peakRssMiB') ratio = RATIOS_AGAINST[t.against](row)?.[t.metric];
  const r = ratio ?? Number.NaN;
  return { ratio: r, text: ratioText(r) };
}

/** Whether `ratio` is within the target's bound; null when it was not measured. */
function within(t: TargetSpec, ratio: number): boolean | null {
  if (!Number.isFinite(ratio)) return null;
  return t.atMost !== undefined ? ratio <= t.atMost : ratio >= (t.atLeast ?? 0);
}

/** The acceptor + shard floor's row of `row`'s workload on `row`'s runtime (or the only one that ran). */
function floorOf(summaries: Summary[], row: Summary): Summary | undefined {
  const floors = summaries.filter((s) => s.workload === row.workload && s.kind === 'floor-sharded');
  return floors.find((s) => s.runtime === row.runtime) ?? (floors.length === 1 ? floors[0] : undefined);
}

/** Every target against every gateway row of its workload (one check per runtime). */
export function targetChecks(summaries: Summary[]): TargetCheck[] {
  const out: TargetCheck[] = [];
  const gatewayKeys = [...new Set(summaries.filter((s) => s.kind === 'gateway' && s.workload !== 'refresh').map((s) => s.key))];
  if (gatewayKeys.length === 0) gatewayKeys.push('gateway');
  for (const t of TARGETS) {
    // Refresh rows are the churning gateway (its own key); the others follow the gateway keys of the run.
    const keys = t.workload === 'refresh' ? [...new Set(summaries.filter((s) => s.workload === 'refresh' && s.role === 'gateway').map((s) => s.key))] : gatewayKeys;
    // Judged on every gateway that ran the workload (the auth rows have a gateway of their own); "not measured" once otherwise.
    const ran = keys.filter((k) => summaries.some((s) => s.workload === t.workload && s.key === k));
    for (const key of ran.length > 0 ? ran : [keys[0] ?? 'gateway']) {
      const row = summaries.find((s) => s.workload === t.workload && s.key === key);
      const m = measuredRatio(t, row);
      const check: TargetCheck = { name: t.name, server: row?.server ?? key, requirement: t.requirement, measured: m.text, met: within(t, m.ratio) };
      if (t.against === 'inline') {
        const f = measuredRatio(t, row === undefined ? undefined : floorOf(summaries, row));
        check.floor = { measured: f.text, met: within(t, f.ratio) };
      }
      out.push(check);
    }
  }
  return out;
}

const statusText = (met: boolean | null): string => (met === null ? 'not measured' : met ? 'met' : 'not met');

/** The floor's figure for a target against the inline gateway ("–" for the others). */
export const floorText = (c: TargetCheck): string => (c.floor === undefined ? '–' : `${c.floor.measured} (${statusText(c.floor.met)})`);

/**
 * The targets as a markdown table; `perGateway` adds the gateway column (two-runtime runs). The last
 * column judges the acceptor + shard floor by the targets against the inline gateway (ADR-0025).
 */
export function targetsText(checks: TargetCheck[], perGateway: boolean): string {
  const multi = perGateway;
  const lines = [`| target |${multi ? ' gateway |' : ''} requirement | measured | status | the acceptor + shard floor, same bound |`, `|---|${multi ? '---|' : ''}---|---:|---|---|`];
  for (const c of checks) {
    lines.push(`| ${c.name} |${multi ? ` ${c.server} |` : ''} ${c.requirement} | ${c.measured} | **${statusText(c.met)}** | ${floorText(c)} |`);
  }
  return lines.join('\n');
}
