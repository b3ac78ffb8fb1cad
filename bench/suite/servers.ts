/**
 * Starting the bench's servers, each its own process: the gateway (built,
 * production config) and the bench's small Node servers, on a chosen Node
 * binary. Every start is bounded by a readiness timeout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort, scratch, spawnServer, type SpawnedServer } from '../harness.js';
import { IMAGE_ENV, IMAGE_NODE_FLAGS } from '../../test/deploy/deployment-constants.js';
import { DEFAULTS } from '../../src/shared/config/defaults.js';
import { THREAD_DIR_ENV } from './threads.js';

const BASELINE_READY_TIMEOUT_MS = 10_000;
/** What uWebSockets.js prints when it has no native build for the running Node: the gateway would serve 404s. */
const UWS_FALLBACK = /Falling back to a NodeJS implementation[^\n]*/;
/** Upper bound on a gateway's start (catalogs of 42 routes loaded). */
export const GATEWAY_READY_TIMEOUT_MS = 30_000;
const VERSION_TIMEOUT_MS = 10_000;

/** A path relative to the compiled bench folder (dist/bench/). */
export const fromBench = (rel: string): string => fileURLToPath(new URL(`../${rel}`, import.meta.url));

/** A Node binary the servers run on. */
export interface Runtime {
  node: string;
  /** `process.version` of that binary, e.g. "v24.22.3". */
  version: string;
  /** Suffix of server names on this runtime ("" on the primary runtime of a single-runtime run). */
  tag: string;
}

/** Asks `node` for its version (bounded); throws a clear error when it does not run. */
export function resolveRuntime(node: string, tagged: boolean): Runtime {
  let version: string;
  try {
    version = execFileSync(node, ['-p', 'process.version'], { encoding: 'utf8', timeout: VERSION_TIMEOUT_MS }).trim();
  } catch (err) {
    throw new Error(`cannot run Node binary ${JSON.stringify(node)}: ${(err as Error).message.split('\n')[0] ?? ''}`);
  }
  return { node, version, tag: tagged ? ` · node ${version}` : '' };
}

/** One Tool Service of a route in the gateway's static catalog. */
export interface ServiceEntry {
  id: string;
  baseUrl: string;
  manifestPath: string;
}

/** A started server and its port. */
export interface Started {
  server: SpawnedServer;
  port: number;
}

/** A started gateway; `threadDir` holds its threads' self-reports (bench/thread-probe.ts). */
export interface StartedGateway extends Started {
  threadDir: string | undefined;
}

/**
 * A comparator's arguments for its Tool Service (inline gateway, floors, SDK server): the echo service at
 * `echoUrl`, a catalog of `tools`, and as many keep-alive connections as the gateway's default pool per service.
 */
export function upstreamArgs(echoUrl: string, tools: number): string[] {
  return ['--upstream', echoUrl, '--tools', String(tools), '--connections', String(DEFAULTS.tools.connectionsPerService)];
}

/** What a comparator serves: the `tools/call` ones forward to the echo Tool Service, bare uWS answers `tools/list` alone. */
export interface ComparatorSpec {
  script: string;
  args: readonly string[];
  serves: 'call' | 'list';
  /** The path it answers on. */
  path: string;
}

/** The comparators the full bench, `bench:ab` and `instructions.ts` start by name (the `tools/call` and `tools/list` references). */
export const COMPARATORS = {
  inline: { script: 'inline-gateway.js', args: [], serves: 'call', path: '/mcp' },
  'floor-sharded': { script: 'floor-gateway.js', args: ['--mode', 'sharded'], serves: 'call', path: '/mcp' },
  'floor-inline': { script: 'floor-gateway.js', args: ['--mode', 'inline'], serves: 'call', path: '/mcp' },
  bare: { script: 'bare-uws.js', args: ['--tools', '50'], serves: 'list', path: '/mcp/bench' },
} as const satisfies Record<string, ComparatorSpec>;
export type Comparator = keyof typeof COMPARATORS;

/** The arguments of comparator `name` after its script and `--port`: its own, then a `tools/call` one's {@link upstreamArgs}. */
export function comparatorArgs(name: Comparator, echoUrl: string): string[] {
  const c: ComparatorSpec = COMPARATORS[name];
  return c.serves === 'call' ? [...c.args, ...upstreamArgs(echoUrl, 50)] : [...c.args];
}

/** The gateway's config: static routes, log level warn, optional layout, refresh interval and `auth` section. */
export function gatewayConfig(
  port: number,
  routes: Record<string, ServiceEntry[]>,
  o: { acceptors: number | undefined; shards: number | undefined },
  refreshIntervalMs?: number,
  auth?: object,
): object {
  const workers: Record<string, number> = {};
  if (o.acceptors !== undefined) workers['acceptors'] = o.acceptors;
  if (o.shards !== undefined) workers['shards'] = o.shards;
  return {
    server: { host: '127.0.0.1', port },
    workers,
    catalog: {
      source: 'static',
      static: { routes },
      ...(refreshIntervalMs !== undefined ? { refreshIntervalMs } : {}),
    },
    log: { level: 'warn' },
    ...(auth !== undefined ? { auth } : {}),
  };
}

