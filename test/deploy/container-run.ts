/**
 * `npm run test:container`: runs the gateway the way the container image does
 * (Dockerfile), without a container engine:
 *
 * 1. `npm pack` the repository (what `files` in package.json ships) and check
 *    the tarball holds the compiled gateway and no tests or sources.
 * 2. Unpack it and `npm ci --omit=dev --ignore-scripts` with the repository's
 *    lockfile, as the image's prod-deps stage does; no dev dependency may land.
 * 3. Make the app and the config file read-only (`chmod -R a-w`), then start
 *    `node --max-semi-space-size=1 dist/src/main/cli.js --config <file>` (the image's
 *    ENTRYPOINT + CMD, IMAGE_NODE_FLAGS)
 *    in a private mount namespace where every filesystem is remounted
 *    read-only (readOnlyRootFilesystem), as UID/GID 65534 with no
 *    supplementary groups, no capabilities, no_new_privs, no HOME and an
 *    environment holding only the image's (IMAGE_ENV) and MCP_GATEWAY_* settings plus the variables
 *    Kubernetes injects for a Service named mcp-gateway.
 * 4. `/health/live` answers 200, readiness turns 200, and a real `tools/call`
 *    goes through the demo Tool Service (started by this runner on 127.0.0.1).
 * 5. SIGTERM → exit code 0 within STOP_BOUND_MS, nothing on stderr about
 *    a read-only file system or permissions.
 *
 * Needs Linux, root (to switch users and mount), `setpriv` and `unshare`
 * (util-linux): it fails loudly without them rather than skipping. Prints one
 * line per check and a closing `container: N passed, M failed` line.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { IMAGE_ENV, IMAGE_NODE_FLAGS } from './deployment-constants.js';

const START_BOUND_MS = 60_000;
/** The manifests' terminationGracePeriodSeconds: a pod that takes longer is SIGKILLed. */
const STOP_BOUND_MS = 30_000;
const NOBODY = '65534';

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'package-lock.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('test:container: cannot find the repository root');
    dir = parent;
  }
}

const ROOT = repoRoot();
let passed = 0;
let failed = 0;

function check(name: string, ok: boolean, detail = ''): void {
  if (ok) passed++;
  else failed++;
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${!ok && detail ? `\n     ${detail.split('\n').join('\n     ')}` : ''}\n`);
}

function requireTool(cmd: string, args: string[]): void {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
  } catch {
    throw new Error(`test:container needs \`${cmd}\` (util-linux) and root; it does not skip`);
  }
}

