/**
 * What an HTTP client costs a worker thread in RSS (ADR-0020): one fresh
 * process per case starts one worker with the gateway's young-generation
 * limit (`workers.maxYoungGenerationSizeMb` default), the worker loads the
 * client and makes `--requests` GETs to a local server, and the process's
 * RSS growth from before the worker started is reported. Cases: `empty` (a
 * worker that loads nothing), `undici-import` (the vendor bundle, no
 * request), `undici` (`request()`), `node-http` (`http.get` on a keep-alive
 * agent, as src/workers/refresh/http-get.ts does).
 *
 * Usage: `node dist/bench/worker-client-rss.js [--rounds N] [--requests N]`.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { DEFAULTS } from '../src/shared/config/defaults.js';

const CASES = ['empty', 'undici-import', 'undici', 'node-http'] as const;
type Case = (typeof CASES)[number];
const UNDICI = fileURLToPath(new URL('../src/shared/vendor/undici.js', import.meta.url));
const CASE_TIMEOUT_MS = 30_000;
const run = promisify(execFile);

/** The worker's body per case (`U` is the URL, `N` the request count). */
function workerBody(c: Case): string {
  switch (c) {
    case 'empty':
      return '';
    case 'undici-import':
      return `await import(${JSON.stringify(UNDICI)});`;
    case 'undici':
      return `const { request } = await import(${JSON.stringify(UNDICI)}); for (let i = 0; i < N; i++) await (await request(U)).body.text();`;
    case 'node-http':
      return `const http = require('node:http'); const agent = new http.Agent({ keepAlive: true });
        for (let i = 0; i < N; i++) await new Promise((ok, ko) => http.get(U, { agent }, (r) => { r.resume(); r.on('end', ok); }).on('error', ko));`;
  }
}

const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? Number.NaN) / 1024;

/** Child mode: one case in this process; prints the RSS growth in MB. */
async function child(c: Case, url: string, requests: number): Promise<void> {
  const before = rssMb();
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads'); const U = ${JSON.stringify(url)}; const N = ${requests};
     (async () => { ${workerBody(c)} parentPort.postMessage('done'); parentPort.on('message', () => {}); })();`,
    { eval: true, resourceLimits: { maxYoungGenerationSizeMb: DEFAULTS.workers.maxYoungGenerationSizeMb } },
  );
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  // Let the worker's last allocations settle before reading.
  await new Promise((r) => setTimeout(r, 300));
  console.log((rssMb() - before).toFixed(1));
  await worker.terminate();
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rounds: { type: 'string', default: '2' }, requests: { type: 'string', default: '50' }, case: { type: 'string' }, url: { type: 'string' } } });
  const requests = Number(values.requests);
  if (values.case !== undefined) {
    await child(values.case as Case, values.url ?? '', requests);
    return;
  }
  const server = createServer((_req, res) => res.end('{"tools":[]}'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/manifest`;
  const script = fileURLToPath(import.meta.url);
  console.log(`RSS growth of a process when one worker loads a client and makes ${requests} GETs (MB; ${values.rounds} rounds):`);
  for (const c of CASES) {
    const runs: string[] = [];
    // Asynchronous: this process's server answers the child's GETs meanwhile.
    for (let r = 0; r < Number(values.rounds); r++) {
      const { stdout } = await run(process.execPath, [script, '--case', c, '--url', url, '--requests', String(requests)], { timeout: CASE_TIMEOUT_MS });
      runs.push(stdout.trim());
    }
    console.log(`${c.padEnd(14)} ${runs.join('  ')}`);
  }
  server.close();
}

await main();
