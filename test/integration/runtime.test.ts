/**
 * The runtime the gateway runs on (ADR-0001): it refuses to start without a
 * native uWebSockets.js build, says which Node and uWS build serve, and its
 * header limit (`server.maxHeaderBytes`) fits real clients' tokens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryReport } from '../../bench/memory-probe.js';
import { loadedUwsBuild } from '../../dist/src/main/uws.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { expectedUwsPackage, glibcVersion, pinnedRuntime } from '../helpers/runtime.js';

const CLI = fileURLToPath(new URL('../../dist/src/main/cli.js', import.meta.url));
const MEMORY_PROBE = fileURLToPath(new URL('../../dist/bench/memory-probe.js', import.meta.url));
const MAX_HEADER_BYTES = 16 * 1024;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts the CLI on this test's Node (`process.execPath`: the runtime under test). */
function startCli(env: Record<string, string>, nodeArgs: string[] = []): { child: ChildProcess; output: () => { stdout: string; stderr: string }; exited: Promise<Run> } {
  const child = spawn(process.execPath, [...nodeArgs, CLI], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<Run>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, output: () => ({ stdout, stderr }), exited };
}

/** Resolves with the run, or kills the child and rejects after `ms`. */
async function within(run: Promise<Run>, child: ChildProcess, ms: number): Promise<Run> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway process did not exit within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([run, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** Whether anything accepts a TCP connection on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Sends `GET /health/live` whose header block (request line through the
 * final CRLFCRLF) is exactly `size` bytes, in one write or split in two
 * writes 30 ms apart; resolves with the status line, or `closed` when the
 * server closed the connection without an answer.
 */
function headerBlock(port: number, size: number, split: boolean): Promise<string> {
  const head = 'GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ';
  const block = head + 'x'.repeat(size - head.length - 4) + '\r\n\r\n';
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer and no close within 5 s for a ${size}-byte header block`));
    }, 5_000);
    const done = (value: string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    socket.on('data', (c: Buffer) => {
      received += c.toString('latin1');
      if (received.includes('\r\n')) done(received.slice(0, received.indexOf('\r\n')));
    });
    socket.on('close', () => done(received === '' ? 'closed' : (received.split('\r\n')[0] ?? '')));
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      if (!split) socket.write(block);
      else {
        socket.write(block.slice(0, 3_000));
        setTimeout(() => socket.destroyed || socket.write(block.slice(3_000)), 30);
      }
    });
  });
}

describe('a runtime without native uWS', () => {
  it('refuses to start: exits non-zero naming Node, ABI, glibc and the fix, and never listens (UWS_USE_FALLBACK=1)', async () => {
    const port = await freePort();
    const { child, exited } = startCli({ UWS_USE_FALLBACK: '1', MCP_GATEWAY_SERVER_PORT: String(port), MCP_GATEWAY_LOG_LEVEL: 'info' });
    const run = await within(exited, child, 20_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('mcp-route-gateway: failed to start: RUNTIME_UNSUPPORTED: no native uWebSockets.js build loads');
    expect(run.stderr).toContain(`Node ${process.version} (ABI ${process.versions.modules})`);
    const glibc = glibcVersion();
    expect(run.stderr).toContain(glibc ? `glibc ${glibc}` : 'no glibc');
    expect(run.stderr).toMatch(/uWebSockets\.js-legacy: only its JavaScript polyfill loaded \(UWS_USE_FALLBACK is set\)/);
    expect(run.stderr).toMatch(/Fix: run Node 24 LTS .*unset UWS_USE_FALLBACK/);
    expect(run.stdout + run.stderr).not.toContain('gateway listening');
    expect(await accepts(port)).toBe(false);
  });
});

describe('the runtime under test', () => {
  it('the CLI logs which Node and uWS build serve, and they are the ones this runtime must get', async () => {
    const { child, output, exited } = startCli({ MCP_GATEWAY_SERVER_PORT: '0', MCP_GATEWAY_LOG_LEVEL: 'info', MCP_GATEWAY_CATALOG_STATIC_ROUTES: '{}' });
    const deadline = Date.now() + 20_000;
    let line: { node?: string; uws?: string; port?: number } | undefined;
    while (line === undefined && Date.now() < deadline && child.exitCode === null) {
      const found = output()
        .stdout.split('\n')
        .find((l) => l.includes('"gateway listening"'));
      if (found) line = JSON.parse(found) as typeof line;
      else await new Promise((r) => setTimeout(r, 25));
    }
    child.kill('SIGTERM');
    const run = await within(exited, child, 20_000);
    expect(line, run.stderr).toBeDefined();
    expect(line?.node).toBe(process.version);
    const build = expectedUwsPackage() === 'uWebSockets.js' ? '@btc-vision/uwebsockets.js@20.57.0' : '@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0';
    expect(line?.uws).toBe(build);
    expect(run.code).toBe(0);
  });

  it('matches the runtime CI pinned for this pass (MCP_TEST_EXPECT_NODE / MCP_TEST_EXPECT_UWS)', async () => {
    const gw = await startTestGateway({ catalog: { static: { routes: {} } } });
    try {
      const build = loadedUwsBuild();
      expect(build?.packageName).toBe(expectedUwsPackage());
      const pinned = pinnedRuntime();
      if (pinned.nodeMajor !== null) expect(process.versions.node.split('.')[0]).toBe(pinned.nodeMajor);
      if (pinned.uwsRelease !== null) expect(build?.release).toBe(pinned.uwsRelease);
    } finally {
      await gw.close();
    }
  });
});

describe('server.maxHeaderBytes (default 16 KiB)', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('serves an MCP request carrying an 8 KB Authorization header (a large JWT)', async () => {
    const answer = await mcpPost(gw, 'core', rpc('tools/list'), { authorization: `Bearer ${'x'.repeat(8_000)}` });
    expect(answer.status).toBe(200);
    expect((answer.json as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['echo']);
  });

  it('uWS 20.57: a header block of exactly the limit is served, one byte more is 431 (in one read or split)', async () => {
    if (loadedUwsBuild()?.role !== 'supported') return expect(loadedUwsBuild()?.maxHeaderBytes).toBeNull();
    expect(loadedUwsBuild()?.maxHeaderBytes).toBe(MAX_HEADER_BYTES);
    for (const split of [false, true]) {
      expect(await headerBlock(gw.port, 8 * 1024, split)).toBe('HTTP/1.1 200 OK');
      expect(await headerBlock(gw.port, MAX_HEADER_BYTES, split)).toBe('HTTP/1.1 200 OK');
      expect(await headerBlock(gw.port, MAX_HEADER_BYTES + 1, split)).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    }
  });

  it('legacy uWS 20.30 (fixed limits, ADR-0001): a block in one read is served, a block over 4 KiB split across reads is closed unanswered', async () => {
    if (loadedUwsBuild()?.role !== 'legacy') return expect(loadedUwsBuild()?.role).toBe('supported');
    expect(await headerBlock(gw.port, MAX_HEADER_BYTES + 1, false)).toBe('HTTP/1.1 200 OK');
    expect(await headerBlock(gw.port, 4 * 1024, true)).toBe('HTTP/1.1 200 OK');
    expect(await headerBlock(gw.port, 8 * 1024, true)).toBe('closed');
  });
});

describe('workers.maxYoungGenerationSizeMb', () => {
  interface ThreadHeap {
    kind: string;
    /** The worker's `resourceLimits.maxYoungGenerationSizeMb` (what it was given). */
    mb: number | undefined;
    /** V8's `heap_size_limit`: old generation + 2 semi-spaces, so it tells the semi-space the heap was really created with. */
    heapSizeLimit: number;
  }

  /** Starts the CLI with the memory probe preloaded (plus `nodeFlags`), and returns each thread's young-generation setting and heap limit. */
  async function threadHeaps(setting: string | null, nodeFlags: string[] = []): Promise<ThreadHeap[]> {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-young-'));
    const out = join(dir, 'probe.json');
    const env: Record<string, string> = {
      MCP_GATEWAY_SERVER_PORT: '0',
      MCP_GATEWAY_LOG_LEVEL: 'info',
      MCP_GATEWAY_CATALOG_STATIC_ROUTES: '{}',
      MCP_GATEWAY_WORKERS_ACCEPTORS: '2',
      MCP_GATEWAY_SERVER_DRAIN_DELAY_MS: '0',
      MEMORY_PROBE_OUT: out,
    };
    if (setting !== null) env['MCP_GATEWAY_WORKERS_MAX_YOUNG_GENERATION_SIZE_MB'] = setting;
    const { child, output, exited } = startCli(env, [...nodeFlags, '--import', MEMORY_PROBE]);
    try {
      const deadline = Date.now() + 20_000;
      while (!output().stdout.includes('"initial catalog load finished"') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(output().stdout, output().stderr).toContain('"initial catalog load finished"');
      child.kill('SIGUSR2');
      let text = '';
      for (let i = 0; i < 200 && text === ''; i++) {
        await new Promise((r) => setTimeout(r, 25));
        try {
          text = readFileSync(out, 'utf8');
        } catch {
          // not written yet
        }
      }
      const report = JSON.parse(text) as MemoryReport;
      return report.threads.map((t) => ({ kind: t.kind, mb: t.resourceLimits['maxYoungGenerationSizeMb'], heapSizeLimit: t.heapSizeLimit }));
    } finally {
      child.kill('SIGTERM');
      await within(exited, child, 20_000);
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** The worker threads' settings (the main thread has no `resourceLimits`). */
  async function workerYoungGenerations(setting: string | null): Promise<Array<{ kind: string; mb: number | undefined }>> {
    return (await threadHeaps(setting)).filter((t) => t.kind !== 'main').map(({ kind, mb }) => ({ kind, mb }));
  }

  it('gives the shard and extra acceptor threads the configured young generation (3 MB by default, 48 when set) and the refresh worker at most 8 MB', async () => {
    const byDefault = await workerYoungGenerations(null);
    expect(byDefault.map((t) => t.kind).sort()).toEqual(['acceptor', 'refresh', 'shard']);
    for (const t of byDefault) expect(t.mb, t.kind).toBe(3);
    for (const t of await workerYoungGenerations('48')) expect(t.mb, t.kind).toBe(t.kind === 'refresh' ? 8 : 48);
    // Below the refresh cap the setting applies to the refresh worker too.
    for (const t of await workerYoungGenerations('4')) expect(t.mb, t.kind).toBe(4);
  });

  it('--max-semi-space-size on the node command line sizes the main thread only: every worker is created with its own setting (ADR-0018)', async () => {
    const plain = await threadHeaps('24');
    const flagged = await threadHeaps('24', ['--max-semi-space-size=1']);
    const limit = (threads: ThreadHeap[], kind: string): number | undefined => threads.find((t) => t.kind === kind)?.heapSizeLimit;
    expect(flagged.map((t) => t.kind).sort()).toEqual(['acceptor', 'main', 'refresh', 'shard']);
    // The flag took effect where it should: the main heap's two semi-spaces shrank to 1 MB each.
    expect(limit(flagged, 'main')).toBeLessThan(limit(plain, 'main') ?? 0);
    // V8 prefers the process-wide flag to a worker's resourceLimits; the gateway unsets it before each worker.
    for (const kind of ['shard', 'acceptor', 'refresh']) expect(limit(flagged, kind), kind).toBe(limit(plain, kind));
  });

  it('0 leaves V8 its own default (what a worker gets without resourceLimits on this Node: 48 on Node 20, more on Node 24)', async () => {
    const plain = new Worker("require('node:worker_threads').parentPort.postMessage(require('node:worker_threads').resourceLimits.maxYoungGenerationSizeMb)", { eval: true });
    const v8Default = await new Promise<number>((resolve) => plain.once('message', resolve));
    await plain.terminate();
    const threads = await workerYoungGenerations('0');
    expect(threads.length).toBe(3);
    for (const t of threads) expect(t.mb, t.kind).toBe(v8Default);
  });
});
