/**
 * Catalog build cost at scale: one refresh cycle of N routes × T tools
 * (default 1,000 × 50) built from manifests fetched over HTTP from the bench
 * echo Tool Service (its own process; every route names a distinct Tool
 * Service id, so every manifest is fetched, validated, merged and encoded).
 * Runs the refresh worker's own `Refresher` in this process and reports the
 * cycle's wall time, CPU time, the bytes of the encoded snapshots, and the
 * heap growth that holding them costs.
 *
 *   npm run build && node --expose-gc dist/bench/catalog-build.js [--routes 1000] [--tools 50]
 */
import { parseArgs } from 'node:util';
import { validateConfig } from '../src/shared/config/load.js';
import type { RefreshEvent } from '../src/shared/threads/messages.js';
import { Refresher } from '../src/workers/refresh/refresher.js';
import { freePort, killAll, spawnServer } from './harness.js';

const { values } = parseArgs({
  options: { routes: { type: 'string', default: '1000' }, tools: { type: 'string', default: '50' }, concurrency: { type: 'string', default: '16' } },
});
const ROUTES = Number(values.routes);
const TOOLS = Number(values.tools);

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function main(): Promise<void> {
  const port = await freePort();
  await spawnServer('node', [new URL('./echo-tool-service.js', import.meta.url).pathname, '--port', String(port), '--tools', String(TOOLS)], /listening/);
  const routes: Record<string, Array<{ id: string; baseUrl: string }>> = {};
  for (let i = 0; i < ROUTES; i++) routes[`route-${i}`] = [{ id: `svc-${i}`, baseUrl: `http://127.0.0.1:${port}` }];
  const config = validateConfig({
    catalog: { source: 'static', static: { routes }, maxToolsPerRoute: Math.max(50, TOOLS), manifestConcurrency: Number(values.concurrency), manifestTimeoutMs: 30_000 },
    log: { level: 'silent' },
  });
  const snapshots: SharedArrayBuffer[] = [];
  let failed = 0;
  const emit = (e: RefreshEvent): void => {
    if (e.type === 'route-snapshot') snapshots.push(e.snapshot);
    if (e.type === 'route-failed') failed++;
  };
  gc();
  const heapBefore = process.memoryUsage();
  const refresher = new Refresher({ config, emit, portal: null, redis: null });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await refresher.cycle();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  gc();
  const heapAfter = process.memoryUsage();
  const snapshotBytes = snapshots.reduce((n, s) => n + s.byteLength, 0);
  // An unchanged second cycle: fetch + validate + merge + hash, nothing encoded or published.
  const t1 = performance.now();
  snapshots.length = 0;
  await refresher.cycle();
  const unchangedMs = performance.now() - t1;
  const mib = (b: number): string => (b / 1024 / 1024).toFixed(1);
  console.log(`| routes × tools | first cycle wall | CPU | per route | snapshots | external+arrayBuffers growth | heap growth | unchanged cycle | failed |`);
  console.log(`|---|---|---|---|---|---|---|---|---|`);
  console.log(
    `| ${ROUTES} × ${TOOLS} | ${(wallMs / 1000).toFixed(2)} s | ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s | ${(wallMs / ROUTES).toFixed(2)} ms | ${mib(snapshotBytes)} MiB (${(snapshotBytes / ROUTES / 1024).toFixed(1)} KiB/route) | ${mib(heapAfter.external + heapAfter.arrayBuffers - heapBefore.external - heapBefore.arrayBuffers)} MiB | ${mib(heapAfter.heapUsed - heapBefore.heapUsed)} MiB | ${(unchangedMs / 1000).toFixed(2)} s | ${failed} |`,
  );
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => void killAll());
