/**
 * The bench's own servers and probe, as real processes (built, from dist/):
 * the comparators answer tools/call correctly, the flapping Tool Service
 * really refuses and really holds requests, and the thread probe names a
 * worker thread's kernel id. A bench that measured wrong answers, or
 * attributed CPU to the wrong thread, would judge the gateway wrongly.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, killAll, spawnServer } from '../../dist/bench/harness.js';
import { checkGatewayCall, send } from '../../dist/bench/suite/probes.js';
import { echoCallBodies, MCP_HEADERS, rpc } from '../../dist/bench/suite/workloads.js';
import { eventually } from '../helpers/eventually.js';

const bench = (file: string): string => fileURLToPath(new URL(`../../dist/bench/${file}`, import.meta.url));
const LISTENING = /^listening (\d+)/m;

async function start(script: string, args: string[]): Promise<string> {
  const port = await freePort();
  await spawnServer(process.execPath, [bench(script), '--port', String(port), ...args], LISTENING, { timeoutMs: 15_000 });
  return `http://127.0.0.1:${port}`;
}

/** 'connected' or the error code of a fresh TCP connection to 127.0.0.1:port (bounded by 5 s). */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(5000, () => {
      socket.destroy();
      resolve('timeout');
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** POSTs `{}` on a new connection; the status, or 'no answer' after `waitMs`. */
function postOnNewConnection(port: number, path: string, waitMs: number): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      resolve(String(res.statusCode));
    });
    req.setTimeout(waitMs, () => {
      req.destroy();
      resolve('no answer');
    });
    req.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end('{}');
  });
}

afterAll(async () => {
  await killAll();
});

describe('tools/call comparators', () => {
  it('the inline gateway and the SDK server forward the echo tool and wrap its answer as a JSON-RPC result', async () => {
    const echo = await start('echo-tool-service.js', ['--tools', '50']);
    const upstream = ['--upstream', echo, '--connections', '4'];
    const [inline, sdk] = await Promise.all([start('inline-gateway.js', [...upstream, '--tools', '50']), start('sdk-server.js', [...upstream, '--tools', '1'])]);
    const call = { method: 'POST', headers: MCP_HEADERS, body: echoCallBodies().mcp };
    for (const server of [inline, sdk]) {
      const answer = await send(`${server}/mcp`, call);
      expect(checkGatewayCall(answer), `${server}: ${answer.text}`).toBeUndefined();
    }
    const unknown = { ...call, body: rpc('tools/call', { name: 'no_such_tool', arguments: {} }) };
    const inlineUnknown = await send(`${inline}/mcp`, unknown);
    expect((inlineUnknown.json as { error?: { code?: number } }).error?.code).toBe(-32602);
    const sdkUnknown = await send(`${sdk}/mcp`, unknown);
    expect(checkGatewayCall(sdkUnknown)).toBeDefined();
  });

  it('both floor gateways forward the echo tool, with more calls in flight than connections, and keep serving after the Tool Service closed their connections', async () => {
    const echoPort = await freePort();
    const echoArgs = [bench('echo-tool-service.js'), '--port', String(echoPort), '--tools', '50'];
    const echo = await spawnServer(process.execPath, echoArgs, LISTENING, { timeoutMs: 15_000 });
    const upstream = ['--upstream', `http://127.0.0.1:${echoPort}`, '--connections', '2', '--tools', '50'];
    const floors = await Promise.all(['inline', 'sharded'].map((mode) => start('floor-gateway.js', ['--mode', mode, ...upstream])));
    const call = { method: 'POST', headers: MCP_HEADERS, body: echoCallBodies().mcp };
    for (const server of floors) {
      // 8 at once over 2 connections: the wait queue hands each freed connection to the next call.
      const answers = await Promise.all(Array.from({ length: 8 }, () => send(`${server}/mcp`, call)));
      for (const answer of answers) expect(checkGatewayCall(answer), `${server}: ${answer.text}`).toBeUndefined();
      const unknown = await send(`${server}/mcp`, { ...call, body: rpc('tools/call', { name: 'no_such_tool', arguments: {} }) });
      expect((unknown.json as { error?: { code?: number } }).error?.code).toBe(-32602);
    }
    // A Tool Service closes idle keep-alive connections (uWS after 10 s; here by restarting it): a floor that
    // kept a closed connection in its pool would never answer again.
    await echo.kill();
    await spawnServer(process.execPath, echoArgs, LISTENING, { timeoutMs: 15_000 });
    for (const server of floors) {
      await eventually(async () => {
        const answer = await send(`${server}/mcp`, call);
        expect(checkGatewayCall(answer), `${server}: ${answer.text}`).toBeUndefined();
      });
    }
  });
});

