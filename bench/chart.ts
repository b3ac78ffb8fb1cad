/**
 * Hand-written SVG chart of a bench run (no plotting dependency): two panels
 * of grouped bars, one group per workload — server CPU µs per request (lower
 * is better) and req/s (higher is better) — each group comparing the gateway
 * with the baseline and the comparators measured in the same run. The README
 * embeds the result (`docs/bench/latest.svg`), so the file must render on its
 * own: inline styles only, system fonts, fixed size.
 */

/** One group of bars: a workload, its baseline (if any) and the gateway. */
export interface ChartGroup {
  /** Workload label under the group, e.g. "tools/list · 50 tools". */
  label: string;
  /** Legend-free name of the baseline bar, e.g. "bare uWS". */
  baselineLabel?: string;
  baseline?: { cpuMicrosPerReq: number; reqPerSec: number };
  /** Other servers measured in the same run (e.g. the inline gateway), drawn between baseline and gateway. */
  references?: Array<{ label: string; value: { cpuMicrosPerReq: number; reqPerSec: number } }>;
  gatewayLabel?: string;
  gateway?: { cpuMicrosPerReq: number; reqPerSec: number };
  /** Gateway ÷ baseline as the report computes them (median of per-repeat ratios). */
  ratios?: { cpuMicrosPerReq: number; reqPerSec: number };
}

const WIDTH = 960;
const PANEL_HEIGHT = 300;
const MARGIN = { left: 64, right: 16, top: 56, bottom: 82 };
const GATEWAY_COLOR = '#2563eb';
const BASELINE_COLOR = '#9ca3af';
const REFERENCE_COLOR = '#f59e0b';

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** A "nice" axis maximum (1, 2, 2.5, 5 × 10^k) at or above `max`. */
function niceMax(max: number): number {
  if (!Number.isFinite(max) || max <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= max) return m * exp;
  return 10 * exp;
}

function compact(n: number): string {
  if (!Number.isFinite(n)) return '–';
  const trim = (t: string): string => t.replace(/\.0$/, '');
  if (n >= 10_000) return `${(n / 1000).toFixed(0)}k`;
  if (n >= 1000) return `${trim((n / 1000).toFixed(1))}k`;
  if (n >= 100 || Number.isInteger(n)) return n.toFixed(0);
  return n.toFixed(1);
}

function panel(groups: ChartGroup[], y0: number, title: string, pick: (v: { cpuMicrosPerReq: number; reqPerSec: number }) => number): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const top = y0 + MARGIN.top;
  const values = groups.flatMap((g) => [g.baseline, ...(g.references ?? []).map((r) => r.value), g.gateway].filter((v) => v !== undefined).map((v) => pick(v)));
  const max = niceMax(Math.max(0, ...values.filter(Number.isFinite)));
  const out: string[] = [];
  out.push(`<text x="${MARGIN.left}" y="${y0 + 40}" font-size="15" font-weight="600" fill="#111827">${esc(title)}</text>`);
  // Grid and axis labels: 5 steps.
  for (let i = 0; i <= 5; i++) {
    const v = (max * i) / 5;
    const y = top + plotH - (plotH * i) / 5;
    out.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}" stroke="${i === 0 ? '#6b7280' : '#e5e7eb'}" stroke-width="1"/>`);
    out.push(`<text x="${MARGIN.left - 8}" y="${(y + 4).toFixed(1)}" font-size="11" fill="#6b7280" text-anchor="end">${compact(v)}</text>`);
  }
  const groupW = plotW / Math.max(1, groups.length);
  const gap = 10;
  const maxBars = Math.max(2, ...groups.map((g) => (g.baseline ? 1 : 0) + (g.references?.length ?? 0) + (g.gateway ? 1 : 0)));
  const barW = Math.min(56, (groupW - 24 - (maxBars - 1) * gap) / maxBars);
  groups.forEach((g, gi) => {
    const cx = MARGIN.left + groupW * (gi + 0.5);
    const bars: Array<{ v: number; color: string; name: string }> = [];
    if (g.baseline !== undefined) bars.push({ v: pick(g.baseline), color: BASELINE_COLOR, name: g.baselineLabel ?? 'baseline' });
    for (const r of g.references ?? []) bars.push({ v: pick(r.value), color: REFERENCE_COLOR, name: r.label });
    if (g.gateway !== undefined) bars.push({ v: pick(g.gateway), color: GATEWAY_COLOR, name: g.gatewayLabel ?? 'gateway' });
    const x0 = cx - (bars.length * barW + (bars.length - 1) * gap) / 2;
    bars.forEach((b, bi) => {
      const x = x0 + bi * (barW + gap);
      const h = Number.isFinite(b.v) ? (plotH * Math.min(b.v, max)) / max : 0;
      const y = top + plotH - h;
      out.push(
        `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" fill="${b.color}" rx="2"><title>${esc(`${g.label} · ${b.name}: ${compact(b.v)}`)}</title></rect>`,
      );
      out.push(`<text x="${(x + barW / 2).toFixed(1)}" y="${(y - 4).toFixed(1)}" font-size="11" fill="#111827" text-anchor="middle">${compact(b.v)}</text>`);
      out.push(`<text x="${(x + barW / 2).toFixed(1)}" y="${(top + plotH + 14).toFixed(1)}" font-size="10" fill="#6b7280" text-anchor="middle">${esc(b.name)}</text>`);
    });
    out.push(`<text x="${cx.toFixed(1)}" y="${(top + plotH + 32).toFixed(1)}" font-size="12" fill="#111827" text-anchor="middle">${esc(g.label)}</text>`);
    const r = g.ratios === undefined ? Number.NaN : pick(g.ratios);
    if (Number.isFinite(r)) {
      out.push(`<text x="${cx.toFixed(1)}" y="${(top + plotH + 48).toFixed(1)}" font-size="11" fill="#2563eb" text-anchor="middle">${esc(`${r.toFixed(2)}× ${g.baselineLabel ?? 'baseline'}`)}</text>`);
    }
  });
  return out.join('\n');
}

/** Renders the two-panel chart; `subtitle` carries the machine and knobs. */
export function renderChart(groups: ChartGroup[], title: string, subtitle: string): string {
  const head = 76;
  const height = head + 2 * PANEL_HEIGHT;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="16" y="26" font-size="18" font-weight="700" fill="#111827">${esc(title)}</text>`,
    `<text x="16" y="46" font-size="12" fill="#4b5563">${esc(subtitle)}</text>`,
    `<rect x="16" y="58" width="12" height="12" fill="${BASELINE_COLOR}"/><text x="34" y="68" font-size="12" fill="#111827">baseline measured in the same run</text>`,
    `<rect x="270" y="58" width="12" height="12" fill="${REFERENCE_COLOR}"/><text x="288" y="68" font-size="12" fill="#111827">comparator</text>`,
    `<rect x="370" y="58" width="12" height="12" fill="${GATEWAY_COLOR}"/><text x="388" y="68" font-size="12" fill="#111827">gateway (blue figure under a group: gateway ÷ baseline)</text>`,
    panel(groups, head - 16, 'Server CPU µs per request (all threads of the server process; lower is better)', (v) => v.cpuMicrosPerReq),
    panel(groups, head - 16 + PANEL_HEIGHT, 'Requests per second (loopback, load generator on the same cores; higher is better)', (v) => v.reqPerSec),
    '</svg>',
    '',
  ].join('\n');
}
