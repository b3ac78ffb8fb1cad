/**
 * Reusable benchmark machinery: spawn servers as separate processes, wait for
 * readiness, drive load with autocannon and account the server's CPU time.
 *
 * Why per-process CPU from /proc: on a shared 2-core machine req/s is noisy
 * and often bounded by the load generator (autocannon runs in this process);
 * CPU time per request of the server process is the steadier cost measure.
 * Every wait here is bounded in time, and every spawned process is killed on
 * exit, including on errors and signals.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

/** A server started by {@link spawnServer}. */
export interface SpawnedServer {
  /** Process id of the server itself (spawned directly, no shell in between). */
  pid: number;
  /** First match of the ready line, when readiness was a RegExp. */
  readyMatch: RegExpMatchArray | null;
  /** File receiving the server's stdout and stderr. */
  logFile: string;
  /** SIGTERM, then SIGKILL after a grace period; resolves once it exited. */
  kill(): Promise<void>;
  /** Last lines of the server's output, for error messages. */
  tail(lines?: number): string;
}

/** Options of {@link spawnServer}. */
export interface SpawnOptions {
  /** Upper bound on the wait for readiness (default 15 000 ms). */
  timeoutMs?: number;
  /** Extra environment variables for the server. */
  env?: Record<string, string>;
  /** Short name used in messages and the log file name. */
  label?: string;
  /** A line of output that means the server will never be ready (checked while waiting). */
  failOn?: RegExp;
}

/** One request of a {@link LoadOptions.requests} sequence. */
export interface LoadRequest {
  /** Path (and query) on the origin of {@link LoadOptions.url}. */
  path: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
}

/** Options of {@link runLoad}. */
export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /**
   * A sequence of requests each connection sends in order, round and round
   * (autocannon `requests`); when set, `url` gives only the origin.
   */
  requests?: LoadRequest[];
  connections: number;
  durationSec: number;
}

/** Result of {@link runLoad}. */
export interface LoadResult {
  /** Responses of any status per second of actual run time. */
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  /** Responses per HTTP status code. */
  statusCounts: Record<string, number>;
  /** Connection errors and timeouts reported by autocannon. */
  errors: number;
  /** Responses received (any status). */
  total: number;
  /** Actual run time in seconds. */
  durationSec: number;
}

/** Result of {@link measure}: load figures plus the server's CPU cost. */
export interface MeasureResult extends LoadResult {
  /** CPU time (user + system, all threads) the server spent during the load. */
  cpuMicros: number;
  cpuMicrosPerReq: number;
  /** Peak resident set size of the server so far (VmHWM), KiB; NaN if unknown. */
  peakRssKb: number;
}

// ---------------------------------------------------------------------------
// Process bookkeeping: every child is tracked until it exits, so that an
// error, a signal or a normal exit of the bench never leaves servers behind.

const live = new Map<number, ChildProcess>();
let handlersInstalled = false;
let scratchDir: string | undefined;

/** Sends `signal` to the child's process group (it leads its own group). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: already gone.
  }
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  // 'exit' handlers must be synchronous: SIGKILL is the only sure option.
  process.on('exit', () => {
    for (const pid of live.keys()) signalGroup(pid, 'SIGKILL');
    if (scratchDir !== undefined && process.env['BENCH_KEEP_TMP'] !== '1') rmSync(scratchDir, { recursive: true, force: true });
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      void killAll().finally(() => process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1)));
    });
  }
}

/**
 * A scratch directory for this bench run (server logs, generated configs);
 * removed at exit unless `BENCH_KEEP_TMP=1`.
 */
export function scratch(): string {
  installExitHandlers();
  scratchDir ??= mkdtempSync(join(tmpdir(), 'mcp-bench-'));
  return scratchDir;
}

/** Kills every server spawned by this process that is still running. */
export async function killAll(): Promise<void> {
  await Promise.all([...live.keys()].map((pid) => killPid(pid)));
}

