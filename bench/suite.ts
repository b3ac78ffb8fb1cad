/**
 * The benchmark suite behind `npm run bench` (bench/run.ts) and
 * `npm run bench:quick` (bench/quick.ts): the gateway against baselines
 * measured in the same run, each server its own process.
 *
 * Servers (spawned by this process, killed on exit):
 *  - the gateway, built, production config (log level warn), routes `bench`
 *    (50 tools), `list5` (5 tools) and `r00`…`r39` (5–50 tools) in front of
 *  - the echo Tool Service (bench/echo-tool-service.ts), also called directly:
 *    the floor for `tools/call`;
 *  - the bare uWebSockets.js server (bench/bare-uws.ts) answering a constant
 *    body of the same size as the gateway's answer — 0, 5 or 50 tools — the
 *    physical limit for `tools/list` and `initialize`;
 *  - for the refresh-under-load workload only (started after the others are
 *    gone, so its refresh work never disturbs them): a second gateway with 40
 *    routes refreshed every 50 ms from an echo service started with
 *    `--churn`, measured with churn on (every refresh rebuilds and swaps all
 *    40 catalogs) and paused (same config, manifests unchanged).
 *
 * Method: autocannon (programmatic, in this process), fixed connections and
 * duration, a discarded warm-up before every measured run, repeats
 * interleaved (order reversed every other repeat), medians reported. Latency
 * quantiles come from every response's own time. Server CPU per request is
 * user+system time of the server process (all threads) from /proc ÷
 * responses. Ratios to a baseline are the median over repeats of the ratio
 * within a repeat (gateway and baseline measured back to back).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateManifest, sampleArguments, toolsListResultBytes, type Manifest } from './catalog.js';
import { renderChart, type ChartGroup } from './chart.js';
import {
  cpuTimeMicros,
  freePort,
  killAll,
  machineBusyMicros,
  measure,
  median,
  runLoad,
  scratch,
  spawnServer,
  type LoadOptions,
  type LoadRequest,
  type MeasureResult,
  type SpawnedServer,
} from './harness.js';

export type Preset = 'full' | 'quick';

const WORKLOADS = ['list5', 'list50', 'call', 'initialize', 'mixed', 'refresh'] as const;
type WorkloadId = (typeof WORKLOADS)[number];
type Role = 'baseline' | 'gateway';

const WORKLOAD_LABEL: Record<WorkloadId, string> = {
  list5: 'tools/list · 5 tools',
  list50: 'tools/list · 50 tools',
  call: 'tools/call · echo tool',
  initialize: 'initialize',
  mixed: 'mixed · 40 routes',
  refresh: 'tools/list · 50 tools under refresh',
};

const MIXED_ROUTES = 40;
const REFRESH_ROUTES = 40;
const REFRESH_INTERVAL_MS = 50;
/** Tool counts of the mixed and refresh routes, in turn (route 0 has 50). */
const ROUTE_SIZES = [50, 5, 10, 20] as const;
const BASELINE_READY_TIMEOUT_MS = 10_000;
const GATEWAY_READY_TIMEOUT_MS = 30_000;
const PROTOCOL_VERSION = '2025-06-18';
/** Headers of an MCP client such as Agent Builder (stateless Streamable HTTP). */
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION };

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

// ---------------------------------------------------------------------------
// Options

interface Options {
  preset: Preset;
  connections: number;
  durationSec: number;
  warmupSec: number;
  repeats: number;
  acceptors: number | undefined;
  shards: number | undefined;
  sweep: boolean;
  combos: Array<{ acceptors: number; shards: number }>;
  workloads: WorkloadId[];
  write: boolean;
}

const USAGE = `usage: node dist/bench/run.js [options]   (quick: node dist/bench/quick.js [options])
  --connections N   autocannon connections (BENCH_CONNECTIONS, default 50)
  --duration S      measured seconds per run (BENCH_DURATION, default 5; quick 4)
  --warmup S        discarded warm-up seconds before each run (BENCH_WARMUP, default 1)
  --repeats N       interleaved repeats, medians reported (BENCH_REPEATS, default 3; quick 1)
  --acceptors N     gateway workers.acceptors (BENCH_ACCEPTORS, default: the gateway's default)
  --shards M        gateway workers.shards (BENCH_SHARDS, default: the gateway's default)
  --only LIST       workloads, comma-separated: ${WORKLOADS.join(',')} (quick: list50,call)
  --sweep           instead: tools/list 50 + tools/call for several acceptors×shards combos
  --combos LIST     sweep combos as AxS, e.g. 1x1,1x2,2x2 (BENCH_COMBOS; default from the core count)
  --no-write        print only; do not write bench/results or docs/bench (quick never writes)
Env: BENCH_KEEP_TMP=1 keeps server logs; BENCH_GATEWAY_CMD overrides the gateway command
({config} and {port} substituted; --config <file> appended when {config} is absent).`;

