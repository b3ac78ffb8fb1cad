/**
 * Memory after load per runtime and young-generation size (ADR-0001, issue "Node 24 memory"):
 *
 *   node dist/bench/runtime-memory.js [--duration 30] [--repeats 1] [--node /path/to/node …]
 *                                        [--young 48,0] [--node-flags="--max-semi-space-size=16"]
 *
 * For each runtime (default: the machine's Node, then Node 24 + uWS 20.57 from
 * bench/runtimes.ts), in one run: starts the echo Tool Service and the
 * gateway (10 routes of 50 tools, catalog refresh every second) with
 * bench/memory-probe.js preloaded into every thread; warms up, lets it settle
 * and samples; drives a mixed load (per 10 requests 7 tools/call, 2
 * tools/list, 1 initialize; 20 connections) while the Tool Service flaps (up
 * 2 s, down 1 s: calls fail fast, refreshes keep last-good manifests) at a
 * fixed rate (`--rate`, default 1000 req/s, so every runtime does the same
 * work whatever else the machine runs); lets it
 * settle 5 s and samples again. Prints RSS growth and, per thread, heap,
 * young generation, external and ArrayBuffer bytes before → after; with
 * `--repeats N` the runtimes alternate (A B A B …) and a last line gives each
 * runtime's median RSS growth and its ratio to the first runtime's.
 *
 * `--young` runs each runtime once per `workers.maxYoungGenerationSizeMb`
 * value (0 = V8's default; without it, the gateway's default). `--node-flags`
 * are passed to the gateway's Node (and so to its worker threads). The machine is shared: compare
 * runtimes within one run, not across runs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { generateManifest, sampleArguments } from './catalog.js';
import autocannon from 'autocannon';
import { freePort, killAll, median, scratch, spawnServer, type LoadRequest, type SpawnedServer } from './harness.js';
import type { MemoryReport, ThreadMemory } from './memory-probe.js';
import { benchRuntimes, describeRuntime, type BenchRuntime } from './runtimes.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '30' },
    node: { type: 'string', multiple: true },
    'node-flags': { type: 'string', default: '' },
    routes: { type: 'string', default: '10' },
    repeats: { type: 'string', default: '1' },
    rate: { type: 'string', default: '1000' },
    young: { type: 'string', default: '' },
  },
});
const REPEATS = Number(values.repeats);
const RATE = Number(values.rate);
const YOUNG: Array<number | null> = values.young === '' ? [null] : (values.young ?? '').split(',').map(Number);
if (YOUNG.some((y) => y !== null && (!Number.isInteger(y) || y < 0))) throw new Error(`--young: comma-separated integers ≥ 0, got ${values.young}`);
if (!Number.isInteger(RATE) || RATE <= 0) throw new Error(`--rate: not a positive integer: ${values.rate}`);
if (!Number.isInteger(REPEATS) || REPEATS <= 0) throw new Error(`--repeats: not a positive integer: ${values.repeats}`);
const DURATION_SEC = Number(values.duration);
const ROUTES = Number(values.routes);
const TOOLS = 50;
const NODE_FLAGS = (values['node-flags'] ?? '').split(/\s+/).filter((f) => f !== '');
if (!Number.isFinite(DURATION_SEC) || DURATION_SEC <= 0) throw new Error(`--duration: not a positive number: ${values.duration}`);
if (!Number.isInteger(ROUTES) || ROUTES <= 0) throw new Error(`--routes: not a positive integer: ${values.routes}`);

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const MB = 1024 * 1024;
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

function requests(): LoadRequest[] {
  const tools = generateManifest(TOOLS, { serviceId: 'echo' }).tools;
  const out: LoadRequest[] = [];
  for (let i = 0; i < 100; i++) {
    const path = `/mcp/r${i % ROUTES}`;
    const slot = i % 10;
    const tool = tools[(i * 7) % tools.length];
    let body: unknown;
    if (slot < 7 && tool) body = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: tool.name, arguments: sampleArguments(tool.inputSchema) } };
    else if (slot < 9) body = { jsonrpc: '2.0', id: i, method: 'tools/list' };
    else body = { jsonrpc: '2.0', id: i, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mem', version: '1' } } };
    out.push({ method: 'POST', path, headers: HEADERS, body: JSON.stringify(body) });
  }
  return out;
}

/** The load at a fixed overall rate (autocannon `overallRate`); resolves with the number of answers. */
function fixedRateLoad(url: string, durationSec: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const instance = autocannon({ url, connections: 20, pipelining: 1, duration: durationSec, overallRate: RATE, timeout: 10, requests: requests() }, (err, result) => {
      clearTimeout(guard);
      if (err) reject(err instanceof Error ? err : new Error(String(err)));
      else resolve(result.requests.total);
    });
    const guard = setTimeout(() => instance.stop(), (durationSec + 10) * 1000);
  });
}

async function startEcho(port: number): Promise<SpawnedServer> {
  return spawnServer(process.execPath, [here('./echo-tool-service.js'), '--port', String(port), '--tools', String(TOOLS)], /^listening \d+$/m, { label: 'echo' });
}

/** SIGUSR2 → the probe writes the report; bounded wait for the file. */
async function sample(server: SpawnedServer, file: string): Promise<MemoryReport> {
  writeFileSync(file, '');
  process.kill(server.pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    const text = readFileSync(file, 'utf8');
    if (text !== '') return JSON.parse(text) as MemoryReport;
  }
  throw new Error(`memory probe of ${server.pid} did not answer within 5 s`);
}

