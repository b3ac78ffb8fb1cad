/**
 * The built CLI as a child process (issue 13, "the CLI ignores mistakes":
 * `--version`, `-v` and `--conifg` were ignored and the demo config started
 * on 127.0.0.1:8080). Every run here is bounded: a CLI that starts serving
 * when it should have refused is killed and the test fails.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'main', 'cli.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const dir = mkdtempSync(join(tmpdir(), 'mcp-gw-cli-'));
/** Hang protection only (never a speed check): a busy 2-core CI machine can take seconds to start node. */
const BOUND_MS = 40_000;
vi.setConfig({ testTimeout: 2 * BOUND_MS });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when the process had to be killed at the time bound. */
  timedOut: boolean;
}

/** The environment without any MCP_GATEWAY_* variable of the test runner. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MCP_GATEWAY_')) env[k] = v;
  return { ...env, ...extra };
}

/** Runs the CLI to its exit, killing it after {@link BOUND_MS}. */
function runCli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runScript(CLI, args, env);
}

/** Runs a built script with node to its exit, killing it after {@link BOUND_MS}. */
function runScript(script: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script, ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, BOUND_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

// A config that would listen on a free port if the CLI wrongly started.
const SAFE_PORT_ENV = { MCP_GATEWAY_SERVER_PORT: '0', MCP_GATEWAY_LOG_LEVEL: 'silent' };

describe('command-line mistakes are usage errors (exit 2, usage on stderr)', () => {
  it.each([
    [['--conifg', 'gateway.yaml'], /Unknown option '--conifg'/],
    [['gateway.yaml'], /Unexpected argument 'gateway\.yaml'/],
    [['--config'], /--config <value>' argument missing/],
    [['--config='], /--config: a file path is required/],
    [['--format', 'json'], /--format: only valid with --check-config/],
    [['--check-config', '--format', 'toml'], /--format: must be yaml or json, got "toml"/],
  ])('%j', async (args, message) => {
    const run = await runCli(args, SAFE_PORT_ENV);
    expect(run.timedOut, 'the CLI started instead of refusing').toBe(false);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('usage: mcp-route-gateway');
    expect(run.stdout).toBe('');
  });
});

describe('npm start (examples/demo.ts) parses its arguments as strictly', () => {
  it('refuses an unknown option before starting anything (exit 2)', async () => {
    const run = await runScript(join(ROOT, 'dist', 'examples', 'demo.js'), ['--conifg', 'gateway.yaml'], { ...SAFE_PORT_ENV, DEMO_TOOL_SERVICE_PORT: '0' });
    expect(run.timedOut, 'the demo started instead of refusing').toBe(false);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Unknown option '--conifg'");
    expect(run.stdout).not.toContain('listening');
  });
});

describe('--help and --version', () => {
  it.each([['--version'], ['-v']])('%s prints the package version', async (flag) => {
    const run = await runCli([flag], SAFE_PORT_ENV);
    expect(run.timedOut).toBe(false);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${VERSION}\n`);
  });

  it.each([['--help'], ['-h']])('%s prints the usage', async (flag) => {
    const run = await runCli([flag], SAFE_PORT_ENV);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('usage: mcp-route-gateway');
    expect(run.stdout).toContain('--check-config');
  });
});

describe('config file problems', () => {
  it('a missing file is named, with its resolved path (exit 2)', async () => {
    const missing = join(dir, 'missing.yaml');
    const run = await runCli(['--config', missing], SAFE_PORT_ENV);
    expect(run.timedOut).toBe(false);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`config file ${missing}: not found (${missing} does not exist)`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('MCP_GATEWAY_CONFIG naming a missing file is refused the same way', async () => {
    const run = await runCli([], { ...SAFE_PORT_ENV, MCP_GATEWAY_CONFIG: join(dir, 'gone.yaml') });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('gone.yaml: not found');
  });
});

describe('--check-config', () => {
  it('prints the effective configuration as YAML with credentials redacted, and exits 0', async () => {
    const config = file('check.yaml', 'server: { host: 0.0.0.0, port: 9090 }\nredis: { url: "redis://app:s3cret@redis:6379/0" }\nworkers: { shards: 3 }\n');
    const run = await runCli(['--check-config', '--config', config], { MCP_GATEWAY_TOOLS_MAX_TIMEOUT_MS: '60000' });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain('s3cret');
    const printed = parseYaml(run.stdout) as { server: { host: string; port: number }; redis: { url: string }; workers: { shards: number }; tools: { maxTimeoutMs: number } };
    expect(printed.server).toMatchObject({ host: '0.0.0.0', port: 9090 });
    expect(printed.redis.url).toBe('redis://<redacted>@redis:6379/0');
    expect(printed.workers.shards).toBe(3);
    expect(printed.tools.maxTimeoutMs).toBe(60_000);
    expect(run.stderr).toContain('configuration is valid');
  });

  it('prints JSON with --format json, shards resolved from the CPU budget, and lists ignored service links', async () => {
    const run = await runCli(['--check-config', '--format', 'json'], {
      MCP_GATEWAY_SERVICE_HOST: '10.96.0.12',
      MCP_GATEWAY_PORT: 'tcp://10.96.0.12:8080',
    });
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout) as { server: { port: number }; workers: { shards: number } };
    expect(printed.server.port).toBe(8080);
    expect(printed.workers.shards).toBeGreaterThanOrEqual(1);
    expect(run.stderr).toContain('ignored Kubernetes service-link variables: MCP_GATEWAY_PORT, MCP_GATEWAY_SERVICE_HOST');
  });

  it('refuses an invalid configuration naming every key (exit 2, nothing on stdout)', async () => {
    const run = await runCli(['--check-config'], { MCP_GATEWAY_SERVER_PROT: '1', MCP_GATEWAY_WORKERS_ACCEPTORS: 'two' });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('MCP_GATEWAY_SERVER_PROT: unknown environment variable');
    expect(run.stderr).toContain('MCP_GATEWAY_WORKERS_ACCEPTORS: must be an integer');
  });
});

describe('a port in use', () => {
  it('is a start error naming server.port and the cause, without a stack trace (exit 1)', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen({ host: '127.0.0.1', port: 0 }, () => resolve()));
    const port = (holder.address() as { port: number }).port;
    try {
      const run = await runCli([], { MCP_GATEWAY_SERVER_PORT: String(port), MCP_GATEWAY_LOG_LEVEL: 'silent' });
      expect(run.timedOut).toBe(false);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`failed to start: LISTEN_FAILED: server.port: 127.0.0.1:${port} is already in use by another process (EADDRINUSE)`);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });
});
