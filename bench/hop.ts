/**
 * Hop bench (`node dist/bench/hop.js`, < 3 min with defaults): what does
 * handing each request from the uWebSockets.js acceptor thread to a worker
 * thread cost, compared with answering on the acceptor thread? (SPEC §2,
 * "where answers are computed".)
 *
 * Every mode of bench/hop-server.ts answers the same `POST /mcp/bench`
 * `tools/list` request with the same 50-tool answer (same byte length); only
 * the place the answer comes from differs. Each mode runs as its own process,
 * so the server CPU per request (all threads, from /proc) is charged to that
 * mode alone. Modes are interleaved over rounds (alternating order) and the
 * median of each figure per mode is reported, with ratios to `bare`.
 *
 * Knobs: BENCH_CONNECTIONS (50), BENCH_DURATION seconds (5), BENCH_WARMUP
 * seconds (1, discarded), BENCH_REPEATS rounds (2), BENCH_TOOLS (50: the answer's tool count; 1 gives a small, tools/call-sized answer), BENCH_KEEP_TMP=1 (keep logs).
 * The table is also written to bench/results/hop-<YYYY-MM-DD>.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { generateManifest, toolsListResultBytes } from './catalog.js';
import { freePort, killAll, machineBusyMicros, measure, median, runLoad, spawnServer, type LoadOptions, type MeasureResult, type SpawnedServer } from './harness.js';

// Same list as bench/hop-server.ts (not imported from there: importing it starts a server).
const MODES = ['bare', 'sab', 'post-per-request', 'batched', 'batched-2w', 'ring', 'ring-2w'] as const;
type Mode = (typeof MODES)[number];

const TOOL_COUNT = Math.floor(envNumber('BENCH_TOOLS', 50, 1));
const READY_TIMEOUT_MS = 10_000;

function envNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}: expected a number >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

const CONNECTIONS = Math.floor(envNumber('BENCH_CONNECTIONS', 50, 1));
const DURATION = envNumber('BENCH_DURATION', 5, 0.5);
const WARMUP = envNumber('BENCH_WARMUP', 1, 0);
const REPEATS = Math.floor(envNumber('BENCH_REPEATS', 2, 1));

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

/** One measured run of one mode. */
interface Run extends MeasureResult {
  mode: Mode;
  round: number;
  /** Load generator (this process) CPU during the measured run, in cores. */
  clientCores: number;
  /** CPU used by everything else on the machine during the measured run, in cores. */
  otherCores: number;
}

/** Median figures of one mode. */
interface Summary {
  mode: Mode;
  runs: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicrosPerReq: number;
  serverCores: number;
  clientCores: number;
  otherCores: number;
  non2xx: number;
  errors: number;
}

const runs: Run[] = [];
const skipped = new Map<Mode, string>();

function summarize(mode: Mode): Summary | undefined {
  const mine = runs.filter((r) => r.mode === mode);
  if (mine.length === 0) return undefined;
  const med = (f: (r: Run) => number): number => median(mine.map(f));
  return {
    mode,
    runs: mine.length,
    reqPerSec: med((r) => r.reqPerSec),
    p50Ms: med((r) => r.p50Ms),
    p99Ms: med((r) => r.p99Ms),
    cpuMicrosPerReq: med((r) => r.cpuMicrosPerReq),
    serverCores: med((r) => r.cpuMicros / 1e6 / r.durationSec),
    clientCores: med((r) => r.clientCores),
    otherCores: med((r) => r.otherCores),
    non2xx: mine.reduce((a, r) => a + r.non2xx, 0),
    errors: mine.reduce((a, r) => a + r.errors, 0),
  };
}

function fmt(n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(digits);
}

function ratio(a: number, b: number | undefined): string {
  return b === undefined ? '–' : `${fmt(a / b, 2)}×`;
}

