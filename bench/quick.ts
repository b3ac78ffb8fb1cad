/**
 * Quick bench (`npm run bench:quick`, < 60 s with defaults): the gateway's hot
 * paths against physical-limit baselines measured in the same run.
 *
 * Rows:
 *  - `tools/list` on the gateway      vs the bare uWS server (constant answer of equal size)
 *  - `tools/call` on the gateway      vs the echo Tool Service called directly
 *
 * Each server is its own process, so its CPU time per request (all threads,
 * from /proc) is charged to it alone. The machine is small and shared, so
 * only the ratios to the baselines are meaningful, not absolute numbers.
 *
 * Knobs: BENCH_CONNECTIONS (50), BENCH_DURATION seconds (5), BENCH_WARMUP
 * seconds (1, discarded), BENCH_GATEWAY_CMD (override the gateway command
 * line: split on spaces, `{config}` and `{port}` substituted, `--config
 * <file>` appended when `{config}` is absent), BENCH_KEEP_TMP=1 (keep logs).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateManifest, sampleArguments, toolsListResult } from './catalog.js';
import { freePort, killAll, measure, runLoad, scratch, spawnServer, cpuTimeMicros, type LoadOptions, type MeasureResult, type SpawnedServer } from './harness.js';

const TOOL_COUNT = 50;
const GATEWAY_READY_TIMEOUT_MS = 15_000;
const BASELINE_READY_TIMEOUT_MS = 10_000;

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

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

/** One measured row of the table. */
interface Row {
  name: string;
  result?: MeasureResult;
  /** Fraction of one core the load generator (this process) used. */
  clientCpu?: number;
  baseline?: Row;
  skipped?: string;
}

