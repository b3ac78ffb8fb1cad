/**
 * Same-run comparison of upstream HTTP clients for the shard's `tools/call`
 * (ADR-0005), against the bench echo Tool Service in its own process:
 *
 *   tool client rows — the whole Tool Service call as the shard makes it
 *     (request bytes, response, JSON parse, CallToolResult check):
 *     undici `Pool.request()` + stream, undici `Pool.dispatch()` (the shard's
 *     client before the lean one, frozen in bench/undici-tool-client.ts), and
 *     the lean HTTP/1.1 `ToolServiceClient` (src/workers/shard/upstream.ts);
 *   raw client rows — the HTTP exchange alone, body bytes counted and
 *     dropped: undici `dispatch`, and the lean client reading into the shared
 *     `onread` buffer or through `'data'` events.
 *
 * CPU µs per call of this process: all threads (`process.cpuUsage()`) and
 * split into the main thread and the others (GC helpers, libuv) from
 * /proc/self/task/<tid>/stat (10 ms ticks: keep rounds ≥ 1 s). Calls/s and
 * p99 latency per round. Rounds are interleaved (the order rotates every
 * repetition), so a busy machine slows every variant alike; medians and
 * ratios to the lean client are reported.
 *
 *   npm run build && node dist/bench/upstream-client.js
 *
 * Knobs: BENCH_CALLS (20000 per round), BENCH_CONCURRENCY (50), BENCH_REPEATS (5),
 * BENCH_ONLY (comma-separated variant keys).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Pool, type Dispatcher } from 'undici';
import { Http1Agent } from '../src/workers/shard/http1/agent.js';
import type { Http1Failure } from '../src/workers/shard/http1/errors.js';
import { Http1Request, type ResponseHandler } from '../src/workers/shard/http1/request.js';
import type { CatalogTool } from '../src/shared/catalog/types.js';
import { ToolServiceClient, type UpstreamCall, type UpstreamResult } from '../src/workers/shard/upstream.js';
import { generateManifest, sampleArguments } from './catalog.js';
import { freePort, killAll, median, spawnServer } from './harness.js';
import { UndiciToolServiceClient } from './undici-tool-client.js';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 20_000);
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 50);
const REPEATS = Number(process.env['BENCH_REPEATS'] ?? 5);
const ONLY = process.env['BENCH_ONLY']?.split(',');

/** Starts call `slot`; calls `done(slot)` when it ended (never synchronously). */
type Issue = (slot: number, done: (slot: number) => void) => void;

interface Variant {
  key: string;
  label: string;
  issue: Issue;
  close(): Promise<void>;
}

interface Round {
  callsPerSec: number;
  cpuUs: number;
  mainUs: number;
  otherUs: number;
  p99Ms: number;
}

const CLK_TCK = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU µs of this process's main thread and of all its other threads, from /proc. */
function threadCpu(): { main: number; other: number } {
  let main = 0;
  let other = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread exited meanwhile
    }
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const us = ((Number(rest[11]) + Number(rest[12])) * 1_000_000) / CLK_TCK;
    if (Number(tid) === process.pid) main += us;
    else other += us;
  }
  return { main, other };
}

/** One round: CALLS calls, CONCURRENCY in flight. */
function round(issue: Issue): Promise<Round> {
  return new Promise((resolve) => {
    const latencies = new Float64Array(CALLS);
    const startedAt = new Float64Array(CONCURRENCY);
    let issued = 0;
    let completed = 0;
    const cpu0 = process.cpuUsage();
    const threads0 = threadCpu();
    const t0 = performance.now();
    const next = (slot: number): void => {
      issued++;
      startedAt[slot] = performance.now();
      issue(slot, done);
    };
    const done = (slot: number): void => {
      latencies[completed++] = performance.now() - (startedAt[slot] as number);
      if (issued < CALLS) next(slot);
      else if (completed === CALLS) {
        const elapsed = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        const threads = threadCpu();
        latencies.sort();
        resolve({
          callsPerSec: (CALLS / elapsed) * 1000,
          cpuUs: (cpu.user + cpu.system) / CALLS,
          mainUs: (threads.main - threads0.main) / CALLS,
          otherUs: (threads.other - threads0.other) / CALLS,
          p99Ms: latencies[Math.ceil(0.99 * CALLS) - 1] as number,
        });
      }
    };
    for (let slot = 0; slot < Math.min(CONCURRENCY, CALLS); slot++) next(slot);
  });
}

