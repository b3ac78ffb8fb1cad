/**
 * Same-run comparison of the two undici APIs for the shard's upstream call:
 * `Pool.request()` (a Readable body, async iteration) versus `Pool.dispatch()`
 * with a handler (what `src/workers/shard/upstream.ts` uses). CPU µs per call
 * of this process, against the bench echo Tool Service in its own process.
 *
 *   npm run build && node dist/bench/upstream-client.js
 *
 * Knobs: BENCH_CALLS (20000 per round), BENCH_CONCURRENCY (50), BENCH_REPEATS (3).
 */
import { Pool } from 'undici';
import { ToolServiceClient } from '../src/workers/shard/upstream.js';
import { freePort, killAll, spawnServer } from './harness.js';
import { generateManifest, sampleArguments } from './catalog.js';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 20_000);
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 50);
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 3);

async function run(label: string, fn: () => Promise<unknown>): Promise<number> {
  let issued = 0;
  const start = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (issued++ < CALLS) await fn();
    }),
  );
  const cpu = process.cpuUsage(start);
  const perCall = (cpu.user + cpu.system) / CALLS;
  console.log(`| ${label} | ${Math.round((CALLS / (performance.now() - t0)) * 1000)} | ${perCall.toFixed(1)} |`);
  return perCall;
}

async function main(): Promise<void> {
  const port = await freePort();
  await spawnServer('node', [new URL('./echo-tool-service.js', import.meta.url).pathname, '--port', String(port), '--tools', '50'], /listening/);
  const tool = generateManifest(50, { serviceId: 'echo' }).tools[0] as unknown as { name: string; inputSchema: Record<string, unknown> };
  const origin = `http://127.0.0.1:${port}`;
  const argumentsJson = JSON.stringify(sampleArguments(tool.inputSchema));
  const body = `{"name":"${tool.name}","version":"1.0.0","arguments":${argumentsJson}}`;
  const headers = { 'content-type': 'application/json', accept: 'application/json, application/x-ndjson', 'x-request-id': 'bench', 'x-mcp-route': 'bench' };
  const pool = new Pool(origin, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 30_000 });
  const client = new ToolServiceClient({ connectionsPerService: CONCURRENCY, maxResponseBytes: 16 * 1024 * 1024 });
  const catalogTool = {
    name: tool.name,
    version: '1.0.0',
    active: true,
    serviceId: 'echo',
    inputSchema: tool.inputSchema,
    timeoutMs: 30_000,
    executionUrl: `${origin}/tools/${tool.name}`,
  };
  const viaRequest = async (): Promise<string> => {
    const res = await pool.request({ path: `/tools/${tool.name}`, method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
    const chunks: Buffer[] = [];
    for await (const c of res.body) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as string;
  };
  const viaClient = (): Promise<unknown> =>
    new Promise((resolve) =>
      client.call({ tool: catalogTool, argumentsJson, routeKey: 'bench', requestId: 'bench', sessionId: '', traceparent: '', onFrame: null, onStreamStart: null, onDone: resolve }),
    );
  console.log(`${CALLS} calls per round, ${CONCURRENCY} concurrent, ${REPEATS} interleaved rounds\n`);
  console.log('| variant | calls/s | CPU µs/call |\n|---|---|---|');
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    a.push(await run('Pool.request() + stream', viaRequest));
    b.push(await run('Pool.dispatch() handler (ToolServiceClient)', viaClient));
  }
  const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
  console.log(`\nmedian CPU µs/call: request ${median(a).toFixed(1)}, dispatch ${median(b).toFixed(1)} (${(median(a) / median(b)).toFixed(2)}×)`);
  await pool.close();
  await client.close();
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => void killAll());