function positive(name: string, raw: string | undefined, fallback: number, min: number, integer: boolean): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new Error(`${name}: expected ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

function defaultCombos(): Array<{ acceptors: number; shards: number }> {
  const cores = availableParallelism();
  const pow2 = (limit: number): number[] => [1, 2, 4, 8, 16].filter((n) => n <= Math.max(2, limit));
  const combos: Array<{ acceptors: number; shards: number }> = [];
  for (const acceptors of pow2(Math.floor(cores / 2))) for (const shards of pow2(cores - 1)) combos.push({ acceptors, shards });
  return combos;
}

function parseOptions(argv: string[], preset: Preset): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      connections: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      repeats: { type: 'string' },
      acceptors: { type: 'string' },
      shards: { type: 'string' },
      only: { type: 'string' },
      sweep: { type: 'boolean', default: false },
      combos: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const env = process.env;
  const quick = preset === 'quick';
  const acceptorsRaw = values.acceptors ?? env.BENCH_ACCEPTORS;
  const shardsRaw = values.shards ?? env.BENCH_SHARDS;
  const combosRaw = values.combos ?? env.BENCH_COMBOS;
  const combos =
    combosRaw === undefined || combosRaw.trim() === ''
      ? defaultCombos()
      : combosRaw.split(',').map((c) => {
          const m = /^\s*(\d+)\s*x\s*(\d+)\s*$/i.exec(c);
          if (m === null) throw new Error(`--combos: expected AxS items like 2x4, got ${JSON.stringify(c)}`);
          return { acceptors: positive('--combos acceptors', m[1], 1, 1, true), shards: positive('--combos shards', m[2], 1, 1, true) };
        });
  const onlyRaw = values.only ?? (quick ? 'list50,call' : undefined);
  const workloads =
    onlyRaw === undefined
      ? [...WORKLOADS]
      : onlyRaw.split(',').map((w) => {
          const id = w.trim() as WorkloadId;
          if (!WORKLOADS.includes(id)) throw new Error(`--only: unknown workload ${JSON.stringify(w)} (known: ${WORKLOADS.join(', ')})`);
          return id;
        });
  return {
    preset,
    connections: positive('--connections', values.connections ?? env.BENCH_CONNECTIONS, 50, 1, true),
    durationSec: positive('--duration', values.duration ?? env.BENCH_DURATION, quick ? 4 : 5, 0.5, false),
    warmupSec: positive('--warmup', values.warmup ?? env.BENCH_WARMUP, 1, 0, false),
    repeats: positive('--repeats', values.repeats ?? env.BENCH_REPEATS, quick ? 1 : 3, 1, true),
    acceptors: acceptorsRaw === undefined || acceptorsRaw === '' ? undefined : positive('--acceptors', acceptorsRaw, 1, 1, true),
    shards: shardsRaw === undefined || shardsRaw === '' ? undefined : positive('--shards', shardsRaw, 1, 1, true),
    sweep: values.sweep,
    combos,
    workloads,
    write: !quick && !values['no-write'],
  };
}

// ---------------------------------------------------------------------------
// Measured runs

/** One measured run of one target. */
interface Run extends MeasureResult {
  workload: string;
  role: Role;
  /** Name of the server measured, e.g. "bare uWS", "gateway a1 s2". */
  server: string;
  repeat: number;
  /** Non-2xx answers not expected by the workload (e.g. 404 of the mixed load's unknown route are expected). */
  unexpected: number;
  /** Server CPU ÷ wall time, in cores. */
  serverCores: number;
  /** Load generator (this process) CPU ÷ wall time, in cores. */
  clientCores: number;
  /** CPU of every other process (upstream services included) ÷ wall time, in cores. */
  otherCores: number;
  /** CPU µs of the upstream Tool Service per response, when the target has one. */
  upstreamMicrosPerReq?: number;
  /** Workload-specific figures (refresh: swaps and manifests per second). */
  extra?: Record<string, number>;
}

/** Something to load: a server, a request mix, and what counts as a correct answer. */
interface Target {
  workload: string;
  role: Role;
  serverName: string;
  server: SpawnedServer;
  load: LoadOptions;
  /** Non-2xx statuses this load provokes on purpose. */
  expectedStatuses?: number[];
  upstream?: SpawnedServer;
  /** Checks answers once before the first run; returns a problem or undefined. */
  probe(): Promise<string | undefined>;
  /** Runs before the warm-up of every run (refresh: pause/resume churn). */
  prepare?(): Promise<void>;
  /** Figures to difference over the measured run (refresh: counters). */
  counters?(): Promise<Record<string, number>>;
}

const fmt = (n: number | undefined, digits: number): string => (n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(digits));
const ratioText = (r: number | undefined): string => (r === undefined || !Number.isFinite(r) ? '–' : `${r.toFixed(2)}×`);

async function measureTarget(t: Target, o: Options, repeat: number): Promise<Run> {
  await t.prepare?.();
  if (o.warmupSec > 0) await runLoad({ ...t.load, durationSec: o.warmupSec });
  const countersBefore = await t.counters?.();
  const upstreamBefore = t.upstream !== undefined ? cpuTimeMicros(t.upstream.pid) : 0;
  const busyBefore = machineBusyMicros();
  const clientBefore = process.cpuUsage();
  const result = await measure(t.server.pid, t.load);
  const client = process.cpuUsage(clientBefore);
  const busy = machineBusyMicros() - busyBefore;
  const upstreamMicros = t.upstream !== undefined ? cpuTimeMicros(t.upstream.pid) - upstreamBefore : 0;
  const countersAfter = await t.counters?.();
  const clientMicros = client.user + client.system;
  const expected = (t.expectedStatuses ?? []).reduce((a, s) => a + (result.statusCounts[s] ?? 0), 0);
  const run: Run = {
    ...result,
    workload: t.workload,
    role: t.role,
    server: t.serverName,
    repeat,
    unexpected: result.non2xx - expected,
    serverCores: result.cpuMicros / 1e6 / result.durationSec,
    clientCores: clientMicros / 1e6 / result.durationSec,
    otherCores: Math.max(0, busy - result.cpuMicros - clientMicros) / 1e6 / result.durationSec,
  };
  if (t.upstream !== undefined && result.total > 0) run.upstreamMicrosPerReq = upstreamMicros / result.total;
  if (countersBefore !== undefined && countersAfter !== undefined) {
    run.extra = {};
    for (const [k, v] of Object.entries(countersAfter)) run.extra[`${k}PerSec`] = (v - (countersBefore[k] ?? 0)) / result.durationSec;
  }
  const extra = run.extra === undefined ? '' : `  ${Object.entries(run.extra).map(([k, v]) => `${k} ${fmt(v, 0)}`).join(' ')}`;
  console.log(
    `  r${repeat} ${`${t.workload} · ${t.serverName}`.padEnd(34)} ${fmt(run.reqPerSec, 0).padStart(6)} req/s  p50 ${fmt(run.p50Ms, 2).padStart(6)}  p99 ${fmt(run.p99Ms, 2).padStart(6)} ms  ` +
      `${fmt(run.cpuMicrosPerReq, 1).padStart(6)} µs/req  non-2xx ${run.non2xx}${run.unexpected > 0 ? ` (${run.unexpected} unexpected)` : ''}  ` +
      `client ${fmt(run.clientCores, 2)} other ${fmt(run.otherCores, 2)} cores${extra}`,
  );
  return run;
}

// ---------------------------------------------------------------------------
// Probes: one request per distinct request of a load, checked before loading,
// so a row never measures fast error answers by mistake.

interface Answer {
  status: number;
  text: string;
  json: unknown;
}

async function send(url: string, req: { method?: string; headers?: Record<string, string>; body?: string }): Promise<Answer> {
  const res = await fetch(url, { method: req.method ?? 'GET', headers: req.headers ?? {}, body: req.body ?? null, signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

type Check = (a: Answer) => string | undefined;

const excerpt = (text: string): string => (text.length > 240 ? `${text.slice(0, 240)}…` : text);

async function probeOne(url: string, req: { method?: string; headers?: Record<string, string>; body?: string }, check: Check): Promise<string | undefined> {
  let a: Answer;
  try {
    a = await send(url, req);
  } catch (err) {
    return `request to ${url} failed: ${(err as Error).message}`;
  }
  const problem = check(a);
  return problem === undefined ? undefined : `${url}: ${problem} (HTTP ${a.status}: ${excerpt(a.text)})`;
}

const checkList =
  (names: string[]): Check =>
  (a) => {
    if (a.status !== 200) return 'status is not 200';
    const tools = (a.json as { result?: { tools?: Array<{ name?: unknown }> } } | undefined)?.result?.tools;
    if (!Array.isArray(tools)) return 'no result.tools array';
    const got = tools.map((t) => t.name);
    if (got.length !== names.length || names.some((n) => !got.includes(n))) return `expected ${names.length} tools, got ${got.length}`;
    return undefined;
  };

const checkCallResult = (result: unknown): string | undefined => {
  const r = result as { content?: unknown; isError?: unknown } | undefined;
  if (!Array.isArray(r?.content)) return 'no content array';
  if (r?.isError === true) return 'isError: true';
  return undefined;
};

const checkGatewayCall: Check = (a) => (a.status !== 200 ? 'status is not 200' : checkCallResult((a.json as { result?: unknown } | undefined)?.result));
const checkDirectCall: Check = (a) => (a.status !== 200 ? 'status is not 200' : checkCallResult(a.json));
const checkInitialize: Check = (a) => {
  if (a.status !== 200) return 'status is not 200';
  const r = (a.json as { result?: { protocolVersion?: unknown; serverInfo?: unknown } } | undefined)?.result;
  return typeof r?.protocolVersion === 'string' && r.serverInfo !== undefined ? undefined : 'no result.protocolVersion / serverInfo';
};
const checkAnyJson: Check = (a) => (a.status === 200 && a.json !== undefined ? undefined : 'not a 200 JSON answer');
const checkRpcError =
  (code: number): Check =>
  (a) => {
    const err = (a.json as { error?: { code?: unknown } } | undefined)?.error;
    return a.status === 200 && err?.code === code ? undefined : `expected HTTP 200 with JSON-RPC error ${code}`;
  };
const checkStatus =
  (status: number): Check =>
  (a) =>
    a.status === status ? undefined : `expected HTTP ${status}`;

// ---------------------------------------------------------------------------
// Servers and configs

interface Fixture {
  manifests: Map<number, Manifest>;
  manifest(tools: number): Manifest;
}

const fixture: Fixture = {
  manifests: new Map(),
  manifest(tools: number): Manifest {
    let m = this.manifests.get(tools);
    if (m === undefined) {
      m = generateManifest(tools, { serviceId: 'echo' });
      this.manifests.set(tools, m);
    }
    return m;
  },
};

const routeSize = (i: number): number => ROUTE_SIZES[i % ROUTE_SIZES.length] ?? 50;
const routeName = (prefix: string, i: number): string => `${prefix}${String(i).padStart(2, '0')}`;

interface ServiceEntry {
  id: string;
  baseUrl: string;
  manifestPath: string;
}

function gatewayConfig(port: number, routes: Record<string, ServiceEntry[]>, o: { acceptors: number | undefined; shards: number | undefined }, refreshIntervalMs?: number): object {
  const workers: Record<string, number> = {};
  if (o.acceptors !== undefined) workers.acceptors = o.acceptors;
  if (o.shards !== undefined) workers.shards = o.shards;
  return {
    server: { host: '127.0.0.1', port },
    workers,
    catalog: {
      source: 'static',
      static: { routes },
      ...(refreshIntervalMs !== undefined ? { refreshIntervalMs } : {}),
    },
    log: { level: 'warn' },
  };
}

/** Splits BENCH_GATEWAY_CMD on whitespace and fills the placeholders. */
function gatewayCommand(configFile: string, port: number): { cmd: string; args: string[] } {
  const override = process.env.BENCH_GATEWAY_CMD;
  if (override === undefined || override.trim() === '') {
    const cli = here('../src/main/cli.js');
    if (!existsSync(cli)) throw new Error(`gateway not built (${cli} missing): run npm run build`);
    return { cmd: process.execPath, args: [cli, '--config', configFile] };
  }
  const parts = override.trim().split(/\s+/).map((p) => p.replaceAll('{config}', configFile).replaceAll('{port}', String(port)));
  if (!override.includes('{config}')) parts.push('--config', configFile);
  const [cmd, ...args] = parts;
  if (cmd === undefined) throw new Error('BENCH_GATEWAY_CMD is empty');
  return { cmd, args };
}

async function startGateway(label: string, config: (port: number) => object): Promise<{ server: SpawnedServer; port: number }> {
  const port = await freePort();
  const configFile = join(scratch(), `${label}.json`);
  writeFileSync(configFile, JSON.stringify(config(port), null, 2));
  const { cmd, args } = gatewayCommand(configFile, port);
  const server = await spawnServer(cmd, args, `http://127.0.0.1:${port}/health/ready`, { label, timeoutMs: GATEWAY_READY_TIMEOUT_MS });
  return { server, port };
}