/** Sends one request and returns status + text, bounded in time. */
async function request(load: LoadOptions): Promise<{ status: number; text: string }> {
  const res = await fetch(load.url, {
    method: load.method ?? 'GET',
    headers: load.headers ?? {},
    ...(load.body !== undefined ? { body: load.body } : {}),
    signal: AbortSignal.timeout(5000),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * Checks one answer before loading a server, so a row never measures fast
 * error answers by mistake. Returns a problem description or undefined.
 */
async function probe(load: LoadOptions, check: (body: unknown) => string | undefined): Promise<string | undefined> {
  let answer: { status: number; text: string };
  try {
    answer = await request(load);
  } catch (err) {
    return `request failed: ${(err as Error).message}`;
  }
  const excerpt = answer.text.length > 300 ? `${answer.text.slice(0, 300)}…` : answer.text;
  if (answer.status !== 200) return `HTTP ${answer.status}: ${excerpt}`;
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return `answer is not JSON: ${excerpt}`;
  }
  const problem = check(body);
  return problem === undefined ? undefined : `${problem}: ${excerpt}`;
}

/** Warm-up (discarded), then a measured run with client CPU accounting. */
async function runRow(name: string, server: SpawnedServer, load: LoadOptions, baseline?: Row): Promise<Row> {
  if (WARMUP > 0) await runLoad({ ...load, durationSec: WARMUP });
  const clientBefore = process.cpuUsage();
  const result = await measure(server.pid, load);
  const client = process.cpuUsage(clientBefore);
  const row: Row = { name, result, clientCpu: (client.user + client.system) / 1e6 / result.durationSec };
  if (baseline !== undefined) row.baseline = baseline;
  return row;
}

/** Splits BENCH_GATEWAY_CMD on whitespace and fills the placeholders. */
function gatewayCommand(configFile: string, port: number): { cmd: string; args: string[] } {
  const override = process.env.BENCH_GATEWAY_CMD;
  if (override === undefined || override.trim() === '') {
    return { cmd: process.execPath, args: [here('../src/main/cli.js'), '--config', configFile] };
  }
  const parts = override.trim().split(/\s+/).map((p) => p.replaceAll('{config}', configFile).replaceAll('{port}', String(port)));
  if (!override.includes('{config}')) parts.push('--config', configFile);
  const [cmd, ...args] = parts;
  if (cmd === undefined) throw new Error('BENCH_GATEWAY_CMD is empty');
  return { cmd, args };
}

function fmt(n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? '–' : n.toFixed(digits);
}

function printTable(rows: Row[]): void {
  const header = ['row', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'req/s ÷ base', 'CPU ÷ base', 'non-2xx / errors', 'peak RSS MiB', 'client CPU'];
  console.log(`| ${header.join(' | ')} |`);
  console.log(`|${header.map(() => '---').join('|')}|`);
  for (const row of rows) {
    const r = row.result;
    if (r === undefined) {
      console.log(`| ${row.name} | skipped: ${row.skipped ?? 'not run'} |${' |'.repeat(header.length - 2)}`);
      continue;
    }
    const b = row.baseline?.result;
    const cells = [
      row.name,
      fmt(r.reqPerSec, 0),
      fmt(r.p50Ms, 2),
      fmt(r.p99Ms, 2),
      fmt(r.cpuMicrosPerReq, 1),
      b === undefined ? 'baseline' : `${fmt(r.reqPerSec / b.reqPerSec, 2)}×`,
      b === undefined ? 'baseline' : `${fmt(r.cpuMicrosPerReq / b.cpuMicrosPerReq, 2)}×`,
      `${r.non2xx} / ${r.errors}`,
      fmt(r.peakRssKb / 1024, 0),
      `${fmt((row.clientCpu ?? Number.NaN) * 100, 0)}%`,
    ];
    console.log(`| ${cells.join(' | ')} |`);
  }
}

async function main(): Promise<void> {
  const manifest = generateManifest(TOOL_COUNT, { serviceId: 'echo' });
  const firstTool = manifest.tools[0];
  if (firstTool === undefined) throw new Error('empty catalog');
  const args = sampleArguments(firstTool.inputSchema);
  const listResultBytes = Buffer.byteLength(JSON.stringify(toolsListResult(manifest)));
  const expectedNames = manifest.tools.map((t) => t.name);

  console.log(
    `# bench:quick — node ${process.version}, ${availableParallelism()} cores, ${CONNECTIONS} connections, ` +
      `${DURATION} s measured after ${WARMUP} s warm-up per row`,
  );
  console.log(`tools/list result for ${TOOL_COUNT} tools: ${listResultBytes} bytes (${(listResultBytes / 1024).toFixed(1)} KiB); tools/call target: ${firstTool.name}`);

  const [echoPort, barePort, gatewayPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const listening = /^listening (\d+)$/m;
  const [echo, bare] = await Promise.all([
    spawnServer(process.execPath, [here('./echo-tool-service.js'), '--port', String(echoPort), '--tools', String(TOOL_COUNT)], listening, {
      label: 'echo-tool-service',
      timeoutMs: BASELINE_READY_TIMEOUT_MS,
    }),
    spawnServer(process.execPath, [here('./bare-uws.js'), '--port', String(barePort)], listening, {
      label: 'bare-uws',
      timeoutMs: BASELINE_READY_TIMEOUT_MS,
    }),
  ]);

  // The gateway is started after the echo service because it loads the echo
  // manifest during its initial catalog load.
  const config = {
    server: { host: '127.0.0.1', port: gatewayPort },
    workers: { shards: 1 },
    catalog: { source: 'static', static: { routes: { bench: [{ id: 'echo', baseUrl: `http://127.0.0.1:${echoPort}` }] } } },
  };
  const configFile = join(scratch(), 'gateway.json');
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  let gateway: SpawnedServer | undefined;
  let gatewaySkip: string | undefined;
  const { cmd, args: gwArgs } = gatewayCommand(configFile, gatewayPort);
  if (process.env.BENCH_GATEWAY_CMD === undefined && !existsSync(gwArgs[0] ?? '')) {
    gatewaySkip = `gateway not built (${gwArgs[0]} missing)`;
  } else {
    try {
      gateway = await spawnServer(cmd, gwArgs, `http://127.0.0.1:${gatewayPort}/health/ready`, {
        label: 'gateway',
        timeoutMs: GATEWAY_READY_TIMEOUT_MS,
      });
    } catch (err) {
      gatewaySkip = (err as Error).message.split('\n')[0];
      console.log(`\n> gateway skipped: ${(err as Error).message}\n`);
    }
  }

  const jsonHeaders = { 'content-type': 'application/json', accept: 'application/json' };
  const listBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const callBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: firstTool.name, arguments: args } });
  const base = { method: 'POST' as const, headers: jsonHeaders, connections: CONNECTIONS, durationSec: DURATION };
  const bareList: LoadOptions = { ...base, url: `http://127.0.0.1:${barePort}/mcp/bench`, body: listBody };
  const echoCall: LoadOptions = {
    ...base,
    url: `http://127.0.0.1:${echoPort}${firstTool.execution.path}`,
    body: JSON.stringify({ name: firstTool.name, version: firstTool.version, arguments: args }),
  };
  const gwList: LoadOptions = { ...base, url: `http://127.0.0.1:${gatewayPort}/mcp/bench`, body: listBody };
  const gwCall: LoadOptions = { ...base, url: `http://127.0.0.1:${gatewayPort}/mcp/bench`, body: callBody };

  const checkList = (body: unknown): string | undefined => {
    const tools = (body as { result?: { tools?: Array<{ name?: unknown }> } }).result?.tools;
    if (!Array.isArray(tools)) return 'no result.tools array';
    const names = tools.map((t) => t.name);
    if (names.length !== expectedNames.length || expectedNames.some((n) => !names.includes(n))) return `expected the ${expectedNames.length} echo tools, got ${names.length}`;
    return undefined;
  };
  const checkCallResult = (result: unknown): string | undefined => {
    const r = result as { content?: unknown; isError?: unknown } | undefined;
    if (!Array.isArray(r?.content)) return 'no content array';
    if (r?.isError === true) return 'isError: true';
    return undefined;
  };

  const rows: Row[] = [];
  const notes: string[] = [];

  // Baselines first, then the gateway row against each.
  const bareProblem = await probe(bareList, checkList);
  if (bareProblem !== undefined) throw new Error(`bare uWS answers wrongly: ${bareProblem}`);
  const bareRow = await runRow('tools/list · bare uWS', bare, bareList);
  rows.push(bareRow);

  if (gateway === undefined) {
    rows.push({ name: 'tools/list · gateway', skipped: gatewaySkip ?? 'gateway not running' });
  } else {
    const problem = await probe(gwList, checkList);
    if (problem !== undefined) {
      rows.push({ name: 'tools/list · gateway', skipped: 'wrong answer (see notes)' });
      notes.push(`gateway tools/list probe: ${problem}`);
    } else {
      const size = Buffer.byteLength((await request(gwList)).text);
      const bareSize = Buffer.byteLength((await request(bareList)).text);
      notes.push(`tools/list answer size: gateway ${size} B, bare ${bareSize} B`);
      rows.push(await runRow('tools/list · gateway', gateway, gwList, bareRow));
    }
  }

  const echoProblem = await probe(echoCall, checkCallResult);
  if (echoProblem !== undefined) throw new Error(`echo Tool Service answers wrongly: ${echoProblem}`);
  const echoRow = await runRow('tools/call · echo direct', echo, echoCall);
  rows.push(echoRow);

  if (gateway === undefined) {
    rows.push({ name: 'tools/call · gateway', skipped: gatewaySkip ?? 'gateway not running' });
  } else {
    const problem = await probe(gwCall, (body) => checkCallResult((body as { result?: unknown }).result));
    if (problem !== undefined) {
      rows.push({ name: 'tools/call · gateway', skipped: 'wrong answer (see notes)' });
      notes.push(`gateway tools/call probe: ${problem}`);
    } else {
      // The echo service works during this row too; report its share so the
      // gateway's own CPU/req is not mistaken for the whole path's cost.
      const echoBefore = cpuTimeMicros(echo.pid);
      const row = await runRow('tools/call · gateway', gateway, gwCall, echoRow);
      const echoMicros = cpuTimeMicros(echo.pid) - echoBefore;
      rows.push(row);
      // Warm-up traffic also reached the echo service but is excluded above.
      if (row.result !== undefined && row.result.total > 0) {
        notes.push(`echo service CPU during gateway tools/call: ${fmt(echoMicros / row.result.total, 1)} µs/req (direct row: ${fmt(echoRow.result?.cpuMicrosPerReq, 1)} µs/req)`);
      }
    }
  }

  console.log('');
  printTable(rows);
  console.log('');
  console.log('CPU µs/req: user+system time of the server process (all threads) ÷ responses. client CPU: the load generator (this process) in % of one core; near 100% means the row is client-bound and req/s understates the server.');
  for (const note of notes) console.log(`- ${note}`);
}

// Hard upper bound on the whole run, whatever hangs.
const budgetMs = (4 * (WARMUP + DURATION + 12) + BASELINE_READY_TIMEOUT_MS / 1000 + GATEWAY_READY_TIMEOUT_MS / 1000 + 10) * 1000;
const watchdog = setTimeout(() => {
  console.error(`bench:quick exceeded its ${Math.round(budgetMs / 1000)} s budget; stopping`);
  void killAll().finally(() => process.exit(2));
}, budgetMs);
watchdog.unref();

try {
  await main();
} catch (err) {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
} finally {
  await killAll();
}
