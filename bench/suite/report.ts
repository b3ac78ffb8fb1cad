/**
 * Output of a run: the console summary, bench/results/<date>.md and .json,
 * and the chart docs/bench/latest.svg (full runs that finished only).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderChart, type ChartGroup } from '../chart.js';
import { describe, gitDescribe, machine, workersText } from './environment.js';
import { fmt } from './format.js';
import type { RunState } from './measure.js';
import type { Options } from './options.js';
import { fromBench } from './servers.js';
import { allSummaries, type Summary } from './summary.js';
import { callTable, rawTable, summaryTable, threadCpuTables, threadMemoryTable, variantTable } from './tables.js';
import { floorText, targetChecks, targetsText } from './targets.js';
import { sweepTable } from './sweep.js';
import { VARIANTS, WORKLOADS, type WorkloadId } from './workloads.js';

const resultsDir = (): string => fromBench('../../bench/results/');
const chartFile = (): string => fromBench('../../docs/bench/latest.svg');

const NOTES = [
  'CPU µs/req: user+system time of the server process, all threads (acceptors, shards, refresh worker, GC helpers), from /proc/<pid>/stat, ÷ responses. On a small machine the load generator (autocannon, this process) shares the cores, so req/s is bounded by client + server CPU; CPU µs/req is the steadier cost figure.',
  'Ratios (÷ base, ÷ inline): median over repeats of row ÷ reference within the same repeat, both measured back to back. Baselines: bare uWS answers a precomputed body of the same size (0 tools for initialize) after reading the request body; for tools/call the baseline is the echo Tool Service called directly, and "CPU ÷ base" compares the gateway\'s CPU per call with the Tool Service\'s own.',
  "inline gateway (bench/inline-gateway.ts): the honest single-threaded comparator for tools/call — uWebSockets.js on one thread, JSON.parse of the body, the tool name checked against a Set, undici Pool.request to the same echo Tool Service with as many keep-alive connections as the gateway's tools.connectionsPerService, the answer wrapped as a JSON-RPC result. In a two-runtime run each gateway is compared with the inline gateway on its own runtime.",
  "floor gateways (bench/floor-gateway.ts): the floor of tools/call on this machine for each shape — the issue's prototypes, with nothing but the forwarding: JSON.parse, the tool name looked up, the client's argument bytes spliced into a pre-built request written once on a keep-alive net.Socket, the answer framed by its Content-Length only and wrapped. 'one thread' does it all on the uWS thread; 'acceptor + shard' hands the call to one worker thread and the answer back over the gateway's own rings (src/shared/threads/ring.ts). No timeouts, limits, validation, metrics, chunked answers or error paths: the gateway's cost above the acceptor + shard floor is what those cost.",
  'MCP SDK stateless server (bench/sdk-server.ts): @modelcontextprotocol/sdk v1 McpServer + StreamableHTTPServerTransport with sessionIdGenerator undefined, one server and transport per request as the SDK\'s simpleStatelessStreamableHttp example does, JSON answers (enableJsonResponse); one tool, the one the row calls (the pattern registers every tool on every request, but its per-request cost is the server set-up — a new Ajv validator per McpServer — and 50 tools cost within 10 % of one), with a zod schema converted once from its JSON Schema; each call forwarded to the echo Tool Service with undici. It runs on every runtime of the run, and on each runtime it is the memory reference: "peak RSS ÷ SDK" divides by the SDK server on the same Node.',
  "idle RSS: VmRSS right after start-up, before any request (the gateway with its 42 catalogs loaded). peak RSS: highest VmRSS sampled every 100 ms during the row's runs, warm-ups included. One gateway process serves every workload of the main phase, so its peak in a row includes what earlier rows left behind (RSS rarely shrinks); a peak below the idle figure means start-up garbage (catalog builds) was returned under load.",
  'Per thread: CPU of each kernel thread from /proc/<pid>/task/<tid>/stat over the measured run; JavaScript threads name themselves through bench/thread-probe.ts (preloaded with NODE_OPTIONS=--import; it also reports each isolate\'s heap every 250 ms); V8 platform threads (GC helpers, concurrent compiler) are recognised by name on Node ≥ 22 and by creation order on Node 20; "exited / rounding" is the process total minus the threads alive at the end.',
  'client / other cores: CPU of the load generator and of every other process (the upstream Tool Service included) ÷ wall time; high "other" means the machine was busy and that run\'s req/s and latency are depressed.',
  'non-2xx: answers per status; "expected" are the deliberate 404s of the mixed load. errors: connection errors and timeouts.',
];

const bullets = (xs: string[]): string[] => xs.map((n) => `- ${n}`);

function perThreadSection(summaries: Summary[], state: RunState): string[] {
  const cpu = [...threadCpuTables(summaries, 'call'), ...threadCpuTables(summaries, 'mixed')];
  const mem = [...state.threadMemory.values()].filter((m) => m.idle.length > 0 || m.end.length > 0).map(threadMemoryTable);
  if (cpu.length === 0 && mem.length === 0) return [];
  return [
    '## Per thread',
    '',
    'CPU µs per request by thread group (median over repeats):',
    '',
    ...cpu.flatMap((t) => [t, '']),
    'Heap per JavaScript thread, MiB (idle: at start-up; peak: maxima over the whole phase; SharedArrayBuffers may be counted in every thread that maps them):',
    '',
    ...mem.flatMap((t) => [t, '']),
  ];
}

function chart(o: Options, state: RunState, summaries: Summary[], date: string): string {
  const primary = (w: WorkloadId): Summary[] => summaries.filter((s) => s.workload === w);
  const shortLabel: Partial<Record<WorkloadId, string>> = {
    list5: 'tools/list · 5 tools',
    list50: 'tools/list · 50 tools',
    call: 'tools/call',
    initialize: 'initialize',
    mixed: 'mixed · 40 routes',
    refresh: 'tools/list under refresh',
  };
  const baseName: Partial<Record<WorkloadId, string>> = { list5: 'bare uWS', list50: 'bare uWS', call: 'service', initialize: 'bare uWS', mixed: '', refresh: 'idle' };
  const groups: ChartGroup[] = [];
  // One group per request kind keeps the fixed-width chart readable; the variant rows are in the tables.
  for (const w of WORKLOADS.filter((x) => VARIANTS[x] === undefined)) {
    const rows = primary(w);
    const b = rows.find((s) => s.role === 'baseline');
    const gateways = rows.filter((s) => s.role === 'gateway');
    const g = gateways[0];
    const refs = [...rows.filter((s) => s.role === 'reference'), ...gateways.slice(1)];
    if (b === undefined && g === undefined) continue;
    groups.push({
      label: shortLabel[w] ?? w,
      ...(b !== undefined ? { baseline: b, baselineLabel: baseName[w] ?? 'base' } : {}),
      ...(refs.length > 0 ? { references: refs.map((r) => ({ label: r.kind === 'gateway' ? r.runtime : r.kind, value: r })) } : {}),
      ...(g !== undefined ? { gateway: g, gatewayLabel: w === 'refresh' ? 'churning' : 'gateway' } : {}),
      ...(g?.ratios !== undefined ? { ratios: g.ratios } : {}),
    });
  }
  const m = machine(state.runtimes);
  return renderChart(
    groups,
    `mcp-route-gateway benchmark, ${date}`,
    `servers on node ${state.runtimes[0]?.version ?? String(m['node'])}, ${String(m['cores'])} cores (${String(m['cpu'])}) · gateway ${workersText(o)} · ${o.connections} connections · ${o.durationSec} s × ${o.repeats} repeats, medians`,
  );
}

/** Writes the report files; returns their paths. The chart only for a finished run. */
export function writeOutputs(o: Options, state: RunState, partial: boolean): string[] {
  const date = state.started.toISOString().slice(0, 10);
  const suffix = o.sweep ? '-sweep' : '';
  mkdirSync(resultsDir(), { recursive: true });
  const md = join(resultsDir(), `${date}${suffix}.md`);
  const json = join(resultsDir(), `${date}${suffix}.json`);
  const meta = { date: state.started.toISOString(), gateway: gitDescribe(), machine: machine(state.runtimes), knobs: { ...o, combos: o.sweep ? o.combos : undefined }, partial };
  const skipped = [...state.skipped].map(([k, v]) => `- skipped ${k}: ${v}`);
  const head = [
    o.sweep ? `# Gateway benchmark — acceptors × shards sweep, ${date}` : `# Gateway benchmark, ${date}`,
    '',
    describe(o, state.runtimes),
    partial ? '\n**Partial: the run stopped early.**\n' : '',
  ];
  const details = ['<details><summary>Every run</summary>\n', rawTable(state.runs), '\n</details>', ''];
  if (o.sweep) {
    const t = sweepTable(o, state.runs);
    writeFileSync(json, `${JSON.stringify({ ...meta, sweep: t.rows, runs: state.runs, skipped: Object.fromEntries(state.skipped) }, null, 2)}\n`);
    writeFileSync(md, [...head, t.text, '', ...bullets(NOTES), ...skipped, '', ...details].join('\n'));
    return [md, json];
  }
  const summaries = allSummaries(state);
  const checks = targetChecks(summaries);
  const threadMemory = Object.fromEntries(state.threadMemory);
  writeFileSync(json, `${JSON.stringify({ ...meta, summaries, targets: checks, threadMemory, notes: state.notes, skipped: Object.fromEntries(state.skipped), runs: state.runs }, null, 2)}\n`);
  const call = callTable(summaries);
  const variants = variantTable(summaries);
  writeFileSync(
    md,
    [
      ...head,
      summaryTable(summaries),
      '',
      ...(call !== undefined ? ['## tools/call against the Tool Service, the inline gateway and the SDK server', '', call, ''] : []),
      ...(variants !== undefined ? ['## Protocol era and auth: the same gateway, one change to the request', '', variants, ''] : []),
      ...perThreadSection(summaries, state),
      '## Targets',
      '',
      targetsText(checks, state.runtimes.length > 1),
      '',
      '## Notes',
      '',
      ...bullets(NOTES),
      ...bullets(state.notes),
      ...skipped,
      '',
      'Chart: `docs/bench/latest.svg` (CPU µs per request and req/s, gateway vs baseline and comparators).',
      '',
      ...details,
    ].join('\n'),
  );
  const files = [md, json];
  if (!partial) {
    mkdirSync(fromBench('../../docs/bench/'), { recursive: true });
    writeFileSync(chartFile(), chart(o, state, summaries, date));
    files.push(chartFile());
  }
  return files;
}

