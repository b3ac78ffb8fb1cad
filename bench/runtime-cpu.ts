/**
 * Gateway CPU per request on each runtime, in one run (ADR-0001):
 *
 *   node dist/bench/runtime-cpu.js [--seconds 10] [--repeats 3] [--node /path/to/node …] [--young 48,0]
 *
 * For each runtime (default: the machine's Node, then Node 24 + uWS 20.57 from
 * bench/runtimes.ts) and each `workers.maxYoungGenerationSizeMb` in `--young`
 * (default just the gateway's default), starts the gateway (one route of 50
 * tools on the bench echo Tool Service) and measures its CPU time (all
 * threads, /proc) per `tools/call` and per `tools/list`, autocannon with 10
 * connections. Variants alternate within each repeat and the table shows
 * medians, plus each variant's ratio to the first: a same-run comparison on
 * a shared machine.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateManifest, sampleArguments } from './catalog.js';
import { freePort, killAll, measure, median, scratch, spawnServer, type SpawnedServer } from './harness.js';
import { benchRuntimes, describeRuntime, type BenchRuntime } from './runtimes.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    repeats: { type: 'string', default: '3' },
    node: { type: 'string', multiple: true },
    young: { type: 'string', default: '' },
  },
});
const SECONDS = Number(values.seconds);
const REPEATS = Number(values.repeats);
if (!Number.isFinite(SECONDS) || SECONDS <= 0) throw new Error(`--seconds: not a positive number: ${values.seconds}`);
if (!Number.isInteger(REPEATS) || REPEATS <= 0) throw new Error(`--repeats: not a positive integer: ${values.repeats}`);
const YOUNG: Array<number | null> = values.young === '' ? [null] : (values.young ?? '').split(',').map(Number);
if (YOUNG.some((y) => y !== null && (!Number.isInteger(y) || y < 0))) throw new Error(`--young: comma-separated integers ≥ 0, got ${values.young}`);

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));
const TOOLS = 50;
const HEADERS = { 'content-type': 'application/json', accept: 'application/json' };
const tool = generateManifest(TOOLS, { serviceId: 'echo' }).tools[0];
if (tool === undefined) throw new Error('empty manifest');
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool.name, arguments: sampleArguments(tool.inputSchema) } });
const LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

interface Variant {
  runtime: BenchRuntime;
  young: number | null;
  label: string;
  call: number[];
  list: number[];
}

async function startGateway(v: Variant, echoPort: number): Promise<{ server: SpawnedServer; port: number }> {
  const port = await freePort();
  const workers = { shards: 1, ...(v.young !== null ? { maxYoungGenerationSizeMb: v.young } : {}) };
  const config = {
    server: { host: '127.0.0.1', port },
    workers,
    catalog: { source: 'static', static: { routes: { r: [{ id: 'echo', baseUrl: `http://127.0.0.1:${echoPort}`, manifestPath: `/manifest?tools=${TOOLS}` }] } } },
    log: { level: 'warn' },
  };
  const file = join(scratch(), `cpu-${v.label.replace(/\W+/g, '_')}.json`);
  writeFileSync(file, JSON.stringify(config));
  const server = await spawnServer(v.runtime.node, [here('../src/main/cli.js'), '--config', file], `http://127.0.0.1:${port}/health/ready`, { label: 'gateway', timeoutMs: 30_000 });
  return { server, port };
}

try {
  const runtimes = values.node && values.node.length > 0 ? values.node.map(describeRuntime) : benchRuntimes();
  const variants: Variant[] = runtimes.flatMap((runtime) =>
    YOUNG.map((young) => ({ runtime, young, label: `${runtime.label}${young === null ? '' : ` · young ${young === 0 ? 'V8 default' : `${young} MB`}`}`, call: [], list: [] })),
  );
  const echoPort = await freePort();
  const echo = await spawnServer(process.execPath, [here('./echo-tool-service.js'), '--port', String(echoPort), '--tools', String(TOOLS)], /^listening \d+$/m, { label: 'echo' });
  for (let r = 0; r < REPEATS; r++) {
    for (const v of variants) {
      const gw = await startGateway(v, echoPort);
      const url = `http://127.0.0.1:${gw.port}/mcp/r`;
      try {
        const call = await measure(gw.server.pid, { url, method: 'POST', headers: HEADERS, body: CALL, connections: 10, durationSec: SECONDS }, { warmupSec: 3 });
        const list = await measure(gw.server.pid, { url, method: 'POST', headers: HEADERS, body: LIST, connections: 10, durationSec: SECONDS }, { warmupSec: 2 });
        if (call.non2xx > 0 || list.non2xx > 0) throw new Error(`${v.label}: non-2xx answers (${JSON.stringify(call.statusCounts)} / ${JSON.stringify(list.statusCounts)})`);
        v.call.push(call.cpuMicrosPerReq);
        v.list.push(list.cpuMicrosPerReq);
        console.log(
          `repeat ${r + 1} ${v.label}: tools/call ${call.cpuMicrosPerReq.toFixed(1)} µs CPU/req (${call.reqPerSec.toFixed(0)} req/s), tools/list ${list.cpuMicrosPerReq.toFixed(1)} µs (${list.reqPerSec.toFixed(0)} req/s)`,
        );
      } finally {
        await gw.server.kill();
      }
    }
  }
  await echo.kill();
  const base = variants[0] as Variant;
  console.log(`\ngateway CPU per request (all threads), median of ${REPEATS}; ratio to the first row in ():`);
  for (const v of variants) {
    const c = median(v.call);
    const l = median(v.list);
    console.log(`${v.label.padEnd(52)} tools/call ${c.toFixed(1)} µs (${(c / median(base.call)).toFixed(2)}×)   tools/list ${l.toFixed(1)} µs (${(l / median(base.list)).toFixed(2)}×)`);
  }
} finally {
  await killAll();
}
