/**
 * What observability costs a `tools/call` (issue 13): the access log at
 * `log.accessSampleRatio` 0, 0.01 and 1, tracing off vs on (exported to a
 * local OTLP/HTTP sink that discards), and — with `--compare <cli.js>` —
 * another build with everything off (e.g. the main branch before this work),
 * as same-run ratios of the gateway process's CPU per call.
 *
 * Every variant is its own gateway process (CPU read from /proc, so the load
 * generator and the echo Tool Service in this process do not count); the
 * variants are measured in turns, round after round, and the report is the
 * median per variant over rounds and its ratio to the baseline measured in
 * the same round. Log lines go to the gateway's log file (a real file write,
 * as in production with a log collector reading it).
 *
 * Usage: node dist/bench/observability-cost.js [--rounds 5] [--seconds 4]
 *   [--connections 16] [--compare /path/to/other/dist/src/main/cli.js]
 *   [--only access|tracing|compare|admin] (the baseline always runs)
 *
 * `admin`: probes (`/health/ready` every 100 ms, `/metrics` every second,
 * each on a fresh connection as a kubelet and a scraper do) on the traffic
 * port (no admin listener) vs the same probes on the admin listener; the
 * CPU per call includes the probes' own cost in both.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, killAll, measure, median, scratch, spawnServer, type SpawnedServer } from './harness.js';
import { echoCallBodies } from './suite/workloads.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '16' },
    compare: { type: 'string' },
    only: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const CLI = fileURLToPath(new URL('../src/main/cli.js', import.meta.url));

interface Variant {
  name: string;
  cli: string;
  config: Record<string, unknown>;
  /** Probe the health endpoints during the load: on the traffic port, or on an admin port of this number offset. */
  probes?: 'traffic' | 'admin';
}

/** Probes like a kubelet and a Prometheus scraper (fresh connection each), until `stop()`. */
function probeLoop(port: number): { stop(): Promise<void> } {
  let stopped = false;
  const get = (path: string): Promise<void> =>
    fetch(`http://127.0.0.1:${port}${path}`, { headers: { connection: 'close' } }).then(
      (r) => r.arrayBuffer().then(() => undefined),
      () => undefined,
    );
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      await get('/health/ready');
      if (i % 10 === 0) await get('/metrics');
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** An OTLP/HTTP sink: accepts every export and discards it (the exporter's cost stays in the gateway). */
async function otlpSink(): Promise<{ url: string; server: Server; spans: () => number }> {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/v1/traces`, server, spans: () => bytes };
}

async function main(): Promise<void> {
  const echoPort = await freePort();
  const echo = await spawnServer(process.execPath, [fileURLToPath(new URL('./echo-tool-service.js', import.meta.url)), '--port', String(echoPort), '--tools', '50'], /^listening (\d+)$/m, {
    label: 'echo',
  });
  const sink = await otlpSink();
  const call = echoCallBodies();
  const base = (log: Record<string, unknown>, tracing: Record<string, unknown> | null): Record<string, unknown> => ({
    server: { host: '127.0.0.1' },
    workers: { shards: 1, acceptors: 1 },
    catalog: { static: { routes: { bench: [{ id: 'echo', baseUrl: `http://127.0.0.1:${echoPort}` }] } } },
    log: { level: 'info', ...log },
    ...(tracing === null ? {} : { tracing }),
  });
  const only = values.only;
  const variants: Variant[] = [{ name: 'access 0, tracing off (baseline)', cli: CLI, config: base({ accessSampleRatio: 0 }, null) }];
  if (only === undefined || only === 'access') {
    variants.push({ name: 'access 0.01', cli: CLI, config: base({ accessSampleRatio: 0.01 }, null) }, { name: 'access 1', cli: CLI, config: base({ accessSampleRatio: 1 }, null) });
  }
  if (only === undefined || only === 'tracing') {
    variants.push(
      { name: 'tracing on, sampled 1', cli: CLI, config: base({ accessSampleRatio: 0 }, { otlp: { endpoint: sink.url }, sampleRatio: 1 }) },
      { name: 'tracing on, sampled 0', cli: CLI, config: base({ accessSampleRatio: 0 }, { otlp: { endpoint: sink.url }, sampleRatio: 0 }) },
    );
  }
  if (only === 'admin') {
    variants.splice(0, 1, { name: 'probes on the traffic port (baseline)', cli: CLI, config: base({ accessSampleRatio: 0 }, null), probes: 'traffic' });
    variants.push({ name: 'probes on the admin listener', cli: CLI, config: base({ accessSampleRatio: 0 }, null), probes: 'admin' });
  }
  if (values.compare !== undefined && (only === undefined || only === 'compare')) {
    // The other build may not know the new keys: only what it shares with this one.
    variants.push({ name: `other build (${values.compare})`, cli: values.compare, config: { ...base({}, null), log: { level: 'info' } } });
  }

  const servers: Array<{ v: Variant; server: SpawnedServer; port: number; probePort: number | null }> = [];
  for (const v of variants) {
    const port = await freePort();
    const adminPort = v.probes === 'admin' ? await freePort() : null;
    const file = join(scratch(), `${servers.length}.json`);
    writeFileSync(file, JSON.stringify({ ...v.config, server: { ...(v.config['server'] as object), port, ...(adminPort === null ? {} : { admin: { port: adminPort } }) } }));
    const server = await spawnServer(process.execPath, [v.cli, '--config', file], `http://127.0.0.1:${adminPort ?? port}/health/ready`, { label: `gw${servers.length}`, timeoutMs: 30_000 });
    servers.push({ v, server, port, probePort: v.probes === undefined ? null : (adminPort ?? port) });
  }

  const perCall = new Map<string, number[]>();
  const ratios = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    const row = new Map<string, number>();
    for (const { v, server, port, probePort } of servers) {
      const probes = probePort === null ? null : probeLoop(probePort);
      const r = await measure(
        server.pid,
        {
          url: `http://127.0.0.1:${port}/mcp/bench`,
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: call.mcp,
          connections: CONNECTIONS,
          durationSec: SECONDS,
        },
        { warmupSec: round === 0 ? 2 : 0 },
      );
      await probes?.stop();
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${v.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      row.set(v.name, r.cpuMicrosPerReq);
      perCall.set(v.name, [...(perCall.get(v.name) ?? []), r.cpuMicrosPerReq]);
    }
    const baseline = row.get(variants[0]?.name ?? '') ?? Number.NaN;
    for (const [name, us] of row) ratios.set(name, [...(ratios.get(name) ?? []), us / baseline]);
    process.stdout.write(`round ${round + 1}/${ROUNDS}: ${[...row].map(([n, us]) => `${n} ${us.toFixed(1)} µs`).join(' | ')}\n`);
  }
  process.stdout.write(`\nCPU per tools/call of the gateway process (all threads), median of ${ROUNDS} rounds; ratio = median of same-round ratios to the baseline\n`);
  for (const { v } of servers) {
    process.stdout.write(
      `  ${v.name.padEnd(40)} ${median(perCall.get(v.name) ?? [])
        .toFixed(1)
        .padStart(7)} µs   × ${median(ratios.get(v.name) ?? []).toFixed(3)}\n`,
    );
  }
  process.stdout.write(`  (OTLP sink received ${sink.spans()} bytes)\n`);
  sink.server.close();
  await echo.kill();
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void killAll());