describe('flapping Tool Service', () => {
  it('answers, refuses connections and holds requests, phase by phase', async () => {
    const [port, controlPort] = [await freePort(), await freePort()];
    await spawnServer(
      process.execPath,
      [bench('flapping-tool-service.js'), '--port', String(port), '--control-port', String(controlPort), '--tool-timeout-ms', '750'],
      /^listening \d+ control \d+$/m,
      { timeoutMs: 15_000 },
    );
    const service = `http://127.0.0.1:${port}`;
    const control = `http://127.0.0.1:${controlPort}`;
    const manifest = await send(`${service}/manifest?tools=2`, {});
    expect(manifest.status).toBe(200);
    expect((manifest.json as { tools: Array<{ timeoutMs: number }> }).tools.map((t) => t.timeoutMs)).toEqual([750, 750]);

    await send(`${control}/flap/set?phase=refuse`, { method: 'POST' });
    // A new TCP connection (fetch could reuse a pooled socket that has not seen its close yet).
    expect(await connectOutcome(port)).toBe('ECONNREFUSED');

    await send(`${control}/flap/set?phase=timeout`, { method: 'POST' });
    expect(await postOnNewConnection(port, '/tools/x', 300)).toBe('no answer');
    const stats = await send(`${control}/flap/stats`, {});
    expect(stats.json).toMatchObject({ phase: 'timeout', held: 1, refusedPhases: 1 });

    await send(`${control}/flap/set?phase=answer`, { method: 'POST' });
    expect((await send(`${service}/tools/x`, { method: 'POST', body: '{}' })).status).toBe(200);
    expect((await send(`${control}/flap/set?phase=nap`, { method: 'POST' })).status).toBe(400);
  });
});

describe('thread probe', () => {
  it("reports each JavaScript thread's kernel thread id and role from inside the process", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-thread-probe-'));
    try {
      const worker = join(dir, 'shard-worker.mjs');
      writeFileSync(worker, 'setInterval(() => {}, 1000);\n');
      const main = join(dir, 'main.mjs');
      writeFileSync(
        main,
        `import { Worker } from 'node:worker_threads';\nnew Worker(new URL(${JSON.stringify(pathToFileURL(worker).href)}));\nconsole.log('listening 1');\nsetInterval(() => {}, 1000);\n`,
      );
      const reports = join(dir, 'reports');
      mkdirSync(reports);
      const child = await spawnServer(process.execPath, [main], LISTENING, {
        timeoutMs: 15_000,
        env: { NODE_OPTIONS: `--import=${pathToFileURL(bench('thread-probe.js')).href}`, BENCH_THREAD_DIR: reports },
      });
      const roles = await eventually(() => {
        const got = readdirSync(reports)
          .filter((f) => f.endsWith('.json'))
          .map((f) => JSON.parse(readFileSync(join(reports, f), 'utf8')) as { tid: number; role: string });
        if (got.length !== 2) throw new Error(`${got.length} of 2 threads reported`);
        return got;
      }, 10_000);
      const tasks = readdirSync(`/proc/${child.pid}/task`).map(Number);
      expect(roles.find((r) => r.role === 'main')?.tid).toBe(child.pid);
      const shard = roles.find((r) => r.role === 'shard-worker.mjs');
      expect(shard).toBeDefined();
      expect(tasks).toContain(shard?.tid);
      await child.kill();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
