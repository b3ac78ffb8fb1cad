/**
 * Memory after load (issue 10): how much resident memory the gateway keeps
 * after 30 s of the mixed 40-route load against a Tool Service that flaps
 * between answering, refusing connections and timing out
 * (bench/flapping-tool-service.ts). A gateway that leaks on failure paths,
 * or a runtime whose heaps grow and never shrink, shows here.
 *
 *   npm run bench:memory [-- --node PATH] [-- --compare-node PATH]
 *
 * Per runtime, in turn: a fresh flapping service and a fresh gateway
 * (default layout, routes r00…r39, catalog refresh every second so refreshes
 * meet the flaps too); RSS after start-up and 2 s idle ("before"); the load
 * with RSS sampled every 100 ms ("peak"); flapping stopped, `--settle` s
 * idle, RSS again ("after"); then one tools/call must be answered correctly
 * (the gateway recovered). Per-thread heap comes from bench/thread-probe.ts.
 * Prints a markdown table; `--json FILE` also writes the figures. Every wait
 * is bounded and a watchdog stops the script if it overruns.
 *
 * Knobs: --duration S (30), --connections N (50), --phase-ms MS (2000),
 * --tool-timeout-ms MS (1000), --settle S (5), --refresh-ms MS (1000).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { sampleArguments } from './catalog.js';
import { freePort, killAll, rssKb, runLoad, spawnServer, type LoadResult, type SpawnedServer } from './harness.js';
import { fmt } from './suite/format.js';
import { rssSampler } from './suite/measure.js';
import { positive } from './suite/options.js';
import { checkGatewayCall, probeOne, send } from './suite/probes.js';
import { fromBench, gatewayConfig, resolveRuntime, startGateway, type Runtime, type ServiceEntry } from './suite/servers.js';
import { readThreadReports, type ThreadReport } from './suite/threads.js';
import { manifest, MCP_HEADERS, MIXED_ROUTES, mixedRequests, routeName, routeSize, rpc } from './suite/workloads.js';

const IDLE_BEFORE_MS = 2000;
const RECOVERY_ATTEMPTS = 10;
const RECOVERY_PAUSE_MS = 500;

const { values } = parseArgs({
  options: {
    node: { type: 'string' },
    'compare-node': { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'phase-ms': { type: 'string' },
    'tool-timeout-ms': { type: 'string' },
    settle: { type: 'string' },
    'refresh-ms': { type: 'string' },
    json: { type: 'string' },
  },
});
const env = process.env;
const o = {
  durationSec: positive('--duration', values.duration, 30, 1, false),
  connections: positive('--connections', values.connections, 50, 1, true),
  phaseMs: positive('--phase-ms', values['phase-ms'], 2000, 50, true),
  toolTimeoutMs: positive('--tool-timeout-ms', values['tool-timeout-ms'], 1000, 1, true),
  settleSec: positive('--settle', values.settle, 5, 0, false),
  refreshMs: positive('--refresh-ms', values['refresh-ms'], 1000, 10, true),
};
const compareNode = values['compare-node'] ?? env['MCP_BENCH_COMPARE_NODE'];
const nodes = [values.node ?? env['MCP_BENCH_NODE'] ?? process.execPath, ...(compareNode !== undefined && compareNode !== '' ? [compareNode] : [])];

/** Figures of one runtime. */
interface MemoryResult {
  runtime: string;
  node: string;
  beforeMiB: number;
  peakMiB: number;
  afterMiB: number;
  growthMiB: number;
  load: Omit<LoadResult, 'statusCounts'> & { statusCounts: Record<string, number> };
  /** The flapping service's counters at the end: phase cycles, calls answered, requests held (timed out), refuse phases. */
  flapper: { cycles?: number; answered?: number; held?: number; refusedPhases?: number } | undefined;
  recovered: string;
  threadsBefore: ThreadReport[];
  threadsAfter: ThreadReport[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mibOf = (pid: number): number => rssKb(pid) / 1024;

async function startFlapper(runtime: Runtime): Promise<{ server: SpawnedServer; url: string; control: string }> {
  const [port, controlPort] = [await freePort(), await freePort()];
  const args = [fromBench('flapping-tool-service.js'), '--port', String(port), '--control-port', String(controlPort), '--phase-ms', String(o.phaseMs), '--tool-timeout-ms', String(o.toolTimeoutMs)];
  const server = await spawnServer(runtime.node, args, /^listening \d+ control \d+$/m, { label: 'flapping-tool-service', timeoutMs: 10_000 });
  return { server, url: `http://127.0.0.1:${port}`, control: `http://127.0.0.1:${controlPort}` };
}

/** One tools/call answered correctly, within RECOVERY_ATTEMPTS tries. */
async function recovered(port: number): Promise<string> {
  const tool = manifest(50).tools[0];
  if (tool === undefined) return 'no tool';
  const req = { method: 'POST', headers: MCP_HEADERS, body: rpc('tools/call', { name: tool.name, arguments: sampleArguments(tool.inputSchema) }) };
  let problem: string | undefined = 'not tried';
  for (let i = 0; i < RECOVERY_ATTEMPTS && problem !== undefined; i++) {
    if (i > 0) await sleep(RECOVERY_PAUSE_MS);
    problem = await probeOne(`http://127.0.0.1:${port}/mcp/r00`, req, checkGatewayCall);
  }
  return problem ?? 'yes';
}

async function measureRuntime(runtime: Runtime, index: number): Promise<MemoryResult> {
  console.log(`\nnode ${runtime.version} (${runtime.node}): flapping Tool Service + gateway with ${MIXED_ROUTES} routes…`);
  const flapper = await startFlapper(runtime);
  const routes: Record<string, ServiceEntry[]> = {};
  for (let i = 0; i < MIXED_ROUTES; i++) routes[routeName('r', i)] = [{ id: 'flapping', baseUrl: flapper.url, manifestPath: `/manifest?tools=${routeSize(i)}&route=${routeName('r', i)}` }];
  const gw = await startGateway(`gateway-memory-${index + 1}`, runtime, (port) => gatewayConfig(port, routes, { acceptors: undefined, shards: undefined }, o.refreshMs));
  try {
    await sleep(IDLE_BEFORE_MS);
    const beforeMiB = mibOf(gw.server.pid);
    const threadsBefore = [...readThreadReports(gw.threadDir).values()];
    await send(`${flapper.control}/flap/start`, { method: 'POST' });
    const rss = rssSampler(gw.server.pid);
    let load: LoadResult;
    try {
      load = await runLoad({ url: `http://127.0.0.1:${gw.port}`, requests: mixedRequests().map(({ check: _c, ...r }) => r), connections: o.connections, durationSec: o.durationSec });
    } finally {
      rss.stop();
    }
    const stats = await send(`${flapper.control}/flap/stop`, { method: 'POST' });
    await sleep(o.settleSec * 1000);
    const afterMiB = mibOf(gw.server.pid);
    const result: MemoryResult = {
      runtime: runtime.version,
      node: runtime.node,
      beforeMiB,
      peakMiB: rss.stop() / 1024,
      afterMiB,
      growthMiB: afterMiB - beforeMiB,
      load,
      flapper: stats.json as MemoryResult['flapper'],
      recovered: await recovered(gw.port),
      threadsBefore,
      threadsAfter: [...readThreadReports(gw.threadDir).values()],
    };
    console.log(
      `  before ${fmt(beforeMiB, 0)} MiB, peak ${fmt(result.peakMiB, 0)}, after ${fmt(afterMiB, 0)} (+${fmt(result.growthMiB, 0)}); ${load.total} answers, ${load.errors} errors; recovered: ${result.recovered}`,
    );
    return result;
  } finally {
    await Promise.all([gw.server.kill(), flapper.server.kill()]);
  }
}

const mb = (bytes: number | undefined): string => fmt(bytes === undefined ? undefined : bytes / 2 ** 20, 1);

function report(results: MemoryResult[]): string {
  const lines = [
    `Memory after load: ${o.durationSec} s mixed load (${MIXED_ROUTES} routes, ${o.connections} connections), Tool Service flapping answer → refuse → timeout every ${o.phaseMs} ms (tool deadline ${o.toolTimeoutMs} ms), catalog refresh every ${o.refreshMs} ms; "after" is ${o.settleSec} s after the load stopped.`,
    '',
    '| node | RSS before MiB | peak MiB | after MiB | growth MiB | answers | statuses | errors | service cycles / answered / held / refuse phases | recovered |',
    '|---|---:|---:|---:|---:|---:|---|---:|---|---|',
  ];
  for (const r of results) {
    const statuses = Object.entries(r.load.statusCounts)
      .map(([s, n]) => `${n}×${s}`)
      .join(', ');
    const f = r.flapper;
    const service = `${f?.cycles ?? '–'} / ${f?.answered ?? '–'} / ${f?.held ?? '–'} / ${f?.refusedPhases ?? '–'}`;
    lines.push(
      `| ${r.runtime} | ${fmt(r.beforeMiB, 0)} | ${fmt(r.peakMiB, 0)} | ${fmt(r.afterMiB, 0)} | ${fmt(r.growthMiB, 0)} | ${r.load.total} | ${statuses} | ${r.load.errors} | ${service} | ${r.recovered} |`,
    );
  }
  lines.push(
    '',
    'Heap per JavaScript thread, MiB (before → after; heap total / external / ArrayBuffers):',
    '',
    '| node | thread | heap total | external | ArrayBuffers | peak heap total |',
    '|---|---|---:|---:|---:|---:|',
  );
  for (const r of results) {
    const before = new Map(r.threadsBefore.map((t) => [t.tid, t]));
    for (const t of r.threadsAfter) {
      const b = before.get(t.tid);
      lines.push(
        `| ${r.runtime} | ${t.role} | ${mb(b?.now.heapTotal)} → ${mb(t.now.heapTotal)} | ${mb(b?.now.external)} → ${mb(t.now.external)} | ${mb(b?.now.arrayBuffers)} → ${mb(t.now.arrayBuffers)} | ${mb(t.peak.heapTotal)} |`,
      );
    }
  }
  return lines.join('\n');
}

const budgetMs = nodes.length * (o.durationSec + o.settleSec + IDLE_BEFORE_MS / 1000 + 90) * 1000;
const watchdog = setTimeout(() => {
  console.error(`memory-after-load exceeded its ${budgetMs / 1000} s budget; stopping`);
  void killAll().finally(() => process.exit(2));
}, budgetMs);
watchdog.unref();
try {
  const runtimes = nodes.map((n, i) => resolveRuntime(n, nodes.length > 1 && i > 0));
  const results: MemoryResult[] = [];
  for (const [i, r] of runtimes.entries()) results.push(await measureRuntime(r, i));
  console.log(`\n${report(results)}`);
  if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify({ date: new Date().toISOString(), knobs: o, results }, null, 2)}\n`);
} catch (err) {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
} finally {
  clearTimeout(watchdog);
  await killAll();
}
