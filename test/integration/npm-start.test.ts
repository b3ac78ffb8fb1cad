/**
 * `npm start` stops on SIGTERM/SIGINT (issue 13: `kill -TERM` on npm start's
 * pid left the gateway and the demo Tool Service running). npm forwards the
 * signal to the script's process; the script used to be `sh -c "build &&
 * node demo.js"`, so the shell (dash, which does not exec its last command)
 * took the signal and died, orphaning node. The build is now `prestart` and
 * the script `exec`s node, so the signal reaches the demo, which closes the
 * gateway and the Tool Service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BOUND_MS = 40_000;

const started: number[] = [];
afterEach(() => {
  // Never leave a process behind, whatever failed: kill by pid, script first.
  for (const pid of started.splice(0).reverse()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Direct children of `pid`, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) comes after the parenthesised command name, which may contain spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Started {
  npm: ChildProcess;
  gatewayPort: number;
  toolServicePort: number;
  exited: Promise<void>;
}

/** `npm start` on ephemeral ports; resolves once the demo printed both addresses. */
async function npmStart(): Promise<Started> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MCP_GATEWAY_') && !k.startsWith('npm_')) env[k] = v;
  Object.assign(env, {
    MCP_GATEWAY_SERVER_PORT: '0',
    DEMO_TOOL_SERVICE_PORT: '0',
    MCP_GATEWAY_LOG_LEVEL: 'warn',
    // Port 1 has no listener: the demo route fails its load at once and nobody else's server is called.
    MCP_GATEWAY_CATALOG_STATIC_ROUTES: '{"demo":[{"id":"demo-tools","baseUrl":"http://127.0.0.1:1"}]}',
  });
  // --ignore-scripts skips only `prestart` (the build): rebuilding dist/ here would rewrite files
  // that the other test files running in parallel are importing. `npm test` has just built it.
  const npm = spawn('npm', ['start', '--ignore-scripts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (npm.pid === undefined) throw new Error('npm did not start');
  started.push(npm.pid);
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
  let out = '';
  npm.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
  const ports = await new Promise<{ gatewayPort: number; toolServicePort: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not come up within ${BOUND_MS} ms:\n${out}`)), BOUND_MS);
    npm.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const tool = /demo tool service listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      const gateway = /MCP endpoint: http:\/\/127\.0\.0\.1:(\d+)\/mcp\/demo/.exec(out);
      if (tool && gateway) {
        clearTimeout(timer);
        resolve({ gatewayPort: Number(gateway[1]), toolServicePort: Number(tool[1]) });
      }
    });
    void exited.then(() => reject(new Error(`npm start exited early:\n${out}`)));
  });
  // The script and anything it started (a shell's child, if the script did not exec), so a failure leaves nothing behind.
  for (const pid of childrenOf(npm.pid)) started.push(pid, ...childrenOf(pid));
  return { npm, exited, ...ports };
}

async function expectStopped(s: Started, scriptPids: number[]): Promise<void> {
  const timedOut = await Promise.race([s.exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), BOUND_MS))]);
  expect(timedOut, 'npm start did not exit after the signal').toBe(false);
  for (const pid of scriptPids) expect(alive(pid), `script process ${pid} still running`).toBe(false);
  expect(await portOpen(s.gatewayPort), 'gateway port still open').toBe(false);
  expect(await portOpen(s.toolServicePort), 'demo Tool Service port still open').toBe(false);
}

describe('npm start', () => {
  it.each([['SIGTERM'], ['SIGINT']] as const)(
    '%s to the npm process stops the gateway and the demo Tool Service',
    async (signal) => {
      const s = await npmStart();
      expect(await portOpen(s.gatewayPort)).toBe(true);
      expect(await portOpen(s.toolServicePort)).toBe(true);
      const script = childrenOf(s.npm.pid as number);
      s.npm.kill(signal);
      await expectStopped(s, script);
    },
    3 * BOUND_MS,
  );

  it(
    'SIGTERM to the process npm runs (the script) stops both',
    async () => {
      const s = await npmStart();
      const script = childrenOf(s.npm.pid as number);
      expect(script.length).toBe(1);
      process.kill(script[0] as number, 'SIGTERM');
      await expectStopped(s, script);
    },
    3 * BOUND_MS,
  );
});
