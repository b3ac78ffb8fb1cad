/**
 * A/B of gateway builds or flags (`npm run bench:ab -- --arm NAME=COMMAND
 * --arm NAME=COMMAND …`, ~2 min with the defaults): every arm is its own
 * gateway process on the same echo Tool Service, started once and warmed;
 * then `--rounds` rounds load each arm in turn for `--duration` seconds,
 * the order reversed every other round, and each arm's CPU time (all
 * threads, /proc) is divided by the requests it served.
 *
 * Why not two `npm run bench` runs with BENCH_GATEWAY_CMD: on this shared
 * machine the same build's CPU per call moved by ±20 % between full runs of
 * one day (bench/results/2026-12-04*.md), where rounds seconds apart on a
 * calm machine stayed within ±3 % (ADR-0021 addendum): a change of a few
 * percent shows only when its arms alternate in one process. Each arm's
 * figure is the median of its rounds, and its ratio to the first arm the
 * median of per-round ratios, so a machine that slows down between rounds
 * moves both arms of a round alike.
 *
 * COMMAND is a gateway command as for BENCH_GATEWAY_CMD (split on
 * whitespace, `{config}`/`{port}` filled, else `--config FILE` appended),
 * e.g. `node --max-semi-space-size=1 /tmp/before/dist/src/main/cli.js`.
 * `--with inline,floor-sharded,floor-inline` adds the bench's `tools/call`
 * comparators as arms (bench/inline-gateway.ts, bench/floor-gateway.ts),
 * `--with bare` (with `--request list`) the `tools/list` one
 * (bench/bare-uws.ts: the same 50-tool answer as a constant).
 *
 *   node dist/bench/ab.js --arm NAME=COMMAND [--arm …] [--with …]
 *        [--request call|list] [--rounds 6] [--duration 6] [--warmup 3] [--connections 50]
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { IMAGE_ENV } from '../test/deploy/deployment-constants.js';
import { freePort, killAll, measure, runLoad, scratch, spawnServer, type MeasureResult, type SpawnedServer } from './harness.js';
import { AB_USAGE, abOptions, summarizeAb, type Arm } from './suite/ab.js';
import { commandLine, COMPARATORS, comparatorArgs, gatewayConfig, GATEWAY_READY_TIMEOUT_MS, resolveRuntime, startNodeServer, type Runtime } from './suite/servers.js';
import { echoCallBodies, listBody, MCP_HEADERS } from './suite/workloads.js';

interface Running {
  server: SpawnedServer;
  url: string;
}

async function startArm(arm: Arm, echoUrl: string, runtime: Runtime): Promise<Running> {
  if ('comparator' in arm) {
    const c = COMPARATORS[arm.comparator];
    const started = await startNodeServer(arm.name, c.script, comparatorArgs(arm.comparator, echoUrl), runtime);
    return { server: started.server, url: `http://127.0.0.1:${started.port}${c.path}` };
  }
  const port = await freePort();
  const configFile = join(scratch(), `ab-${arm.name}.json`);
  writeFileSync(configFile, JSON.stringify(gatewayConfig(port, { bench: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=50' }] }, { acceptors: undefined, shards: undefined })));
  const { cmd, args } = commandLine(arm.command, configFile, port);
  const server = await spawnServer(cmd, args, `http://127.0.0.1:${port}/health/ready`, { label: `ab-${arm.name}`, timeoutMs: GATEWAY_READY_TIMEOUT_MS, env: { ...IMAGE_ENV } });
  return { server, url: `http://127.0.0.1:${port}/mcp/bench` };
}

const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '–');

async function main(): Promise<void> {
  let parsed: ReturnType<typeof abOptions>;
  try {
    parsed = abOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${err instanceof Error ? err.message : String(err)}\n\n${AB_USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (parsed === 'help') {
    console.log(AB_USAGE);
    return;
  }
  const o = parsed;
  // The Tool Service and the comparators run on this node; a gateway arm brings its own command.
  const runtime = resolveRuntime(process.execPath, false);
  const echo = await startNodeServer('echo-tool-service', 'echo-tool-service.js', ['--tools', '50'], runtime);
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  const running: Running[] = [];
  for (const arm of o.arms) running.push(await startArm(arm, echoUrl, runtime));
  const body = o.request === 'list' ? listBody : echoCallBodies().mcp;
  const load = (r: Running, durationSec: number) => ({ url: r.url, method: 'POST' as const, headers: MCP_HEADERS, body, connections: o.connections, durationSec });
  for (const r of running) if (o.warmupSec > 0) await runLoad(load(r, o.warmupSec));
  console.log(`A/B of ${o.request === 'list' ? 'tools/list (50 tools)' : 'tools/call'}: ${o.arms.length} arms, ${o.rounds} rounds of ${o.durationSec} s each, ${o.connections} connections`);
  const rounds: MeasureResult[][] = [];
  for (let round = 0; round < o.rounds; round++) {
    const results: MeasureResult[] = [];
    // Every other round backwards: no arm always runs right after the same one.
    const order = running.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) results[i] = await measure((running[i] as Running).server.pid, load(running[i] as Running, o.durationSec));
    rounds.push(results);
    console.log(`round ${round + 1}: ${o.arms.map((a, i) => `${a.name} ${f1(results[i]?.cpuMicrosPerReq ?? Number.NaN)}`).join(', ')} µs/req`);
  }
  console.log(`\n| arm | CPU µs/req (median) | ÷ ${o.arms[0]?.name} (median of per-round ratios) | rounds | req/s | p99 ms | failed answers |\n|---|---:|---:|---|---:|---:|---:|`);
  for (const s of summarizeAb(
    o.arms.map((a) => a.name),
    rounds,
  )) {
    console.log(`| ${s.name} | ${f1(s.cpuMicrosPerReq)} | ${s.cpuVsFirst.toFixed(3)} | ${s.cpuPerRound.map(f1).join(' ')} | ${Math.round(s.reqPerSec)} | ${s.p99Ms.toFixed(2)} | ${s.failures} |`);
  }
}

try {
  await main();
} finally {
  await killAll();
}