/** Prints the run's tables, notes and targets to the console. */
export function printSummary(o: Options, state: RunState): void {
  console.log('');
  if (o.sweep) {
    console.log(sweepTable(o, state.runs).text);
    return;
  }
  const summaries = allSummaries(state);
  console.log(summaryTable(summaries));
  const call = callTable(summaries);
  if (call !== undefined) console.log(`\ntools/call against its comparators:\n${call}`);
  const variants = variantTable(summaries);
  if (variants !== undefined) console.log(`\nprotocol era and auth, against their reference rows (auth rows: the gateway without auth):\n${variants}`);
  for (const line of perThreadSection(summaries, state).slice(1)) console.log(line);
  for (const n of state.notes) console.log(`- ${n}`);
  for (const [k, v] of state.skipped) console.log(`- skipped ${k}: ${v}`);
  for (const s of summaries.filter((x) => x.workload === 'call' && x.kind === 'gateway'))
    console.log(`- echo Tool Service CPU during ${s.server} tools/call: ${fmt(s.upstreamMicrosPerReq, 1)} µs/req`);
  console.log('\nTargets (ratios measured in this run):');
  for (const c of targetChecks(summaries)) {
    const who = state.runtimes.length > 1 ? ` [${c.server}]` : '';
    const floor = c.floor === undefined ? '' : `; the acceptor + shard floor: ${floorText(c)}`;
    console.log(`  ${c.met === null ? 'NOT MEASURED' : c.met ? 'MET        ' : 'NOT MET    '}  ${c.name}${who}: ${c.measured} (target ${c.requirement}${floor})`);
  }
}