/** A runtime with one young-generation setting. */
interface Variant {
  runtime: BenchRuntime;
  young: number | null;
  label: string;
}

interface RunResult {
  variant: Variant;
  before: MemoryReport;
  after: MemoryReport;
  calls: number;
}

async function measureVariant(variant: Variant): Promise<RunResult> {
  const { runtime, young } = variant;
  const echoPort = await freePort();
  let echo: SpawnedServer | null = await startEcho(echoPort);
  const port = await freePort();
  const routes = Object.fromEntries(
    Array.from({ length: ROUTES }, (_, r) => [`r${r}`, [{ id: `echo-${r}`, baseUrl: `http://127.0.0.1:${echoPort}`, manifestPath: `/manifest?tools=${TOOLS}&route=r${r}` }]]),
  );
  const tag = `${runtime.version}-${young ?? 'default'}`;
  const configFile = join(scratch(), `memory-${tag}.json`);
  const workers = young === null ? {} : { workers: { maxYoungGenerationSizeMb: young } };
  writeFileSync(configFile, JSON.stringify({ server: { host: '127.0.0.1', port }, ...workers, catalog: { source: 'static', static: { routes }, refreshIntervalMs: 1000 }, log: { level: 'fatal' } }));
  const probeFile = join(scratch(), `memory-${tag}.out.json`);
  const gateway = await spawnServer(runtime.node, [...NODE_FLAGS, '--import', here('./memory-probe.js'), here('../src/main/cli.js'), '--config', configFile], `http://127.0.0.1:${port}/health/ready`, {
    label: `gateway-${runtime.version}`,
    env: { MEMORY_PROBE_OUT: probeFile },
    timeoutMs: 30_000,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await fixedRateLoad(url, 3);
    await sleep(3_000);
    const before = await sample(gateway, probeFile);

    // The Tool Service flaps during the load: up 2 s, down 1 s.
    let flapping = true;
    const flap = (async () => {
      while (flapping) {
        await sleep(2_000);
        if (!flapping) break;
        await echo?.kill();
        echo = null;
        await sleep(1_000);
        echo = await startEcho(echoPort);
      }
    })();
    const answered = await fixedRateLoad(url, DURATION_SEC);
    flapping = false;
    await flap;
    echo ??= await startEcho(echoPort);
    await sleep(5_000);
    const after = await sample(gateway, probeFile);
    return { variant, before, after, calls: answered };
  } finally {
    await gateway.kill();
    await echo?.kill();
  }
}

const mb = (n: number): string => (n / MB).toFixed(1);
const delta = (a: number, b: number): string => `${mb(a)} → ${mb(b)} (${b - a >= 0 ? '+' : ''}${mb(b - a)})`;

function report(r: RunResult): void {
  console.log(`\n## ${r.variant.label}  (${r.variant.runtime.node})${NODE_FLAGS.length ? `  flags: ${NODE_FLAGS.join(' ')}` : ''}`);
  console.log(`requests: ${r.calls}; RSS ${delta(r.before.rss, r.after.rss)} MB`);
  console.log('thread         heapTotal MB            young gen (new_space) MB   external MB            ArrayBuffers MB        maxYoungGenerationSizeMb');
  for (const t of r.after.threads) {
    const b: ThreadMemory | undefined = r.before.threads.find((x) => x.threadId === t.threadId) ?? undefined;
    if (b === undefined) continue;
    const name = `${t.kind}#${t.threadId}`.padEnd(14);
    console.log(
      `${name} ${delta(b.heapTotal, t.heapTotal).padEnd(23)} ${delta(b.newSpaceSize, t.newSpaceSize).padEnd(26)} ${delta(b.external, t.external).padEnd(22)} ${delta(b.arrayBuffers, t.arrayBuffers).padEnd(22)} ${t.resourceLimits['maxYoungGenerationSizeMb'] ?? '-'}`,
    );
  }
}

try {
  const runtimes = values.node && values.node.length > 0 ? values.node.map(describeRuntime) : benchRuntimes();
  console.log(`memory after load: ${ROUTES} routes × ${TOOLS} tools, ${DURATION_SEC} s mixed load with a flapping Tool Service, per runtime in one run`);
  const variants: Variant[] = runtimes.flatMap((runtime) =>
    YOUNG.map((young) => ({ runtime, young, label: `${runtime.label}${young === null ? '' : ` · young ${young === 0 ? 'V8 default' : `${young} MB`}`}` })),
  );
  const growth = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  const afterRss = new Map<Variant, number[]>(variants.map((v) => [v, []]));
  for (let i = 0; i < REPEATS; i++) {
    for (const variant of variants) {
      const r = await measureVariant(variant);
      report(r);
      growth.get(variant)?.push(r.after.rss - r.before.rss);
      afterRss.get(variant)?.push(r.after.rss);
    }
  }
  const first = variants[0] as Variant;
  const base = median(growth.get(first) ?? []);
  const baseAfter = median(afterRss.get(first) ?? []);
  console.log(`\nmedian over ${REPEATS} repeat(s); ratio to the first row in ():`);
  for (const v of variants) {
    const g = median(growth.get(v) ?? []);
    const a = median(afterRss.get(v) ?? []);
    console.log(`${v.label.padEnd(52)} RSS growth +${mb(g)} MB (${(g / base).toFixed(2)}×)   RSS after load ${mb(a)} MB (${(a / baseAfter).toFixed(2)}×)`);
  }
} finally {
  await killAll();
}