async function killPid(pid: number, graceMs = 3000): Promise<void> {
  const child = live.get(pid);
  if (child === undefined) return;
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  signalGroup(pid, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), graceMs);
  });
  if ((await Promise.race([exited, graceOver])) === 'timeout') {
    signalGroup(pid, 'SIGKILL');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
  }
  clearTimeout(timer);
  // The leader may exit gracefully while helpers it forked linger.
  signalGroup(pid, 'SIGKILL');
  live.delete(pid);
}

// ---------------------------------------------------------------------------

/**
 * Returns a TCP port that was free on 127.0.0.1 a moment ago (the OS picks
 * it). Another process could take it before the caller binds: acceptable for
 * a bench on a loopback interface.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => {
        if (addr !== null && typeof addr === 'object') resolve(addr.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `cmd args` as its own process (and process group) and waits until it
 * is ready: a line of its stdout/stderr matches `ready` (a RegExp), or an HTTP
 * GET of `ready` (a URL) answers 200. Output goes to a log file rather than a
 * pipe, so a chatty server can never block on a full pipe and this process
 * spends no CPU reading it during load. Rejects — after killing the process —
 * if it exits early or is not ready within `timeoutMs`.
 */
export async function spawnServer(cmd: string, args: string[], ready: RegExp | string | URL, opts: SpawnOptions = {}): Promise<SpawnedServer> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const label = opts.label ?? (args.find((a) => a.endsWith('.js')) ?? cmd).replace(/^.*\//, '');
  const logFile = join(scratch(), `${label.replace(/[^\w.-]/g, '_')}-${Date.now()}.log`);
  const fd = openSync(logFile, 'w');
  let child: ChildProcess;
  try {
    // detached: its own process group, so kill() also reaches anything it forks.
    child = spawn(cmd, args, { stdio: ['ignore', fd, fd], detached: true, env: { ...process.env, ...opts.env } });
  } finally {
    closeSync(fd); // the child holds its own copy
  }
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${label}: spawn failed: ${(await spawnError).message}`);
  // Tracked until kill() ran, even after the leader exits, so that its
  // process group is still swept.
  live.set(pid, child);

  const tail = (lines = 15): string => {
    try {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };
  const server: SpawnedServer = { pid, readyMatch: null, logFile, kill: () => killPid(pid), tail };

  const deadline = Date.now() + timeoutMs;
  const exitedEarly = (): string | undefined => (child.exitCode !== null || child.signalCode !== null ? `exited with ${child.exitCode ?? child.signalCode}` : undefined);
  try {
    for (;;) {
      const gone = exitedEarly();
      if (gone !== undefined) throw new Error(`${label} ${gone} before becoming ready`);
      const fatal = opts.failOn !== undefined ? tail(200).match(opts.failOn) : null;
      if (fatal !== null) throw new Error(`${label} cannot become ready: "${fatal[0]}"`);
      if (ready instanceof RegExp) {
        const m = tail(200).match(ready);
        if (m !== null) {
          server.readyMatch = m;
          return server;
        }
      } else {
        try {
          const res = await fetch(ready, { signal: AbortSignal.timeout(Math.max(100, Math.min(1000, deadline - Date.now()))) });
          await res.arrayBuffer();
          if (res.status === 200) return server;
        } catch {
          // Not listening yet.
        }
      }
      if (Date.now() >= deadline) throw new Error(`${label} not ready within ${timeoutMs} ms`);
      await sleep(ready instanceof RegExp ? 25 : 100);
    }
  } catch (err) {
    const out = tail();
    await killPid(pid);
    throw new Error(`${(err as Error).message}${out ? `\n--- last output of ${label} (${logFile}) ---\n${out}` : ''}`);
  }
}

let clockTicks: number | undefined;

/** Clock ticks per second of /proc times (`getconf CLK_TCK`, else 100). */
export function clkTck(): number {
  if (clockTicks === undefined) {
    try {
      const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 2000 }).trim());
      clockTicks = Number.isFinite(n) && n > 0 ? n : 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * CPU time (user + system) consumed so far by process `pid`, in µs, from
 * `/proc/<pid>/stat` fields 14 and 15. These fields cover all threads of the
 * process (worker threads included), not its children. Resolution is one
 * clock tick (usually 10 ms), so measure over seconds, not milliseconds.
 */
export function cpuTimeMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) is parenthesised and may contain spaces: split after it.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // `rest[0]` is field 3, so field N is rest[N - 3].
  const utime = Number(rest[14 - 3]);
  const stime = Number(rest[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`unexpected /proc/${pid}/stat format`);
  return ((utime + stime) * 1_000_000) / clkTck();
}

function statusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm'));
    return m?.[1] !== undefined ? Number(m[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** Peak resident set size (VmHWM) of `pid` in KiB, or NaN if unavailable. */
export function peakRssKb(pid: number): number {
  return statusKb(pid, 'VmHWM');
}

/** Current resident set size (VmRSS) of `pid` in KiB, or NaN if unavailable. */
export function rssKb(pid: number): number {
  return statusKb(pid, 'VmRSS');
}

/**
 * Busy CPU time of the whole machine so far (all cores, every process), in µs,
 * from the `cpu` line of /proc/stat. Its unit is USER_HZ, which the kernel
 * fixes at 100 for user space whatever its internal tick rate.
 */
export function machineBusyMicros(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1_000_000) / 100;
}

/** Median of the finite values (NaN when there are none). */
export function median(values: number[]): number {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? Number.NaN) + (s[mid] ?? Number.NaN)) / 2;
}

/** Value at quantile `q` of an ascending-sorted array (nearest rank). */
function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx] ?? Number.NaN;
}

/**
 * Drives `connections` keep-alive connections against `url` for
 * `durationSec` seconds with autocannon (no pipelining) and reports
 * throughput and latency. Latency quantiles come from every response's own
 * time (the instance's `'response'` event), not autocannon's histogram
 * buckets, and include non-2xx answers. Bounded: autocannon is stopped if it
 * overruns the duration by 10 s.
 */
export function runLoad(load: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    let latencies = new Float64Array(1 << 16);
    let count = 0;
    let non2xx = 0;
    const statusCounts: Record<string, number> = {};
    const instance = autocannon(
      {
        url: load.url,
        method: load.method ?? 'GET',
        headers: load.headers ?? {},
        ...(load.body !== undefined ? { body: load.body } : {}),
        ...(load.requests !== undefined ? { requests: load.requests.map((r) => ({ ...r, headers: r.headers ?? load.headers ?? {} })) } : {}),
        connections: load.connections,
        pipelining: 1,
        duration: load.durationSec,
        timeout: 10,
      },
      (err, result) => {
        clearTimeout(guard);
        if (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        const sorted = latencies.subarray(0, count).sort();
        const durationSec = result.duration > 0 ? result.duration : load.durationSec;
        resolve({
          reqPerSec: count / durationSec,
          p50Ms: quantile(sorted, 0.5),
          p99Ms: quantile(sorted, 0.99),
          non2xx,
          statusCounts,
          errors: result.errors,
          total: count,
          durationSec,
        });
      },
    );
    instance.on('response', (_client, statusCode, _resBytes, responseTime) => {
      if (count === latencies.length) {
        const bigger = new Float64Array(latencies.length * 2);
        bigger.set(latencies);
        latencies = bigger;
      }
      latencies[count++] = responseTime;
      if (statusCode < 200 || statusCode > 299) non2xx++;
      statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
    });
    const guard = setTimeout(() => instance.stop(), (load.durationSec + 10) * 1000);
  });
}

/**
 * Runs `load` against the server `pid` and charges the server's CPU time
 * (all threads) during the run to the requests served. Optional warm-up load
 * of `warmupSec` seconds runs first and is discarded (JIT, pools, caches).
 */
export async function measure(pid: number, load: LoadOptions, opts: { warmupSec?: number } = {}): Promise<MeasureResult> {
  if ((opts.warmupSec ?? 0) > 0) await runLoad({ ...load, durationSec: opts.warmupSec ?? 0 });
  const before = cpuTimeMicros(pid);
  const result = await runLoad(load);
  const cpuMicros = cpuTimeMicros(pid) - before;
  return {
    ...result,
    cpuMicros,
    cpuMicrosPerReq: result.total > 0 ? cpuMicros / result.total : Number.NaN,
    peakRssKb: peakRssKb(pid),
  };
}