const LISTENING = /^listening (\d+)$/m;

async function startNodeServer(label: string, script: string, args: string[]): Promise<{ server: SpawnedServer; port: number }> {
  const port = await freePort();
  const server = await spawnServer(process.execPath, [here(script), '--port', String(port), ...args], LISTENING, { label, timeoutMs: BASELINE_READY_TIMEOUT_MS });
  return { server, port };
}

/** Sum of every sample of a Prometheus counter in the gateway's /metrics (NaN if absent). */
async function scrapeCounter(port: number, name: string): Promise<number> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3000) });
    const text = await res.text();
    if (res.status !== 200) return Number.NaN;
    // A counter with labels has no sample until its first increment: absent = 0.
    let sum = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
        const v = Number(line.slice(line.lastIndexOf(' ') + 1));
        if (Number.isFinite(v)) sum += v;
      }
    }
    return sum;
  } catch {
    return Number.NaN;
  }
}

// ---------------------------------------------------------------------------
// Request bodies

let nextId = 1;
const rpc = (method: string, params?: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: nextId++ % 1000, method, ...(params !== undefined ? { params } : {}) });
const listBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const initBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'agent-builder-bench', version: '1.0.0' } },
});

function callBody(tools: number, index: number): string {
  const tool = fixture.manifest(tools).tools[index % tools];
  if (tool === undefined) throw new Error('empty catalog');
  return rpc('tools/call', { name: tool.name, arguments: sampleArguments(tool.inputSchema) });
}

/**
 * The mixed, Agent-Builder-like request sequence: over 40 routes, per 20
 * requests 14 tools/call (each a different tool with full arguments),
 * 2 tools/list, 1 initialize, 1 notifications/initialized, 1 call of an
 * unknown tool (JSON-RPC error) and 1 request to an unknown route (404).
 */