function sh(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

interface Output {
  stdout: string;
  stderr: string;
}

/** Resolves with `match` of the first stdout text that matches `re`, or rejects after `ms`. */
function waitFor(child: ChildProcess, out: Output, re: RegExp, ms: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${re} within ${ms} ms\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`));
    }, ms);
    const onData = (): void => {
      const m = re.exec(out.stdout);
      if (m) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = (): void => {
      cleanup();
      reject(new Error(`gateway exited early\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`));
    };
    const cleanup = (): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    onData();
  });
}

async function poll(url: string, until: (status: number) => boolean, ms: number): Promise<number> {
  const deadline = Date.now() + ms;
  let status = 0;
  // Bounded by the deadline; one request every 200 ms.
  while (Date.now() < deadline) {
    try {
      status = (await fetch(url)).status;
      if (until(status)) return status;
    } catch {
      status = 0;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return status;
}

/** Remounts every filesystem of the new mount namespace read-only, checks it, then drops to nobody and execs the gateway. */
const LAUNCHER = `
set -eu
awk '{print $5}' /proc/self/mountinfo | while read -r mp; do
  case "$mp" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/pts) continue ;; esac
  mount -o remount,bind,ro "$mp" 2>/dev/null || true
done
if touch "$APP_DIR/.rw-probe" 2>/dev/null || touch /tmp/.mcp-gw-rw-probe 2>/dev/null; then
  echo "launcher: could not make the filesystems read-only" >&2
  exit 97
fi
exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups --inh-caps=-all --no-new-privs -- "$@"
`;

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('test:container needs Linux');
  if (process.getuid?.() !== 0) throw new Error('test:container needs root (to switch to UID 65534 and remount read-only); CI runs as root');
  requireTool('setpriv', ['--version']);
  requireTool('unshare', ['--version']);
  try {
    execFileSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', process.execPath, '-e', '0'], { stdio: 'ignore', env: {} });
  } catch {
    throw new Error(`${process.execPath} cannot be run by UID ${NOBODY}: the Node runtime (and its loader) must be world-readable, as in the image`);
  }

  const scratch = mkdtempSync('/tmp/mcp-gw-container-');
  chmodSync(scratch, 0o755);
  const appDir = join(scratch, 'app');
  const etcDir = join(scratch, 'etc');
  let gateway: ChildProcess | null = null;
  const { startDemoToolService } = (await import(pathToFileURL(join(ROOT, 'dist', 'examples', 'demo-tool-service.js')).href)) as typeof import('../../examples/demo-tool-service.js');
  const toolService = await startDemoToolService({ host: '127.0.0.1', port: 0 });
  try {
    // 1. The package as published.
    const packJson = sh('npm', ['pack', '--json', '--pack-destination', scratch], ROOT);
    const packed = (JSON.parse(packJson) as Array<{ filename: string; files: Array<{ path: string }> }>)[0];
    if (packed === undefined) throw new Error('npm pack printed no result');
    const paths = packed.files.map((f) => f.path);
    check(
      'npm pack ships dist/src/main/cli.js and the worker entry points',
      ['dist/src/main/cli.js', 'dist/src/main/acceptor-worker.js', 'dist/src/workers/shard/shard-worker.js', 'dist/src/workers/refresh/refresh-worker.js'].every((p) => paths.includes(p)),
    );
    const stray = paths.filter((p) => /^(test|bench|examples|src|docs|deploy)\//.test(p) || p.startsWith('dist/test') || (p.endsWith('.ts') && !p.endsWith('.d.ts')));
    check('npm pack ships no tests, benchmarks, examples or TypeScript sources', stray.length === 0, stray.slice(0, 10).join('\n'));

    // 2. Production dependencies only, from the lockfile (the image's prod-deps stage).
    sh('tar', ['-xzf', join(scratch, packed.filename), '-C', scratch], ROOT);
    renameSync(join(scratch, 'package'), appDir);
    copyFileSync(join(ROOT, 'package-lock.json'), join(appDir, 'package-lock.json'));
    sh('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], appDir);
    rmSync(join(appDir, 'package-lock.json'));
    const installed = readdirSync(join(appDir, 'node_modules'));
    const dev = ['vitest', 'typescript', 'autocannon', '@modelcontextprotocol', 'dockerfile-utils'].filter((d) => installed.includes(d));
    check('npm ci --omit=dev installs no dev dependency', dev.length === 0, dev.join(', '));

    // 3. Read-only app and config (a mounted ConfigMap), run as nobody in a read-only mount namespace.
    mkdirSync(etcDir);
    const configFile = join(etcDir, 'gateway.yaml');
    writeFileSync(
      configFile,
      ['server:', '  host: 127.0.0.1', 'catalog:', '  source: static', '  static:', '    routes:', `      demo: [{ id: demo-tools, baseUrl: "${toolService.url}" }]`, 'log:', '  level: info', ''].join(
        '\n',
      ),
    );
    execFileSync('chmod', ['-R', 'a-w', appDir, etcDir]);
    const env: Record<string, string> = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      ...IMAGE_ENV,
      APP_DIR: appDir,
      // Config from the environment on top of the file (the manifests' way).
      MCP_GATEWAY_SERVER_PORT: '0',
      MCP_GATEWAY_WORKERS_SHARDS: '1',
      // What Kubernetes injects for a Service named mcp-gateway: must be ignored.
      MCP_GATEWAY_SERVICE_HOST: '10.96.0.12',
      MCP_GATEWAY_SERVICE_PORT: '8080',
      MCP_GATEWAY_PORT: 'tcp://10.96.0.12:8080',
      MCP_GATEWAY_PORT_8080_TCP: 'tcp://10.96.0.12:8080',
      MCP_GATEWAY_PORT_8080_TCP_PROTO: 'tcp',
      MCP_GATEWAY_PORT_8080_TCP_PORT: '8080',
      MCP_GATEWAY_PORT_8080_TCP_ADDR: '10.96.0.12',
    };
    const argv = [process.execPath, ...IMAGE_NODE_FLAGS, join(appDir, 'dist', 'src', 'main', 'cli.js'), '--config', configFile];
    const out: Output = { stdout: '', stderr: '' };
    gateway = spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', LAUNCHER, 'launcher', ...argv], {
      cwd: appDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    gateway.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
    gateway.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => gateway?.once('exit', (code, signal) => resolve({ code, signal })));

    const listening = await waitFor(gateway, out, /"port":(\d+)[^\n]*"msg":"gateway listening"/, START_BOUND_MS);
    const base = `http://127.0.0.1:${listening[1]}`;
    check('starts as UID 65534 on a read-only filesystem without HOME, service-link variables ignored', true);
    const uid = gateway.pid === undefined ? '' : sh('ps', ['-o', 'uid=', '-p', String(gateway.pid)], ROOT).trim();
    check('the gateway process runs as UID 65534', uid === NOBODY, `uid ${uid}`);

    check('/health/live answers 200', (await poll(`${base}/health/live`, (s) => s === 200, 10_000)) === 200);
    check('/health/ready turns 200 after the initial catalog load', (await poll(`${base}/health/ready`, (s) => s === 200, 30_000)) === 200);

    const call = await fetch(`${base}/mcp/demo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'from a read-only container' } } }),
    });
    const answer = (await call.json()) as { result?: { content?: Array<{ text?: string }>; isError?: boolean } };
    check(
      'tools/call echo goes through the demo Tool Service',
      call.status === 200 && answer.result?.isError !== true && JSON.stringify(answer.result?.content ?? []).includes('from a read-only container'),
      JSON.stringify(answer),
    );

    // 5. SIGTERM → clean exit within the bound.
    const stopStart = Date.now();
    gateway.kill('SIGTERM');
    const result = await Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), STOP_BOUND_MS))]);
    const stoppedIn = Date.now() - stopStart;
    check(
      `SIGTERM → exit code 0 within ${STOP_BOUND_MS} ms`,
      result !== null && result.code === 0,
      result === null ? 'still running' : `code ${result.code} signal ${result.signal} after ${stoppedIn} ms\nstderr:\n${out.stderr}`,
    );
    if (result !== null) gateway = null;
    check('no read-only or permission error on stderr', !/EROFS|EACCES|EPERM|read-only file system/i.test(out.stderr), out.stderr);
  } finally {
    if (gateway?.pid !== undefined) gateway.kill('SIGKILL');
    await toolService.close();
    execFileSync('chmod', ['-R', 'u+w', scratch]);
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().then(
  () => {
    process.stdout.write(`container: ${passed} passed, ${failed} failed\n`);
    process.exit(failed === 0 ? 0 : 1);
  },
  (err: unknown) => {
    process.stderr.write(`test:container: ${err instanceof Error ? err.message : String(err)}\n`);
    process.stdout.write(`container: ${passed} passed, ${failed + 1} failed\n`);
    process.exit(1);
  },
);
