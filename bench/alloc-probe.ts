/**
 * Bytes allocated per request, per thread: preloaded into every thread of a
 * gateway (`NODE_OPTIONS=--import=…/dist/bench/alloc-probe.js`, like
 * thread-probe.ts), it runs V8's sampling heap profiler *including the
 * objects later collected* — garbage is what costs scavenges — over a window
 * of a steady load, and writes one `.heapprofile` per thread (open it in
 * Chrome DevTools, or let `node dist/bench/alloc-probe.js --report DIR`
 * print the top allocating functions per request).
 *
 * Env: `ALLOC_PROBE_DIR` (output folder; unset: the probe does nothing),
 * `ALLOC_PROBE_START_MS` (default 5000, after the thread starts),
 * `ALLOC_PROBE_FOR_MS` (default 5000), `ALLOC_PROBE_METRICS_URL` (the
 * gateway's /metrics: the main thread reads `mcp_gateway_requests_total`
 * at both ends of the window and writes the difference to `requests`).
 *
 * Example (a gateway on port 8080 under a steady tools/call load):
 *   ALLOC_PROBE_DIR=/tmp/alloc ALLOC_PROBE_METRICS_URL=http://127.0.0.1:8080/metrics \
 *   NODE_OPTIONS=--import=./dist/bench/alloc-probe.js node dist/src/main/cli.js --config gw.yaml
 *   node dist/bench/alloc-probe.js --report /tmp/alloc
 *
 * Cost while sampling: large (every 1 KiB allocated is a stack walk); the
 * window's own throughput is not a measurement, only bytes ÷ requests is.
 */
import { Session } from 'node:inspector';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as threads from 'node:worker_threads';

const SAMPLING_INTERVAL_BYTES = 1024;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

async function requestsServed(url: string): Promise<number> {
  try {
    const text = await (await fetch(url, { signal: AbortSignal.timeout(3000) })).text();
    let n = 0;
    for (const line of text.split('\n')) if (line.startsWith('mcp_gateway_requests_total{')) n += Number(line.slice(line.lastIndexOf(' ') + 1));
    return n;
  } catch {
    return Number.NaN;
  }
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result as T))));
}

function probe(dir: string): void {
  const startMs = Number(process.env['ALLOC_PROBE_START_MS'] ?? 5000);
  const forMs = Number(process.env['ALLOC_PROBE_FOR_MS'] ?? 5000);
  const metricsUrl = process.env['ALLOC_PROBE_METRICS_URL'];
  const role = threads.isMainThread ? 'main' : (process.argv[1] ?? 'worker').replace(/^.*\//, '').replace(/\.js$/, '');
  const session = new Session();
  session.connect();
  const run = async (): Promise<void> => {
    const counting = threads.isMainThread && metricsUrl !== undefined;
    const before = counting ? await requestsServed(metricsUrl) : 0;
    await post(session, 'HeapProfiler.startSampling', { samplingInterval: SAMPLING_INTERVAL_BYTES, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    await new Promise((r) => setTimeout(r, forMs).unref());
    const { profile } = await post<{ profile: unknown }>(session, 'HeapProfiler.stopSampling');
    writeFileSync(join(dir, `${role}-${threads.threadId}.heapprofile`), JSON.stringify(profile));
    if (counting) writeFileSync(join(dir, 'requests'), String((await requestsServed(metricsUrl)) - before));
  };
  setTimeout(() => void run().catch(() => undefined), startMs).unref();
}

/** `--report DIR`: total and top functions per request of every profile in DIR. */
function report(dir: string, top = 15): void {
  let requests = Number.NaN;
  try {
    requests = Number(readFileSync(join(dir, 'requests'), 'utf8'));
  } catch {
    // No request count: bytes only.
  }
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.heapprofile'))) {
    const head = (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { head: ProfileNode }).head;
    const self = new Map<string, number>();
    let total = 0;
    const walk = (n: ProfileNode): void => {
      const f = n.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules\/)?/, '')}:${f.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + n.selfSize);
      total += n.selfSize;
      for (const c of n.children) walk(c);
    };
    walk(head);
    const per = (bytes: number): string => (Number.isFinite(requests) && requests > 0 ? `${(bytes / requests).toFixed(0)} B/request` : `${(bytes / 1024).toFixed(0)} KiB`);
    console.log(`${file}: ${(total / 1048576).toFixed(1)} MiB sampled = ${per(total)}${Number.isFinite(requests) ? ` (${requests} requests)` : ''}`);
    for (const [key, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${per(bytes).padStart(14)}  ${key}`);
  }
}

const reportAt = process.argv.indexOf('--report');
if (threads.isMainThread && reportAt >= 0 && process.argv[1]?.endsWith('alloc-probe.js')) {
  report(process.argv[reportAt + 1] ?? '.');
} else {
  const dir = process.env['ALLOC_PROBE_DIR'];
  if (dir !== undefined && dir !== '') probe(dir);
}