/** The summary table (markdown), medians per mode with ratios to `bare`. */
function table(): string {
  const header = ['mode', 'req/s', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'req/s ÷ bare', 'p99 ÷ bare', 'CPU/req ÷ bare', 'server cores', 'client cores', 'other cores', 'non-2xx / errors'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  const bare = summarize('bare');
  for (const mode of MODES) {
    const s = summarize(mode);
    if (s === undefined) {
      lines.push(`| ${mode} | skipped: ${skipped.get(mode) ?? 'not run'} |${' |'.repeat(header.length - 2)}`);
      continue;
    }
    lines.push(
      `| ${[
        mode,
        fmt(s.reqPerSec, 0),
        fmt(s.p50Ms, 2),
        fmt(s.p99Ms, 2),
        fmt(s.cpuMicrosPerReq, 1),
        ratio(s.reqPerSec, bare?.reqPerSec),
        ratio(s.p99Ms, bare?.p99Ms),
        ratio(s.cpuMicrosPerReq, bare?.cpuMicrosPerReq),
        fmt(s.serverCores, 2),
        fmt(s.clientCores, 2),
        fmt(s.otherCores, 2),
        `${s.non2xx} / ${s.errors}`,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** Every run, in the order measured. */
function rawTable(): string {
  const lines = ['| round | mode | req/s | p50 ms | p99 ms | server CPU µs/req | client cores | other cores |', '|---:|---|---:|---:|---:|---:|---:|---:|'];
  for (const r of runs) {
    lines.push(`| ${r.round} | ${r.mode} | ${fmt(r.reqPerSec, 0)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${fmt(r.cpuMicrosPerReq, 1)} | ${fmt(r.clientCores, 2)} | ${fmt(r.otherCores, 2)} |`);
  }
  return lines.join('\n');
}

const header = (): string =>
  `# hop bench — acceptor-thread answer vs worker hand-off\n\n` +
  `node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), ` +
  `${CONNECTIONS} connections, ${DURATION} s measured after ${WARMUP} s warm-up, ${REPEATS} interleaved round(s), median per mode; ` +
  `${TOOL_COUNT}-tool tools/list answer.`;

const NOTES = [
  'server CPU µs/req: user+system time of the server process (all threads) ÷ responses, from /proc. server/client cores: CPU time ÷ wall time of the server and of the load generator (autocannon, this process); both share the same cores, so req/s is bounded by their sum. other cores: CPU used by every other process on the machine during the run (from /proc/stat); when it is high, req/s and latency of that run are depressed.',
  "bare: precomputed Buffer on the uWS thread. sab: SharedArrayBuffer template (prepared by a worker) + id tail joined by the gateway's writeReply. post-per-request: one structured-clone postMessage each way per request. batched / batched-2w: the gateway's ShardDispatcher + FrameBatch frames, one transferred buffer per event-loop turn each way, 1 / 2 workers.",
  'No mode parses the request; every mode copies the request body out of uWS.',
];

function report(partial: boolean): string {
  return [
    header(),
    partial ? '\n**Partial: the run stopped early.**' : '',
    '',
    table(),
    '',
    ...NOTES.map((n) => `- ${n}`),
    '',
    '<details><summary>Every run</summary>\n',
    rawTable(),
    '\n</details>',
    '',
  ].join('\n');
}

function writeReport(text: string): string {
  const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const file = `${dir}hop-${new Date().toISOString().slice(0, 10)}.md`;
  writeFileSync(file, text);
  return file;
}

/** Checks one answer before loading a server, so a mode never measures error answers. */
async function probe(load: LoadOptions, expectedBytes: number, expectedNames: string[]): Promise<string | undefined> {
  let status: number;
  let text: string;
  try {
    const res = await fetch(load.url, { method: load.method ?? 'GET', headers: load.headers ?? {}, body: load.body ?? null, signal: AbortSignal.timeout(5000) });
    status = res.status;
    text = await res.text();
  } catch (err) {
    return `request failed: ${(err as Error).message}`;
  }
  if (status !== 200) return `HTTP ${status}: ${text.slice(0, 200)}`;
  if (Buffer.byteLength(text) !== expectedBytes) return `answer is ${Buffer.byteLength(text)} bytes, expected ${expectedBytes}`;
  let body: { id?: unknown; result?: { tools?: Array<{ name?: unknown }> } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return 'answer is not JSON';
  }
  const names = body.result?.tools?.map((t) => t.name) ?? [];
  if (body.id !== 1 || names.length !== expectedNames.length || expectedNames.some((n, i) => names[i] !== n)) return 'wrong id or tool list';
  return undefined;
}

async function runMode(mode: Mode, round: number, load: Omit<LoadOptions, 'url'>, expectedBytes: number, expectedNames: string[]): Promise<void> {
  const port = await freePort();
  let server: SpawnedServer | undefined;
  try {
    server = await spawnServer(process.execPath, [here('./hop-server.js'), '--mode', mode, '--port', String(port), '--tools', String(TOOL_COUNT)], /^listening (\d+)/m, {
      label: `hop-${mode}`,
      timeoutMs: READY_TIMEOUT_MS,
    });
    const full: LoadOptions = { ...load, url: `http://127.0.0.1:${port}/mcp/bench` };
    const problem = await probe(full, expectedBytes, expectedNames);
    if (problem !== undefined) throw new Error(`wrong answer: ${problem}`);
    if (WARMUP > 0) await runLoad({ ...full, durationSec: WARMUP });
    const busyBefore = machineBusyMicros();
    const clientBefore = process.cpuUsage();
    const result = await measure(server.pid, full);
    const client = process.cpuUsage(clientBefore);
    const busy = machineBusyMicros() - busyBefore;
    const clientMicros = client.user + client.system;
    const run: Run = {
      ...result,
      mode,
      round,
      clientCores: clientMicros / 1e6 / result.durationSec,
      otherCores: Math.max(0, busy - result.cpuMicros - clientMicros) / 1e6 / result.durationSec,
    };
    runs.push(run);
    console.log(
      `round ${round} ${mode.padEnd(16)} ${fmt(run.reqPerSec, 0).padStart(6)} req/s  p50 ${fmt(run.p50Ms, 2)} ms  p99 ${fmt(run.p99Ms, 2)} ms  ` +
        `${fmt(run.cpuMicrosPerReq, 1)} µs/req  client ${fmt(run.clientCores, 2)} / other ${fmt(run.otherCores, 2)} cores`,
    );
  } catch (err) {
    const msg = (err as Error).message;
    if (mode === 'bare') throw new Error(`bare baseline failed: ${msg}`);
    skipped.set(mode, msg.split('\n')[0] ?? msg);
    console.log(`round ${round} ${mode}: skipped — ${msg}`);
  } finally {
    await server?.kill();
  }
}

async function main(): Promise<void> {
  const manifest = generateManifest(TOOL_COUNT, { serviceId: 'bare' });
  const expectedNames = manifest.tools.map((t) => t.name);
  // `{"jsonrpc":"2.0","id":1,"result":` + result + `}`, in whatever member order.
  const expectedBytes = toolsListResultBytes(TOOL_COUNT) + Buffer.byteLength('{"jsonrpc":"2.0","id":1,"result":}');
  console.log(header().replace(/^# /, ''));
  console.log(`answer: ${expectedBytes} bytes\n`);

  const load: Omit<LoadOptions, 'url'> = {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    connections: CONNECTIONS,
    durationSec: DURATION,
  };

  for (let round = 1; round <= REPEATS; round++) {
    // Alternate the order so no mode always runs first or last in a round.
    const order = round % 2 === 1 ? [...MODES] : [...MODES].reverse();
    for (const mode of order) {
      if (skipped.has(mode)) continue;
      await runMode(mode, round, load, expectedBytes, expectedNames);
    }
  }

  const text = report(false);
  console.log(`\n${table()}\n`);
  for (const n of NOTES) console.log(`- ${n}`);
  console.log(`\nwritten to ${writeReport(text)}`);
}

// Hard upper bound on the whole run, whatever hangs (150 s with the defaults).
const budgetMs = (REPEATS * MODES.length * (WARMUP + DURATION + 6) + 30) * 1000;
const watchdog = setTimeout(() => {
  console.error(`hop bench exceeded its ${Math.round(budgetMs / 1000)} s budget; stopping`);
  if (runs.length > 0) console.error(`partial results written to ${writeReport(report(true))}`);
  void killAll().finally(() => process.exit(2));
}, budgetMs);
watchdog.unref();

try {
  await main();
} catch (err) {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await killAll();
}