/** The gateway's command on `runtime` with the image's node flags (IMAGE_NODE_FLAGS), or BENCH_GATEWAY_CMD (which brings its own flags). */
function gatewayCommand(runtime: Runtime, configFile: string, port: number): { cmd: string; args: string[] } {
  const override = process.env['BENCH_GATEWAY_CMD'];
  if (override === undefined || override.trim() === '') {
    const cli = fromBench('../src/main/cli.js');
    if (!existsSync(cli)) throw new Error(`gateway not built (${cli} missing): run npm run build`);
    return { cmd: runtime.node, args: [...IMAGE_NODE_FLAGS, cli, '--config', configFile] };
  }
  return commandLine(override, configFile, port);
}

/**
 * A gateway command given as text (BENCH_GATEWAY_CMD, an A/B arm): split on whitespace, `{config}` and
 * `{port}` filled; `--config FILE` appended when the text has no `{config}`.
 */
export function commandLine(text: string, configFile: string, port: number): { cmd: string; args: string[] } {
  const parts = text
    .trim()
    .split(/\s+/)
    .map((p) => p.replaceAll('{config}', configFile).replaceAll('{port}', String(port)));
  if (!text.includes('{config}')) parts.push('--config', configFile);
  const [cmd, ...args] = parts;
  if (cmd === undefined || cmd === '') throw new Error('empty gateway command');
  return { cmd, args };
}

/**
 * The environment that loads bench/thread-probe.js into every thread of the
 * gateway (NODE_OPTIONS `--import` reaches worker threads too), so the bench
 * can attribute each kernel thread's CPU and each isolate's heap to a role.
 */
function threadProbeEnv(dir: string): Record<string, string> {
  const probe = pathToFileURL(fromBench('thread-probe.js')).href;
  const inherited = process.env['NODE_OPTIONS'] ?? '';
  return { NODE_OPTIONS: `${inherited} --import=${probe}`.trim(), [THREAD_DIR_ENV]: dir };
}

/** A fresh folder for the thread probe's reports of the server `label`. */
function threadDirFor(label: string): string {
  const dir = join(scratch(), `${label}-threads`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Writes `config(port)` to a file and starts the gateway on `runtime`, with the
 * environment and node flags the container image sets (IMAGE_ENV, IMAGE_NODE_FLAGS: the default deployment,
 * ADR-0017, ADR-0018); ready when /health/ready answers 200.
 */
export async function startGateway(label: string, runtime: Runtime, config: (port: number) => object): Promise<StartedGateway> {
  const port = await freePort();
  const configFile = join(scratch(), `${label}.json`);
  writeFileSync(configFile, JSON.stringify(config(port), null, 2));
  const threadDir = threadDirFor(label);
  const { cmd, args } = gatewayCommand(runtime, configFile, port);
  const server = await spawnServer(cmd, args, `http://127.0.0.1:${port}/health/ready`, {
    label,
    timeoutMs: GATEWAY_READY_TIMEOUT_MS,
    env: { ...IMAGE_ENV, ...threadProbeEnv(threadDir) },
    failOn: UWS_FALLBACK,
  });
  return { server, port, threadDir };
}

const LISTENING = /^listening (\d+)$/m;

/** Starts one of the bench's Node servers (`dist/bench/<script>`) on `runtime`; ready when it prints `listening <port>`. */
export async function startNodeServer(label: string, script: string, args: string[], runtime: Runtime, env: Record<string, string> = {}): Promise<Started> {
  const port = await freePort();
  const server = await spawnServer(runtime.node, [fromBench(script), '--port', String(port), ...args], LISTENING, { label, timeoutMs: BASELINE_READY_TIMEOUT_MS, env });
  return { server, port };
}

/** {@link startNodeServer} with the thread probe preloaded, for a comparator whose CPU is split by thread like the gateway's. */
export async function startProbedNodeServer(label: string, script: string, args: string[], runtime: Runtime): Promise<Started & { threadDir: string }> {
  const threadDir = threadDirFor(label);
  return { ...(await startNodeServer(label, script, args, runtime, threadProbeEnv(threadDir))), threadDir };
}

/** Sum of every sample of a Prometheus counter in the gateway's /metrics (NaN if absent); bounded by 3 s. */
export async function scrapeCounter(port: number, name: string): Promise<number> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(3000) });
    const text = await res.text();
    if (res.status !== 200) return Number.NaN;
    // A counter with labels has no sample until its first increment: absent = 0.
    let sum = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
        const v = Number(line.slice(line.lastIndexOf(' ') + 1));
        if (Number.isFinite(v)) sum += v;
      }
    }
    return sum;
  } catch {
    return Number.NaN;
  }
}
