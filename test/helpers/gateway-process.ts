/**
 * The built CLI (`dist/src/main/cli.js`) as a child process on this test's
 * Node, configured through `MCP_GATEWAY_*` variables only: for what needs a
 * real process — signals, `process.exit`, the log lines on stdout. Every wait
 * is bounded; `kill()` never leaves a process behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitUntil } from './eventually.js';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src', 'main', 'cli.js');

/** A running gateway process. */
export interface GatewayProcess {
  readonly child: ChildProcess;
  /** The traffic port (from the `gateway listening` log line). */
  readonly port: number;
  /** The admin port, when `server.admin.port` was set. */
  readonly adminPort: number | null;
  stdout(): string;
  stderr(): string;
  /** Parsed JSON log lines so far. */
  logLines(): Array<Record<string, unknown>>;
  /** Resolves with the exit code (null when killed by a signal) and the time it exited (`performance.now()`). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** SIGKILL if still running (cleanup). */
  kill(): void;
}

/** The environment without the test runner's own `MCP_GATEWAY_*` variables. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MCP_GATEWAY_')) env[k] = v;
  return { ...env, ...extra };
}

/**
 * Starts the CLI with `env` (port 0, log level info unless given) and
 * resolves once it listens and its initial catalog load finished.
 */
export async function startGatewayProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [CLI], {
    env: cleanEnv({ MCP_GATEWAY_SERVER_PORT: '0', MCP_GATEWAY_LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })));
  const logLines = (): Array<Record<string, unknown>> =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  try {
    await waitUntil(
      () => {
        if (child.exitCode !== null) throw new Error(`gateway exited early (${child.exitCode}): ${stderr}${stdout}`);
        return stdout.includes('"gateway listening"') && stdout.includes('"initial catalog load finished"');
      },
      () => `the gateway listens and loaded its catalog; stdout so far: ${stdout}`,
      timeoutMs,
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const listening = logLines().find((l) => l['msg'] === 'gateway listening') as { port: number; adminPort?: number | null };
  return {
    child,
    port: listening.port,
    adminPort: listening.adminPort ?? null,
    stdout: () => stdout,
    stderr: () => stderr,
    logLines,
    exited,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
