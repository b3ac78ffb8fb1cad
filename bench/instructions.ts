/**
 * Instructions per `tools/call`, per thread, under valgrind's callgrind
 * (`node dist/bench/instructions.js`, ~3 min per server with the defaults):
 * a cost measure that does not move with the machine's load, unlike the CPU
 * time of `npm run bench` (on this shared 2-core machine the same build
 * measured 55–89 µs/call across runs of one day). Callgrind counts user-space
 * instructions only — kernel time (TCP, epoll) is not in it — and runs every
 * thread on one core, 30–50× slower: compare servers with it, never read it
 * as time.
 *
 * Each server runs as `valgrind --tool=callgrind node --perf-basic-prof …`
 * (the perf map names the JIT code); a warm-up of `--warmup` calls (JIT
 * tiers, pools; call-id generations come round) is discarded with
 * `callgrind_control -z`, then `--calls` calls are counted and dumped per
 * thread. The Tool Service runs natively. Needs valgrind (Debian: valgrind).
 *
 *   node dist/bench/instructions.js [--servers gateway,floor-sharded,floor-inline,inline]
 *        [--warmup 25000] [--calls 3000] [--connections 10] [--top 12]
 *   node dist/bench/instructions.js --request list [--servers gateway,bare]
 *
 * `--request list` counts a 50-tool `tools/list` instead (the gateway and the
 * bare uWS baseline answering the same bytes; the comparators of
 * `tools/call` do not serve it).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { IMAGE_ENV, IMAGE_NODE_FLAGS } from '../test/deploy/deployment-constants.js';
import { breakdown, parseCallgrind, parsePerfMap, type CostGroup, type ThreadBreakdown } from './callgrind.js';
import { freePort, killAll, scratch, spawnServer, type SpawnedServer } from './harness.js';
import { COMPARATORS, comparatorArgs, fromBench, gatewayConfig, type Comparator } from './suite/servers.js';
import { echoCallBodies, listBody, MCP_HEADERS } from './suite/workloads.js';

type ServerName = 'gateway' | Comparator;
const REQUESTS = ['call', 'list'] as const;
type RequestKind = (typeof REQUESTS)[number];
/** The servers that answer each request kind (all of them are measured by default): the gateway and the comparators that serve it. */
const serving = (kind: RequestKind): ServerName[] => ['gateway', ...(Object.keys(COMPARATORS) as Comparator[]).filter((c) => COMPARATORS[c].serves === kind)];
/** Valgrind starts node in ~10 s and the gateway's workers in ~30 s. */
const READY_TIMEOUT_MS = 300_000;

interface Options {
  request: RequestKind;
  servers: ServerName[];
  warmup: number;
  calls: number;
  connections: number;
  top: number;
}

function options(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: { request: { type: 'string' }, servers: { type: 'string' }, warmup: { type: 'string' }, calls: { type: 'string' }, connections: { type: 'string' }, top: { type: 'string' } },
  });
  const count = (name: string, raw: string | undefined, fallback: number): number => {
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: a positive integer, got ${String(raw)}`);
    return n;
  };
  const request = values.request ?? 'call';
  if (!(REQUESTS as readonly string[]).includes(request)) throw new Error(`--request: call or list, got ${JSON.stringify(request)}`);
  const kind = request as RequestKind;
  const servers = (values.servers ?? serving(kind).join(',')).split(',').map((s) => s.trim());
  for (const s of servers) {
    if (!(serving(kind) as string[]).includes(s)) throw new Error(`--servers: ${JSON.stringify(s)} does not serve --request ${kind} (those that do: ${serving(kind).join(', ')})`);
  }
  return {
    request: kind,
    servers: servers as ServerName[],
    warmup: count('warmup', values.warmup, 25_000),
    calls: count('calls', values.calls, 3_000),
    connections: count('connections', values.connections, 10),
    top: count('top', values.top, 12),
  };
}

/** `amount` requests of `body` on `connections` connections; throws unless every answer is a 2xx. */
function drive(url: string, body: string, amount: number, connections: number): Promise<void> {
  return new Promise((resolve, reject) => {
    autocannon({ url, method: 'POST', headers: MCP_HEADERS, body, connections, amount, timeout: 60 }, (err, result) => {
      if (err) reject(err instanceof Error ? err : new Error(String(err)));
      else if (result.non2xx > 0 || result.errors > 0 || result['2xx'] !== amount) reject(new Error(`${url}: ${result['2xx']} of ${amount} answers were 2xx (${result.errors} errors)`));
      else resolve();
    });
  });
}

/** Per-thread breakdowns of one server: the dump files `<out>.1-NN`, thread number NN. */
function readThreads(out: string, pid: number): Map<number, ThreadBreakdown> {
  const mapFile = `/tmp/perf-${pid}.map`;
  const map = existsSync(mapFile) ? parsePerfMap(readFileSync(mapFile, 'utf8')) : null;
  const dir = dirname(out);
  const base = `${basename(out)}.1-`;
  const threads = new Map<number, ThreadBreakdown>();
  for (const f of readdirSync(dir)) {
    if (!f.startsWith(base)) continue;
    const b = breakdown(parseCallgrind(readFileSync(join(dir, f), 'utf8')), map);
    if (b.total > 0) threads.set(Number(f.slice(base.length)), b);
  }
  return threads;
}

/** A thread's role from the code it ran: thread 1 is the main thread; workers by their modules. */
function roleOf(thread: number, b: ThreadBreakdown): string {
  if (thread === 1) return 'main';
  const names = [...b.javascript.keys()].join('\n');
  if (/workers\/shard\/|floor-shard-worker/.test(names)) return 'shard';
  if (/workers\/refresh\//.test(names)) return 'refresh';
  // Helper threads run compiler and GC work; what JIT code they show is a stub or two (under 1 %).
  return (b.groups.get('JavaScript (JIT)') ?? 0) < b.total / 100 ? 'V8 platform (GC, JIT)' : 'other JavaScript';
}

async function measureServer(name: ServerName, o: Options, echoUrl: string): Promise<Map<number, ThreadBreakdown>> {
  const port = await freePort();
  const out = join(scratch(), `callgrind-${name}.out`);
  const valgrind = ['--tool=callgrind', '--separate-threads=yes', '--dump-instr=no', '--smc-check=all-non-file', `--callgrind-out-file=${out}`, process.execPath, '--perf-basic-prof'];
  let path: string;
  let server: SpawnedServer;
  if (name === 'gateway') {
    const config = join(scratch(), 'instructions-gateway.json');
    writeFileSync(config, JSON.stringify(gatewayConfig(port, { bench: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=50' }] }, { acceptors: undefined, shards: undefined })));
    server = await spawnServer('valgrind', [...valgrind, ...IMAGE_NODE_FLAGS, fromBench('../src/main/cli.js'), '--config', config], `http://127.0.0.1:${port}/health/ready`, {
      label: name,
      timeoutMs: READY_TIMEOUT_MS,
      env: { ...IMAGE_ENV },
    });
    path = '/mcp/bench';
  } else {
    const c = COMPARATORS[name];
    server = await spawnServer('valgrind', [...valgrind, fromBench(c.script), '--port', String(port), ...comparatorArgs(name, echoUrl)], /listening \d+/, { label: name, timeoutMs: READY_TIMEOUT_MS });
    path = c.path;
  }
  const url = `http://127.0.0.1:${port}${path}`;
  const body = o.request === 'list' ? listBody : echoCallBodies().mcp;
  await drive(url, body, o.warmup, o.connections);
  execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
  await drive(url, body, o.calls, o.connections);
  execFileSync('callgrind_control', ['-d', 'measured', String(server.pid)], { stdio: 'ignore' });
  const threads = readThreads(out, server.pid);
  await server.kill();
  return threads;
}

