/**
 * The report's markdown tables: every row, the tools/call comparison, the
 * variant rows against their references, the gateway's CPU and memory per
 * thread, and every run.
 */
import { fmt, mib, ratioText } from './format.js';
import type { Run, ThreadMemory } from './measure.js';
import type { Summary } from './summary.js';
import type { ThreadReport } from './threads.js';
import { VARIANTS, WORKLOAD_LABEL, type WorkloadId } from './workloads.js';

const label = (w: string): string => WORKLOAD_LABEL[w as WorkloadId] ?? w;

const table = (header: string[], leftColumns: number, rows: string[][]): string =>
  [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i < leftColumns ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');

function statusText(s: Summary): string {
  if (s.non2xx === 0) return '0';
  const non2xx = Object.entries(s.statusCounts)
    .filter(([code]) => Number(code) < 200 || Number(code) > 299)
    .map(([code, n]) => `${n}×${code}`)
    .join(', ');
  return `${non2xx}${s.unexpected === 0 ? ' (expected)' : ` (**${s.unexpected} unexpected**)`}`;
}

/** Every row with its ratios to the workload's baseline and its memory. */
export function summaryTable(summaries: Summary[]): string {
  const header = [
    'workload',
    'server',
    'req/s',
    'p50 ms',
    'p99 ms',
    'CPU µs/req',
    'req/s ÷ base',
    'CPU ÷ base',
    'p99 ÷ base',
    'idle RSS MiB',
    'peak RSS MiB',
    'non-2xx',
    'errors',
    'client / other cores',
  ];
  return table(
    header,
    2,
    summaries.map((s) => {
      const isBase = s.role === 'baseline';
      return [
        label(s.workload),
        s.server,
        fmt(s.reqPerSec, 0),
        fmt(s.p50Ms, 2),
        fmt(s.p99Ms, 2),
        fmt(s.cpuMicrosPerReq, 1),
        isBase ? 'base' : ratioText(s.ratios?.reqPerSec),
        isBase ? 'base' : ratioText(s.ratios?.cpuMicrosPerReq),
        isBase ? 'base' : ratioText(s.ratios?.p99Ms),
        fmt(s.idleRssMiB, 0),
        fmt(s.peakRssMiB, 0),
        statusText(s),
        String(s.errors),
        `${fmt(s.clientCores, 2)} / ${fmt(s.otherCores, 2)}`,
      ];
    }),
  );
}

/** tools/call: every server against the Tool Service alone, the inline gateway and the SDK server (issue 9's table). */
export function callTable(summaries: Summary[]): string | undefined {
  const rows = summaries.filter((s) => s.workload === 'call');
  if (rows.length === 0) return undefined;
  const header = ['server', 'CPU µs/call', '÷ Tool Service', '÷ inline', 'req/s', '÷ inline', 'p99 ms', '÷ inline', 'idle RSS MiB', 'peak RSS MiB', 'peak RSS ÷ SDK', 'Tool Service µs/call'];
  return table(
    header,
    1,
    rows.map((s) => [
      s.server,
      fmt(s.cpuMicrosPerReq, 1),
      s.role === 'baseline' ? 'base' : ratioText(s.ratios?.cpuMicrosPerReq),
      s.kind === 'inline' ? 'base' : ratioText(s.inlineRatios?.cpuMicrosPerReq),
      fmt(s.reqPerSec, 0),
      s.kind === 'inline' ? 'base' : ratioText(s.inlineRatios?.reqPerSec),
      fmt(s.p99Ms, 2),
      s.kind === 'inline' ? 'base' : ratioText(s.inlineRatios?.p99Ms),
      fmt(s.idleRssMiB, 0),
      fmt(s.peakRssMiB, 0),
      s.kind === 'sdk' ? 'base' : ratioText(s.rssVsSdk),
      fmt(s.upstreamMicrosPerReq, 1),
    ]),
  );
}

/**
 * The variant rows (2026-07-28 requests, protected routes) against their
 * reference row of the same gateway in the same run: the era's and the
 * credential check's cost as ratios ("auth on ÷ auth off").
 */
export function variantTable(summaries: Summary[]): string | undefined {
  const rows = summaries.filter((s) => s.variantRatios !== undefined);
  if (rows.length === 0) return undefined;
  const header = ['workload', 'server', 'divided by', 'CPU µs/req', 'CPU ÷ ref', 'req/s', 'req/s ÷ ref', 'p99 ms', 'p99 ÷ ref', 'CPU ÷ base'];
  return table(
    header,
    3,
    rows.map((s) => {
      const v = VARIANTS[s.workload as WorkloadId];
      return [
        label(s.workload),
        s.server,
        v === undefined ? '–' : `${label(v.of)}, ${v.reference}`,
        fmt(s.cpuMicrosPerReq, 1),
        ratioText(s.variantRatios?.cpuMicrosPerReq),
        fmt(s.reqPerSec, 0),
        ratioText(s.variantRatios?.reqPerSec),
        fmt(s.p99Ms, 2),
        ratioText(s.variantRatios?.p99Ms),
        ratioText(s.ratios?.cpuMicrosPerReq),
      ];
    }),
  );
}

/** CPU per request by thread group for each gateway row of `workload`. */
export function threadCpuTables(summaries: Summary[], workload: WorkloadId): string[] {
  const out: string[] = [];
  for (const s of summaries.filter((x) => x.workload === workload && x.threads !== undefined)) {
    const rows = s.threads ?? [];
    const total = rows.reduce((a, r) => a + r.microsPerReq, 0);
    out.push(
      `${label(workload)} · ${s.server} (${fmt(s.cpuMicrosPerReq, 1)} µs/req in all):\n\n` +
        table(
          ['thread group', 'threads', 'CPU µs/req', 'share'],
          1,
          rows.map((r) => [r.group, r.threads > 0 ? String(r.threads) : '–', fmt(r.microsPerReq, 1), total > 0 ? `${fmt((100 * r.microsPerReq) / total, 0)} %` : '–']),
        ),
    );
  }
  return out;
}

const memCell = (bytes: number | undefined): string => fmt(bytes === undefined ? undefined : bytes / 2 ** 20, 1);

/** Heap of every JavaScript thread of a gateway at start-up (idle) and its maxima over the run. */
export function threadMemoryTable(m: ThreadMemory): string {
  const ends = new Map(m.end.map((r) => [r.tid, r]));
  const idles = new Map(m.idle.map((r) => [r.tid, r]));
  const tids = [...new Set([...idles.keys(), ...ends.keys()])].sort((a, b) => a - b);
  const rows = tids.map((tid) => {
    const idle: ThreadReport | undefined = idles.get(tid);
    const end: ThreadReport | undefined = ends.get(tid);
    return [
      `${(end ?? idle)?.role ?? '?'} (tid ${tid})`,
      memCell(idle?.now.heapUsed),
      memCell(idle?.now.heapTotal),
      memCell(idle?.now.external),
      memCell(end?.peak.heapUsed),
      memCell(end?.peak.heapTotal),
      memCell(end?.peak.external),
      memCell(end?.peak.arrayBuffers),
    ];
  });
  return `${m.server}:\n\n${table(['thread', 'idle heap used', 'idle heap total', 'idle external', 'peak heap used', 'peak heap total', 'peak external', 'peak ArrayBuffers'], 1, rows)}`;
}

/** Every run, in the order measured. */
export function rawTable(runs: Run[]): string {
  const header = ['repeat', 'workload', 'server', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'upstream µs/req', 'peak RSS MiB', 'non-2xx', 'errors', 'server / client / other cores', 'extra'];
  const lines = [`| ${header.join(' | ')} |`, '|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|'];
  for (const r of runs) {
    const extra =
      r.extra === undefined
        ? ''
        : Object.entries(r.extra)
            .map(([k, v]) => `${k} ${fmt(v, 0)}`)
            .join(', ');
    lines.push(
      `| ${r.repeat} | ${r.workload} | ${r.server} | ${fmt(r.reqPerSec, 0)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${fmt(r.cpuMicrosPerReq, 1)} | ${fmt(r.upstreamMicrosPerReq, 1)} | ${fmt(mib(r.runPeakRssKb), 0)} | ${r.non2xx} | ${r.errors} | ${fmt(r.serverCores, 2)} / ${fmt(r.clientCores, 2)} / ${fmt(r.otherCores, 2)} | ${extra} |`,
    );
  }
  return lines.join('\n');
}