async function main(): Promise<void> {
  const port = await freePort();
  await spawnServer('node', [new URL('./echo-tool-service.js', import.meta.url).pathname, '--port', String(port), '--tools', '50'], /listening/);
  const generated = generateManifest(50, { serviceId: 'echo' }).tools[0] as unknown as { name: string; inputSchema: Record<string, unknown> };
  const origin = `http://127.0.0.1:${port}`;
  const path = `/tools/${generated.name}`;
  const argumentsJson = JSON.stringify(sampleArguments(generated.inputSchema));
  const body = `{"name":"${generated.name}","version":"1.0.0","arguments":${argumentsJson}}`;
  const headers = { 'content-type': 'application/json', accept: 'application/json, application/x-ndjson', 'x-request-id': 'bench', 'x-mcp-route': 'bench' };
  const tool: CatalogTool = {
    name: generated.name,
    version: '1.0.0',
    active: true,
    serviceId: 'echo',
    inputSchema: generated.inputSchema,
    timeoutMs: 30_000,
    executionUrl: `${origin}${path}`,
  };
  const requestBytes = Buffer.from(
    `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, application/x-ndjson\r\n` +
      `x-request-id: bench\r\nx-mcp-route: bench\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const variants: Variant[] = [];

  {
    const pool = new Pool(origin, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 30_000 });
    variants.push({
      key: 'undici-request',
      label: 'tool client: undici Pool.request() + stream',
      issue: (slot, done) => {
        void (async () => {
          const res = await pool.request({ path, method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
          const chunks: Buffer[] = [];
          for await (const c of res.body) chunks.push(c as Buffer);
          JSON.parse(Buffer.concat(chunks).toString('utf8'));
          done(slot);
        })();
      },
      close: () => pool.close(),
    });
  }
  {
    const client = new UndiciToolServiceClient({ connectionsPerService: CONCURRENCY, maxResponseBytes: 16 * 1024 * 1024 });
    variants.push({
      key: 'undici-dispatch',
      label: 'tool client: undici Pool.dispatch() (shard before)',
      issue: (slot, done) => void client.call({ tool, argumentsJson, routeKey: 'bench', ctx: { requestId: 'bench', sessionId: '', traceparent: '' } }).then(() => done(slot)),
      close: () => client.close(),
    });
  }
  {
    // Idle sockets kept as long as undici's (30 s): the other variants' rounds must not get them reaped.
    const client = new ToolServiceClient({ connectionsPerService: CONCURRENCY, maxResponseBytes: 16 * 1024 * 1024, keepAliveTimeoutMs: 30_000 });
    // Pooled call objects, as the shard keeps them.
    const calls = Array.from({ length: CONCURRENCY }, (_, slot): UpstreamCall & { done: (slot: number) => void } => ({
      tool,
      argumentsJson,
      routeKey: 'bench',
      requestId: 'bench',
      sessionId: '',
      traceparent: '',
      tracestate: '',
      baggage: '',
      clientCapabilitiesJson: '',
      inputResponsesJson: '',
      requestStateJson: '',
      onFrame: null,
      onStreamStart: null,
      done: () => {},
      onDone(result: UpstreamResult) {
        if (result.cause !== 'ok') throw new Error(`bench call failed: ${result.json}`);
        this.done(slot);
      },
    }));
    variants.push({
      key: 'lean',
      label: 'tool client: lean HTTP/1.1 ToolServiceClient (shard now)',
      issue: (slot, done) => {
        const call = calls[slot] as (typeof calls)[number];
        call.done = done;
        client.call(call);
      },
      close: () => client.close(),
    });
  }
  {
    const pool = new Pool(origin, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 30_000 });
    class RawUndiciHandler implements Dispatcher.DispatchHandler {
      bytes = 0;
      constructor(
        private readonly slot: number,
        public done: (slot: number) => void,
      ) {}
      // undici tells the handler API generations apart by these two.
      onRequestStart(): void {}
      onResponseStart(): void {}
      onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
        this.bytes += chunk.length;
      }
      onResponseEnd(): void {
        this.done(this.slot);
      }
      onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
        throw err;
      }
    }
    const handlers = Array.from({ length: CONCURRENCY }, (_, slot) => new RawUndiciHandler(slot, () => {}));
    variants.push({
      key: 'raw-undici',
      label: 'raw: undici dispatch, minimal handler',
      issue: (slot, done) => {
        const h = handlers[slot] as RawUndiciHandler;
        h.done = done;
        pool.dispatch({ path, method: 'POST', headers, body }, h);
      },
      close: () => pool.close(),
    });
  }
  for (const [key, label, readBufferBytes] of [
    ['raw-lean-onread', "raw: lean client, shared 'onread' buffer", 64 * 1024],
    ['raw-lean-data', "raw: lean client, 'data' events", 0],
  ] as const) {
    const agent = new Http1Agent({ connections: CONCURRENCY, readBufferBytes, idleTimeoutMs: 30_000 });
    const pool = agent.pool(origin);
    class RawLeanHandler implements ResponseHandler {
      readonly slot: Http1Request = new Http1Request(this);
      bytes = 0;
      constructor(
        private readonly index: number,
        public done: (slot: number) => void,
      ) {}
      onHead(): void {}
      onBody(_chunk: Buffer, start: number, end: number): void {
        this.bytes += end - start;
      }
      onEnd(): void {
        this.done(this.index);
      }
      onError(failure: Http1Failure): void {
        throw new Error(`${failure.code}: ${failure.message}`);
      }
    }
    const handlers = Array.from({ length: CONCURRENCY }, (_, slot) => new RawLeanHandler(slot, () => {}));
    variants.push({
      key,
      label,
      issue: (slot, done) => {
        const h = handlers[slot] as RawLeanHandler;
        h.done = done;
        pool.request(h.slot, requestBytes, 30_000);
      },
      close: () => agent.close(),
    });
  }

  const chosen = variants.filter((v) => ONLY === undefined || ONLY.includes(v.key));
  console.log(`${CALLS} calls per round, ${CONCURRENCY} concurrent, ${REPEATS} interleaved rounds (order rotates), node ${process.version}\n`);
  // Warm-up: connections open, code optimised.
  for (const v of chosen) await round(v.issue);
  const results = new Map<string, Round[]>(chosen.map((v) => [v.key, []]));
  for (let r = 0; r < REPEATS; r++) {
    for (let i = 0; i < chosen.length; i++) {
      const v = chosen[(i + r) % chosen.length] as Variant;
      const res = await round(v.issue);
      results.get(v.key)?.push(res);
      console.log(`round ${r + 1} ${v.key}: ${Math.round(res.callsPerSec)} calls/s, ${res.cpuUs.toFixed(1)} µs/call, p99 ${res.p99Ms.toFixed(2)} ms`);
    }
  }
  const med = (key: string, f: (r: Round) => number): number => median((results.get(key) ?? []).map(f));
  // Tool client rows are compared with the lean ToolServiceClient, raw rows with the lean client's onread row.
  const baseOf = (key: string): string => (key.startsWith('raw-') ? 'raw-lean-onread' : 'lean');
  console.log(`\n| variant | calls/s | CPU µs/call (all threads) | main thread | other threads | p99 ms | CPU ÷ lean (same group) |`);
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const v of chosen) {
    console.log(
      `| ${v.label} | ${Math.round(med(v.key, (r) => r.callsPerSec))} | ${med(v.key, (r) => r.cpuUs).toFixed(1)} | ${med(v.key, (r) => r.mainUs).toFixed(1)} | ` +
        `${med(v.key, (r) => r.otherUs).toFixed(1)} | ${med(v.key, (r) => r.p99Ms).toFixed(2)} | ${(med(v.key, (r) => r.cpuUs) / med(baseOf(v.key), (r) => r.cpuUs)).toFixed(2)}× |`,
    );
  }
  for (const v of chosen) await v.close();
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => void killAll());