const perCall = (n: number, calls: number): string => Math.round(n / calls).toLocaleString('en-US');

function report(name: ServerName, threads: Map<number, ThreadBreakdown>, o: Options): number {
  const total = [...threads.values()].reduce((s, b) => s + b.total, 0);
  const groups = [...new Set([...threads.values()].flatMap((b) => [...b.groups.keys()]))].sort() as CostGroup[];
  console.log(`\n### ${name}: ${perCall(total, o.calls)} instructions per request\n`);
  console.log(`| thread | role | all | ${groups.join(' | ')} |`);
  console.log(`|---|---|---:|${groups.map(() => '---:').join('|')}|`);
  for (const [n, b] of [...threads].sort((x, y) => y[1].total - x[1].total)) {
    if (b.total < o.calls) continue; // under one instruction per call: an idle thread
    console.log(`| ${n} | ${roleOf(n, b)} | ${perCall(b.total, o.calls)} | ${groups.map((g) => perCall(b.groups.get(g) ?? 0, o.calls)).join(' | ')} |`);
  }
  for (const [n, b] of threads) {
    if (b.javascript.size === 0 || b.total < o.calls * 1000) continue;
    const top = [...b.javascript].sort((x, y) => y[1] - x[1]).slice(0, o.top);
    console.log(`\nthread ${n} (${roleOf(n, b)}), JavaScript by function (instructions per request):`);
    for (const [fn, ir] of top) console.log(`  ${perCall(ir, o.calls).padStart(7)}  ${fn.replace(/file:\/\/\/\S*?\/dist\//, '')}`);
  }
  return total / o.calls;
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('valgrind is not installed (Debian: apt-get install valgrind)');
  }
  const echoPort = await freePort();
  await spawnServer(process.execPath, [fromBench('echo-tool-service.js'), '--port', String(echoPort), '--tools', '50'], /^listening (\d+)$/m, { label: 'echo', timeoutMs: 20_000 });
  const echoUrl = `http://127.0.0.1:${echoPort}`;
  const what = o.request === 'list' ? 'tools/list (50 tools)' : 'tools/call';
  console.log(`instructions per ${what} under callgrind (node ${process.version}): ${o.warmup} warm-up requests discarded, ${o.calls} counted, ${o.connections} connections; user space only`);
  const totals = new Map<ServerName, number>();
  // One server under valgrind at a time: it takes a whole core.
  for (const name of o.servers) totals.set(name, report(name, await measureServer(name, o, echoUrl), o));
  const ratio = (v: number, ref: ServerName): string => {
    const base = totals.get(ref);
    return base === undefined ? '–' : `${(v / base).toFixed(2)}×`;
  };
  if (o.request === 'list') {
    console.log('\n| server | instructions per request | ÷ bare uWS |\n|---|---:|---:|');
    for (const [name, v] of totals) console.log(`| ${name} | ${Math.round(v).toLocaleString('en-US')} | ${ratio(v, 'bare')} |`);
    return;
  }
  console.log('\n| server | instructions per call | ÷ floor (acceptor + shard) | ÷ inline gateway |\n|---|---:|---:|---:|');
  for (const [name, v] of totals) console.log(`| ${name} | ${Math.round(v).toLocaleString('en-US')} | ${ratio(v, 'floor-sharded')} | ${ratio(v, 'inline')} |`);
}

main()
  .catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  })
  .finally(() => void killAll());