function mixedRequests(): Array<LoadRequest & { check: Check }> {
  const out: Array<LoadRequest & { check: Check }> = [];
  for (let i = 0; i < 100; i++) {
    const r = (i * 7) % MIXED_ROUTES;
    const route = routeName('r', r);
    const size = routeSize(r);
    const slot = i % 20;
    const base = { method: 'POST' as const, headers: MCP_HEADERS, path: `/mcp/${route}` };
    if (slot < 14) out.push({ ...base, body: callBody(size, i), check: checkGatewayCall });
    else if (slot < 16) out.push({ ...base, body: rpc('tools/list'), check: checkList(fixture.manifest(size).tools.map((t) => t.name)) });
    else if (slot === 16) out.push({ ...base, body: initBody, check: checkInitialize });
    else if (slot === 17) out.push({ ...base, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), check: checkStatus(202) });
    else if (slot === 18) out.push({ ...base, body: rpc('tools/call', { name: 'no_such_tool', arguments: {} }), check: checkRpcError(-32602) });
    else out.push({ ...base, path: `/mcp/unknown-route-${r}`, body: rpc('tools/list'), check: checkStatus(404) });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Summaries

interface Summary {
  workload: string;
  role: Role;
  server: string;
  runs: number;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  cpuMicrosPerReq: number;
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
  /** Median over repeats of gateway ÷ baseline within the repeat (gateway rows with a baseline). */
  ratios?: { reqPerSec: number; cpuMicrosPerReq: number; p99Ms: number };
}

function summarize(runs: Run[], workload: string, role: Role): Summary | undefined {
  const mine = runs.filter((r) => r.workload === workload && r.role === role);
  if (mine.length === 0) return undefined;
  const med = (f: (r: Run) => number): number => median(mine.map(f));
  const statusCounts: Record<string, number> = {};
  for (const r of mine) for (const [s, n] of Object.entries(r.statusCounts)) statusCounts[s] = (statusCounts[s] ?? 0) + n;
  const extraKeys = [...new Set(mine.flatMap((r) => Object.keys(r.extra ?? {})))];
  const s: Summary = {
    workload,
    role,
    server: mine[0]?.server ?? '',
    runs: mine.length,
    reqPerSec: med((r) => r.reqPerSec),
    p50Ms: med((r) => r.p50Ms),
    p99Ms: med((r) => r.p99Ms),
    cpuMicrosPerReq: med((r) => r.cpuMicrosPerReq),
    peakRssMiB: Number.NaN,
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
  const peak = mine.map((r) => r.peakRssKb).filter(Number.isFinite);
  s.peakRssMiB = peak.length > 0 ? Math.max(...peak) / 1024 : Number.NaN;
  if (role === 'gateway') {
    const base = runs.filter((r) => r.workload === workload && r.role === 'baseline');
    if (base.length > 0) {
      const perRepeat = (f: (r: Run) => number): number => {
        const ratios: number[] = [];
        for (const rep of new Set(mine.map((r) => r.repeat))) {
          const g = mine.filter((r) => r.repeat === rep).map(f);
          const b = base.filter((r) => r.repeat === rep).map(f);
          if (g.length > 0 && b.length > 0) ratios.push(mean(g) / mean(b));
        }
        return median(ratios);
      };
      s.ratios = { reqPerSec: perRepeat((r) => r.reqPerSec), cpuMicrosPerReq: perRepeat((r) => r.cpuMicrosPerReq), p99Ms: perRepeat((r) => r.p99Ms) };
    }
  }
  return s;
}

const mean = (xs: number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;

function statusText(s: Summary): string {
  const non2xx = Object.entries(s.statusCounts)
    .filter(([code]) => Number(code) < 200 || Number(code) > 299)
    .map(([code, n]) => `${n}×${code}`)
    .join(', ');
  if (s.non2xx === 0) return '0';
  return `${non2xx}${s.unexpected === 0 ? ' (expected)' : ` (**${s.unexpected} unexpected**)`}`;
}

function summaryTable(summaries: Summary[]): string {
  const header = ['workload', 'server', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'req/s ÷ base', 'CPU ÷ base', 'p99 ÷ base', 'peak RSS MiB', 'non-2xx', 'errors', 'client / other cores'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`];
  for (const s of summaries) {
    const isBase = s.role === 'baseline';
    lines.push(
      `| ${[
        WORKLOAD_LABEL[s.workload as WorkloadId] ?? s.workload,
        s.server,
        fmt(s.reqPerSec, 0),
        fmt(s.p50Ms, 2),
        fmt(s.p99Ms, 2),
        fmt(s.cpuMicrosPerReq, 1),
        isBase ? 'base' : ratioText(s.ratios?.reqPerSec),
        isBase ? 'base' : ratioText(s.ratios?.cpuMicrosPerReq),
        isBase ? 'base' : ratioText(s.ratios?.p99Ms),
        fmt(s.peakRssMiB, 0),
        statusText(s),
        String(s.errors),
        `${fmt(s.clientCores, 2)} / ${fmt(s.otherCores, 2)}`,
      ].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

function rawTable(runs: Run[]): string {
  const lines = [
    '| repeat | workload | server | req/s | p50 ms | p99 ms | CPU µs/req | upstream µs/req | non-2xx | errors | server / client / other cores | extra |',
    '|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of runs) {
    const extra = r.extra === undefined ? '' : Object.entries(r.extra).map(([k, v]) => `${k} ${fmt(v, 0)}`).join(', ');
    lines.push(
      `| ${r.repeat} | ${r.workload} | ${r.server} | ${fmt(r.reqPerSec, 0)} | ${fmt(r.p50Ms, 2)} | ${fmt(r.p99Ms, 2)} | ${fmt(r.cpuMicrosPerReq, 1)} | ${fmt(r.upstreamMicrosPerReq, 1)} | ${r.non2xx} | ${r.errors} | ${fmt(r.serverCores, 2)} / ${fmt(r.clientCores, 2)} / ${fmt(r.otherCores, 2)} | ${extra} |`,
    );
  }
  return lines.join('\n');
}

interface TargetCheck {
  name: string;
  requirement: string;
  measured: string;
  met: boolean | null;
}

/** The issue's targets as data: which ratio of which workload, and its bound. */
const TARGETS: ReadonlyArray<{ workload: WorkloadId; metric: 'cpuMicrosPerReq' | 'reqPerSec' | 'p99Ms'; name: string; requirement: string; atMost?: number; atLeast?: number }> = [
  { workload: 'list50', metric: 'cpuMicrosPerReq', name: 'tools/list · 50 tools: CPU/req', requirement: '≤ 1.5× bare uWS', atMost: 1.5 },
  { workload: 'list50', metric: 'reqPerSec', name: 'tools/list · 50 tools: req/s', requirement: '≥ 0.9× bare uWS', atLeast: 0.9 },
  { workload: 'call', metric: 'cpuMicrosPerReq', name: 'tools/call: CPU/req', requirement: "≤ 3× the Tool Service's own", atMost: 3 },
  { workload: 'call', metric: 'reqPerSec', name: 'tools/call: req/s', requirement: '≥ 0.5× the Tool Service called directly', atLeast: 0.5 },
  { workload: 'refresh', metric: 'p99Ms', name: 'refresh under load: tools/list p99', requirement: '≤ 1.2× idle p99', atMost: 1.2 },
];

function targetChecks(summaries: Summary[]): TargetCheck[] {
  return TARGETS.map((t) => {
    const ratio = summaries.find((s) => s.workload === t.workload && s.role === 'gateway')?.ratios?.[t.metric];
    const measured = ratio === undefined || !Number.isFinite(ratio) ? null : ratio;
    return {
      name: t.name,
      requirement: t.requirement,
      measured: ratioText(ratio),
      met: measured === null ? null : t.atMost !== undefined ? measured <= t.atMost : measured >= (t.atLeast ?? 0),
    };
  });
}

function targetsText(checks: TargetCheck[]): string {
  const lines = ['| target | requirement | measured | status |', '|---|---|---:|---|'];
  for (const c of checks) lines.push(`| ${c.name} | ${c.requirement} | ${c.measured} | ${c.met === null ? 'not measured' : c.met ? '**met**' : '**not met**'} |`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------
// Environment description

function gitDescribe(): string {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', timeout: 3000, cwd: here('../..') }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { encoding: 'utf8', timeout: 3000, cwd: here('../..') }).trim() !== '';
    return `${rev}${dirty ? ' + uncommitted src changes' : ''}`;
  } catch {
    return 'unknown';
  }
}

function machine(): Record<string, unknown> {
  return {
    node: process.version,
    cores: availableParallelism(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform} ${process.arch}`,
  };
}

function knobsText(o: Options): string {
  const workers = `acceptors ${o.acceptors ?? 'default (1)'}, shards ${o.shards ?? `default (${Math.max(1, availableParallelism() - 1)})`}`;
  return `${o.connections} connections, ${o.durationSec} s measured after ${o.warmupSec} s warm-up per run, ${o.repeats} interleaved repeat(s), medians; gateway ${workers}`;
}

// ---------------------------------------------------------------------------
// The main run

interface RunState {
  runs: Run[];
  skipped: Map<string, string>;
  notes: string[];
  started: Date;
}

async function probeTargets(targets: Target[], state: RunState): Promise<Target[]> {
  const ok: Target[] = [];
  for (const t of targets) {
    const problem = await t.probe();
    if (problem === undefined) {
      ok.push(t);
      continue;
    }
    if (t.role === 'baseline') throw new Error(`baseline ${t.workload} · ${t.serverName} answers wrongly: ${problem}`);
    state.skipped.set(`${t.workload}/${t.role}`, problem);
    console.log(`  ${t.workload} · ${t.serverName}: skipped — ${problem}`);
  }
  return ok;
}

/** Runs every target once per repeat, interleaved, alternating order. */
async function runInterleaved(targets: Target[], o: Options, state: RunState): Promise<void> {
  for (let repeat = 1; repeat <= o.repeats; repeat++) {
    const order = repeat % 2 === 1 ? targets : [...targets].reverse();
    for (const t of order) state.runs.push(await measureTarget(t, o, repeat));
  }
}

async function mainPhase(o: Options, state: RunState): Promise<void> {
  const wanted = new Set(o.workloads);
  const needGateway = ['list5', 'list50', 'call', 'initialize', 'mixed'].some((w) => wanted.has(w as WorkloadId));
  if (!needGateway) return;
  console.log('\nstarting servers (echo Tool Service, bare uWS ×3, gateway)…');
  const [echo, bare0, bare5, bare50] = await Promise.all([
    startNodeServer('echo-tool-service', './echo-tool-service.js', ['--tools', '50']),
    startNodeServer('bare-uws-0', './bare-uws.js', ['--tools', '0']),
    startNodeServer('bare-uws-5', './bare-uws.js', ['--tools', '5']),
    startNodeServer('bare-uws-50', './bare-uws.js', ['--tools', '50']),
  ]);
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  const routes: Record<string, ServiceEntry[]> = {
    bench: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=50' }],
    list5: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=5' }],
  };
  for (let i = 0; i < MIXED_ROUTES; i++) routes[routeName('r', i)] = [{ id: 'echo', baseUrl: echoUrl, manifestPath: `/manifest?tools=${routeSize(i)}&route=${routeName('r', i)}` }];
  let gateway: { server: SpawnedServer; port: number } | undefined;
  try {
    gateway = await startGateway('gateway', (port) => gatewayConfig(port, routes, o));
  } catch (err) {
    const msg = (err as Error).message;
    console.log(`gateway did not start: ${msg}`);
    for (const w of o.workloads) state.skipped.set(`${w}/gateway`, msg.split('\n')[0] ?? msg);
  }

  const base = { method: 'POST' as const, headers: MCP_HEADERS, connections: o.connections, durationSec: o.durationSec };
  const gwUrl = (route: string): string => `http://127.0.0.1:${gateway?.port ?? 0}/mcp/${route}`;
  const names = (n: number): string[] => fixture.manifest(n).tools.map((t) => t.name);
  const targets: Target[] = [];
  const add = (t: Omit<Target, 'probe'> & { check: Check }): void => {
    const { check, ...rest } = t;
    targets.push({ ...rest, probe: () => probeOne(t.load.url, t.load, check) });
  };

  const firstTool = fixture.manifest(50).tools[0];
  if (firstTool === undefined) throw new Error('empty catalog');
  const gwCallBody = rpc('tools/call', { name: firstTool.name, arguments: sampleArguments(firstTool.inputSchema) });

  if (wanted.has('list5')) {
    add({ workload: 'list5', role: 'baseline', serverName: 'bare uWS', server: bare5.server, load: { ...base, url: `http://127.0.0.1:${bare5.port}/mcp/list5`, body: listBody }, check: checkList(names(5)) });
    if (gateway) add({ workload: 'list5', role: 'gateway', serverName: 'gateway', server: gateway.server, load: { ...base, url: gwUrl('list5'), body: listBody }, check: checkList(names(5)) });
  }
  if (wanted.has('list50')) {
    add({ workload: 'list50', role: 'baseline', serverName: 'bare uWS', server: bare50.server, load: { ...base, url: `http://127.0.0.1:${bare50.port}/mcp/bench`, body: listBody }, check: checkList(names(50)) });
    if (gateway) add({ workload: 'list50', role: 'gateway', serverName: 'gateway', server: gateway.server, load: { ...base, url: gwUrl('bench'), body: listBody }, check: checkList(names(50)) });
  }
  if (wanted.has('call')) {
    add({
      workload: 'call',
      role: 'baseline',
      serverName: 'echo Tool Service direct',
      server: echo.server,
      load: { ...base, url: `${echoUrl}${firstTool.execution.path}`, body: JSON.stringify({ name: firstTool.name, version: firstTool.version, arguments: sampleArguments(firstTool.inputSchema) }) },
      check: checkDirectCall,
    });
    if (gateway) add({ workload: 'call', role: 'gateway', serverName: 'gateway', server: gateway.server, upstream: echo.server, load: { ...base, url: gwUrl('bench'), body: gwCallBody }, check: checkGatewayCall });
  }
  if (wanted.has('initialize')) {
    add({ workload: 'initialize', role: 'baseline', serverName: 'bare uWS', server: bare0.server, load: { ...base, url: `http://127.0.0.1:${bare0.port}/mcp/init`, body: initBody }, check: checkAnyJson });
    if (gateway) add({ workload: 'initialize', role: 'gateway', serverName: 'gateway', server: gateway.server, load: { ...base, url: gwUrl('bench'), body: initBody }, check: checkInitialize });
  }
  if (wanted.has('mixed') && gateway) {
    const reqs = mixedRequests();
    const origin = `http://127.0.0.1:${gateway.port}`;
    targets.push({
      workload: 'mixed',
      role: 'gateway',
      serverName: 'gateway',
      server: gateway.server,
      upstream: echo.server,
      expectedStatuses: [404],
      load: { ...base, url: origin, requests: reqs.map(({ check: _c, ...r }) => r) },
      probe: async () => {
        for (const r of reqs) {
          const p = await probeOne(`${origin}${r.path}`, r, r.check);
          if (p !== undefined) return p;
        }
        return undefined;
      },
    });
    state.notes.push(
      `mixed: ${MIXED_ROUTES} routes of ${ROUTE_SIZES.join('/')} tools; per 20 requests 14 tools/call (distinct tools, full arguments), 2 tools/list, 1 initialize, 1 notifications/initialized (202), 1 unknown tool (JSON-RPC error -32602, HTTP 200), 1 unknown route (404, expected).`,
    );
  }

  if (gateway) {
    const size = Buffer.byteLength((await send(gwUrl('bench'), { method: 'POST', headers: MCP_HEADERS, body: listBody })).text);
    state.notes.push(`tools/list · 50 tools answer: ${size} bytes from the gateway, ${toolsListResultBytes(50) + Buffer.byteLength('{"jsonrpc":"2.0","id":1,"result":}')} bytes from bare uWS.`);
  }
  const ok = await probeTargets(targets, state);
  console.log(`measuring ${ok.length} targets × ${o.repeats} repeat(s)…`);
  await runInterleaved(ok, o, state);
  await Promise.all([echo, bare0, bare5, bare50, ...(gateway ? [gateway] : [])].map((s) => s.server.kill()));
}

async function refreshPhase(o: Options, state: RunState): Promise<void> {
  if (!o.workloads.includes('refresh')) return;
  console.log(`\nrefresh under load: starting a churning echo service and a gateway with ${REFRESH_ROUTES} routes refreshed every ${REFRESH_INTERVAL_MS} ms…`);
  const echo = await startNodeServer('echo-churn', './echo-tool-service.js', ['--tools', '50', '--churn']);
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  // Paused while the gateway loads, so the initial load sees stable manifests.
  await send(`${echoUrl}/churn/pause`, { method: 'POST' });
  const routes: Record<string, ServiceEntry[]> = {};
  for (let i = 0; i < REFRESH_ROUTES; i++) routes[routeName('c', i)] = [{ id: 'echo', baseUrl: echoUrl, manifestPath: `/manifest?tools=${routeSize(i)}&route=${routeName('c', i)}` }];
  let gateway: { server: SpawnedServer; port: number };
  try {
    gateway = await startGateway('gateway-refresh', (port) => gatewayConfig(port, routes, o, REFRESH_INTERVAL_MS));
  } catch (err) {
    const msg = (err as Error).message;
    console.log(`refresh gateway did not start: ${msg}`);
    state.skipped.set('refresh/gateway', msg.split('\n')[0] ?? msg);
    await echo.server.kill();
    return;
  }
  const gw = gateway;
  const load: LoadOptions = { method: 'POST', headers: MCP_HEADERS, connections: o.connections, durationSec: o.durationSec, url: `http://127.0.0.1:${gw.port}/mcp/c00`, body: listBody };
  const counters = async (): Promise<Record<string, number>> => {
    const [stats, swaps] = await Promise.all([send(`${echoUrl}/churn/stats`, {}), scrapeCounter(gw.port, 'mcp_gateway_list_changed_total')]);
    return { manifests: (stats.json as { manifests?: number } | undefined)?.manifests ?? Number.NaN, swaps };
  };
  const names = fixture.manifest(50).tools.map((t) => t.name);
  const mk = (role: Role, churn: boolean): Target => ({
    workload: 'refresh',
    role,
    serverName: churn ? 'gateway, 40 catalogs churning' : 'gateway, refresh idle',
    server: gw.server,
    load,
    probe: () => probeOne(load.url, load, checkList(names)),
    prepare: async () => {
      await send(`${echoUrl}/churn/${churn ? 'resume' : 'pause'}`, { method: 'POST' });
      // After a pause, the cycle in flight still swaps: wait (≤ 5 s) until the
      // swap counter stands still, so "idle" really measures no swaps.
      if (!churn) {
        const deadline = Date.now() + 5000;
        let last = await scrapeCounter(gw.port, 'mcp_gateway_list_changed_total');
        while (Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 400));
          const now = await scrapeCounter(gw.port, 'mcp_gateway_list_changed_total');
          if (now === last) break;
          last = now;
        }
      }
    },
    counters,
  });
  const idle = mk('baseline', false);
  const churn = mk('gateway', true);
  const ok = await probeTargets([idle, churn], state);
  if (ok.length === 2) {
    // ABBA / BAAB per repeat: two runs of each condition, neither always first.
    for (let repeat = 1; repeat <= o.repeats; repeat++) {
      const order = repeat % 2 === 1 ? [idle, churn, churn, idle] : [churn, idle, idle, churn];
      for (const t of order) state.runs.push(await measureTarget(t, o, repeat));
    }
    state.notes.push(
      `refresh under load: ${REFRESH_ROUTES} routes of ${ROUTE_SIZES.join('/')} tools, catalog.refreshIntervalMs ${REFRESH_INTERVAL_MS}; "churning": the echo service embeds a new revision in every tool description of every manifest answer, so every refresh rebuilds and swaps all catalogs; "idle": same gateway and config, manifests unchanged (each refresh cycle still polls all 40 manifests; the Tool Service answers 304 to a matching If-None-Match, or the same bytes, and nothing is swapped). manifestsPerSec / swapsPerSec: manifests served by the echo service and mcp_gateway_list_changed_total increase per second during the measured run. CPU µs/req of these rows includes the refresh worker.`,
    );
  }
  await send(`${echoUrl}/churn/pause`, { method: 'POST' }).catch(() => undefined);
  await Promise.all([gw.server.kill(), echo.server.kill()]);
}

// ---------------------------------------------------------------------------
// Sweep: the same tools/list and tools/call comparison for several
// acceptors × shards combos (one gateway process at a time).

async function sweep(o: Options, state: RunState): Promise<void> {
  console.log(`\nsweep over ${o.combos.map((c) => `${c.acceptors}x${c.shards}`).join(', ')} (acceptors x shards)…`);
  const [echo, bare50] = await Promise.all([
    startNodeServer('echo-tool-service', './echo-tool-service.js', ['--tools', '50']),
    startNodeServer('bare-uws-50', './bare-uws.js', ['--tools', '50']),
  ]);
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  const routes = { bench: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=50' }] };
  const firstTool = fixture.manifest(50).tools[0];
  if (firstTool === undefined) throw new Error('empty catalog');
  const names = fixture.manifest(50).tools.map((t) => t.name);
  const base = { method: 'POST' as const, headers: MCP_HEADERS, connections: o.connections, durationSec: o.durationSec };
  const baselines: Target[] = [
    {
      workload: 'list50',
      role: 'baseline',
      serverName: 'bare uWS',
      server: bare50.server,
      load: { ...base, url: `http://127.0.0.1:${bare50.port}/mcp/bench`, body: listBody },
      probe: () => probeOne(`http://127.0.0.1:${bare50.port}/mcp/bench`, { method: 'POST', headers: MCP_HEADERS, body: listBody }, checkList(names)),
    },
    {
      workload: 'call',
      role: 'baseline',
      serverName: 'echo Tool Service direct',
      server: echo.server,
      load: { ...base, url: `${echoUrl}${firstTool.execution.path}`, body: JSON.stringify({ name: firstTool.name, version: firstTool.version, arguments: sampleArguments(firstTool.inputSchema) }) },
      probe: async () => undefined,
    },
  ];
  await probeTargets(baselines, state);
  const callBodyText = rpc('tools/call', { name: firstTool.name, arguments: sampleArguments(firstTool.inputSchema) });
  for (let repeat = 1; repeat <= o.repeats; repeat++) {
    for (const b of baselines) state.runs.push(await measureTarget(b, o, repeat));
    const combos = repeat % 2 === 1 ? o.combos : [...o.combos].reverse();
    for (const c of combos) {
      const tag = `a${c.acceptors} s${c.shards}`;
      if (state.skipped.has(tag)) continue;
      let gateway: { server: SpawnedServer; port: number } | undefined;
      try {
        gateway = await startGateway(`gateway-${c.acceptors}x${c.shards}`, (port) => gatewayConfig(port, routes, c));
        const url = `http://127.0.0.1:${gateway.port}/mcp/bench`;
        const targets: Target[] = [
          { workload: `list50 ${tag}`, role: 'gateway', serverName: `gateway ${tag}`, server: gateway.server, load: { ...base, url, body: listBody }, probe: () => probeOne(url, { method: 'POST', headers: MCP_HEADERS, body: listBody }, checkList(names)) },
          { workload: `call ${tag}`, role: 'gateway', serverName: `gateway ${tag}`, server: gateway.server, upstream: echo.server, load: { ...base, url, body: callBodyText }, probe: () => probeOne(url, { method: 'POST', headers: MCP_HEADERS, body: callBodyText }, checkGatewayCall) },
        ];
        const ok = repeat === 1 ? await probeTargets(targets, state) : targets;
        for (const t of ok) state.runs.push(await measureTarget(t, o, repeat));
      } catch (err) {
        const msg = (err as Error).message.split('\n')[0] ?? '';
        state.skipped.set(tag, msg);
        console.log(`  ${tag}: skipped — ${msg}`);
      } finally {
        await gateway?.server.kill();
      }
    }
  }
  await Promise.all([echo.server.kill(), bare50.server.kill()]);
}

function sweepTable(o: Options, runs: Run[]): { text: string; rows: Array<Record<string, unknown>> } {
  const med = (w: string, f: (r: Run) => number): number => median(runs.filter((r) => r.workload === w).map(f));
  const perRepeatRatio = (w: string, b: string, f: (r: Run) => number): number => {
    const ratios: number[] = [];
    for (const g of runs.filter((r) => r.workload === w)) {
      const base = runs.find((r) => r.workload === b && r.role === 'baseline' && r.repeat === g.repeat);
      if (base !== undefined) ratios.push(f(g) / f(base));
    }
    return median(ratios);
  };
  const header = ['acceptors × shards', 'list50 req/s', 'list50 CPU µs/req', 'list50 req/s ÷ bare', 'list50 CPU ÷ bare', 'call req/s', 'call CPU µs/req', 'call req/s ÷ direct', 'call CPU ÷ echo'];
  const lines = [`| ${header.join(' | ')} |`, `|---|${header.slice(1).map(() => '---:').join('|')}|`];
  lines.push(`| bare uWS / echo direct | ${fmt(med('list50', (r) => r.reqPerSec), 0)} | ${fmt(med('list50', (r) => r.cpuMicrosPerReq), 1)} | base | base | ${fmt(med('call', (r) => r.reqPerSec), 0)} | ${fmt(med('call', (r) => r.cpuMicrosPerReq), 1)} | base | base |`);
  const rows: Array<Record<string, unknown>> = [];
  for (const c of o.combos) {
    const tag = `a${c.acceptors} s${c.shards}`;
    const row = {
      acceptors: c.acceptors,
      shards: c.shards,
      listReqPerSec: med(`list50 ${tag}`, (r) => r.reqPerSec),
      listCpuMicrosPerReq: med(`list50 ${tag}`, (r) => r.cpuMicrosPerReq),
      listReqPerSecRatio: perRepeatRatio(`list50 ${tag}`, 'list50', (r) => r.reqPerSec),
      listCpuRatio: perRepeatRatio(`list50 ${tag}`, 'list50', (r) => r.cpuMicrosPerReq),
      callReqPerSec: med(`call ${tag}`, (r) => r.reqPerSec),
      callCpuMicrosPerReq: med(`call ${tag}`, (r) => r.cpuMicrosPerReq),
      callReqPerSecRatio: perRepeatRatio(`call ${tag}`, 'call', (r) => r.reqPerSec),
      callCpuRatio: perRepeatRatio(`call ${tag}`, 'call', (r) => r.cpuMicrosPerReq),
    };
    rows.push(row);
    lines.push(
      `| ${c.acceptors} × ${c.shards} | ${fmt(row.listReqPerSec, 0)} | ${fmt(row.listCpuMicrosPerReq, 1)} | ${ratioText(row.listReqPerSecRatio)} | ${ratioText(row.listCpuRatio)} | ${fmt(row.callReqPerSec, 0)} | ${fmt(row.callCpuMicrosPerReq, 1)} | ${ratioText(row.callReqPerSecRatio)} | ${ratioText(row.callCpuRatio)} |`,
    );
  }
  return { text: lines.join('\n'), rows };
}

// ---------------------------------------------------------------------------
// Output

const resultsDir = (): string => here('../../bench/results/');
const chartFile = (): string => here('../../docs/bench/latest.svg');

const NOTES = [
  'CPU µs/req: user+system time of the server process, all threads (acceptors, shards, refresh worker), from /proc/<pid>/stat, ÷ responses. On a small machine the load generator (autocannon, this process) shares the cores, so req/s is bounded by client + server CPU; CPU µs/req is the steadier cost figure.',
  'Ratios (÷ base): median over repeats of gateway ÷ baseline within the same repeat, both measured back to back. Baselines: bare uWS answers a precomputed body of the same size (0 tools for initialize) after reading the request body; for tools/call the baseline is the echo Tool Service called directly, and "CPU ÷ base" compares the gateway\'s CPU per call with the Tool Service\'s own.',
  'client / other cores: CPU of the load generator and of every other process (the upstream Tool Service included) ÷ wall time; high "other" means the machine was busy and that run\'s req/s and latency are depressed.',
  'non-2xx: answers per status; "expected" are the deliberate 404s of the mixed load. errors: connection errors and timeouts.',
];

function writeOutputs(o: Options, state: RunState, partial: boolean): string[] {
  const date = state.started.toISOString().slice(0, 10);
  const suffix = o.sweep ? '-sweep' : '';
  mkdirSync(resultsDir(), { recursive: true });
  const md = join(resultsDir(), `${date}${suffix}.md`);
  const json = join(resultsDir(), `${date}${suffix}.json`);
  const meta = { date: state.started.toISOString(), gateway: gitDescribe(), machine: machine(), knobs: { ...o, combos: o.sweep ? o.combos : undefined }, partial };
  const skipped = [...state.skipped].map(([k, v]) => `- skipped ${k}: ${v}`);
  if (o.sweep) {
    const t = sweepTable(o, state.runs);
    writeFileSync(json, `${JSON.stringify({ ...meta, sweep: t.rows, runs: state.runs, skipped: Object.fromEntries(state.skipped) }, null, 2)}\n`);
    writeFileSync(
      md,
      [
        `# Gateway benchmark — acceptors × shards sweep, ${date}`,
        '',
        `${describe(o)}`,
        partial ? '\n**Partial: the run stopped early.**\n' : '',
        t.text,
        '',
        ...NOTES.map((n) => `- ${n}`),
        ...skipped,
        '',
        '<details><summary>Every run</summary>\n',
        rawTable(state.runs),
        '\n</details>',
        '',
      ].join('\n'),
    );
    return [md, json];
  }
  const summaries = allSummaries(state.runs);
  const checks = targetChecks(summaries);
  writeFileSync(json, `${JSON.stringify({ ...meta, summaries, targets: checks, notes: state.notes, skipped: Object.fromEntries(state.skipped), runs: state.runs }, null, 2)}\n`);
  writeFileSync(
    md,
    [
      `# Gateway benchmark, ${date}`,
      '',
      describe(o),
      partial ? '\n**Partial: the run stopped early.**\n' : '',
      summaryTable(summaries),
      '',
      '## Targets',
      '',
      targetsText(checks),
      '',
      '## Notes',
      '',
      ...NOTES.map((n) => `- ${n}`),
      ...state.notes.map((n) => `- ${n}`),
      ...skipped,
      '',
      'Chart: `docs/bench/latest.svg` (CPU µs per request and req/s, gateway vs baseline).',
      '',
      '<details><summary>Every run</summary>\n',
      rawTable(state.runs),
      '\n</details>',
      '',
    ].join('\n'),
  );
  const files = [md, json];
  if (!partial) {
    mkdirSync(here('../../docs/bench/'), { recursive: true });
    writeFileSync(chartFile(), chart(o, summaries, date));
    files.push(chartFile());
  }
  return files;
}

function describe(o: Options): string {
  const m = machine();
  return `node ${String(m.node)}, ${String(m.cores)} cores (${String(m.cpu)}), ${String(m.memoryGiB)} GiB; gateway ${gitDescribe()}, production config (log level warn); ${knobsText(o)}. Every server is its own process on 127.0.0.1; load from autocannon in the bench process.`;
}

function allSummaries(runs: Run[]): Summary[] {
  const out: Summary[] = [];
  for (const w of WORKLOADS) {
    for (const role of ['baseline', 'gateway'] as const) {
      const s = summarize(runs, w, role);
      if (s !== undefined) out.push(s);
    }
  }
  return out;
}

function chart(o: Options, summaries: Summary[], date: string): string {
  const find = (w: WorkloadId, role: Role): Summary | undefined => summaries.find((s) => s.workload === w && s.role === role);
  const groups: ChartGroup[] = [];
  const shortLabel: Record<WorkloadId, string> = {
    list5: 'tools/list · 5 tools',
    list50: 'tools/list · 50 tools',
    call: 'tools/call',
    initialize: 'initialize',
    mixed: 'mixed · 40 routes',
    refresh: 'tools/list under refresh',
  };
  const baseName: Record<WorkloadId, string> = { list5: 'bare uWS', list50: 'bare uWS', call: 'service', initialize: 'bare uWS', mixed: '', refresh: 'idle' };
  for (const w of WORKLOADS) {
    const b = find(w, 'baseline');
    const g = find(w, 'gateway');
    if (b === undefined && g === undefined) continue;
    groups.push({
      label: shortLabel[w],
      ...(b !== undefined ? { baseline: b, baselineLabel: baseName[w] } : {}),
      ...(g !== undefined ? { gateway: g, gatewayLabel: w === 'refresh' ? 'churning' : 'gateway' } : {}),
      ...(g?.ratios !== undefined ? { ratios: g.ratios } : {}),
    });
  }
  const m = machine();
  const workers = `acceptors ${o.acceptors ?? 1}, shards ${o.shards ?? Math.max(1, availableParallelism() - 1)}`;
  return renderChart(
    groups,
    `mcp-route-gateway benchmark, ${date}`,
    `node ${String(m.node)}, ${String(m.cores)} cores (${String(m.cpu)}) · gateway ${workers} · ${o.connections} connections · ${o.durationSec} s × ${o.repeats} repeats, medians`,
  );
}

function printSummary(o: Options, state: RunState): void {
  console.log('');
  if (o.sweep) {
    console.log(sweepTable(o, state.runs).text);
  } else {
    const summaries = allSummaries(state.runs);
    console.log(summaryTable(summaries));
    console.log('');
    for (const n of state.notes) console.log(`- ${n}`);
    for (const [k, v] of state.skipped) console.log(`- skipped ${k}: ${v}`);
    const gwCall = summaries.find((s) => s.workload === 'call' && s.role === 'gateway');
    if (gwCall !== undefined) console.log(`- echo Tool Service CPU during gateway tools/call: ${fmt(gwCall.upstreamMicrosPerReq, 1)} µs/req`);
    console.log('\nTargets (ratios measured in this run):');
    for (const c of targetChecks(summaries)) {
      console.log(`  ${c.met === null ? 'NOT MEASURED' : c.met ? 'MET        ' : 'NOT MET    '}  ${c.name}: ${c.measured} (target ${c.requirement})`);
    }
  }
}

/** Rough upper bound of the run's wall time, for the watchdog. */
function budgetSec(o: Options): number {
  const perRun = o.warmupSec + o.durationSec + 3;
  if (o.sweep) return o.repeats * (2 * perRun + o.combos.length * (2 * perRun + GATEWAY_READY_TIMEOUT_MS / 1000)) + 60;
  const main = o.workloads.filter((w) => w !== 'refresh').length * 2;
  const refresh = o.workloads.includes('refresh') ? 4 : 0;
  // Each idle refresh run may wait ≤ 5 s for the swaps to stop.
  return o.repeats * ((main + refresh) * perRun + (refresh / 2) * 5) + 2 * GATEWAY_READY_TIMEOUT_MS / 1000 + 60;
}

/** Entry point of bench/run.ts and bench/quick.ts. */
export async function runCli(argv: string[], preset: Preset): Promise<void> {
  const o = parseOptions(argv, preset);
  const state: RunState = { runs: [], skipped: new Map(), notes: [], started: new Date() };
  const title = preset === 'quick' ? 'bench:quick' : o.sweep ? 'bench --sweep' : 'bench';
  console.log(`# ${title} — ${describe(o)}`);
  const budget = budgetSec(o);
  console.log(`(bounded: stops after ${Math.round(budget)} s whatever happens)`);
  const watchdog = setTimeout(() => {
    console.error(`${title} exceeded its ${Math.round(budget)} s budget; stopping`);
    if (o.write && state.runs.length > 0) console.error(`partial results: ${writeOutputs(o, state, true).join(', ')}`);
    void killAll().finally(() => process.exit(2));
  }, budget * 1000);
  watchdog.unref();
  try {
    if (o.sweep) await sweep(o, state);
    else {
      await mainPhase(o, state);
      await refreshPhase(o, state);
    }
    printSummary(o, state);
    if (o.write) console.log(`\nwritten: ${writeOutputs(o, state, false).join(', ')}`);
  } catch (err) {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exitCode = 1;
    if (o.write && state.runs.length > 0) console.error(`partial results: ${writeOutputs(o, state, true).join(', ')}`);
  } finally {
    clearTimeout(watchdog);
    await killAll();
  }
}
