/**
 * `npm run test:conformance`: the official MCP conformance suite
 * (`@modelcontextprotocol/conformance`, server scenarios) against the built
 * gateway.
 *
 * 1. Starts the conformance fixture Tool Service (test/fixtures/conformance-tool-service.ts)
 *    and the gateway from dist/ with one route, `conformance`, on 127.0.0.1:0.
 * 2. Lists the suite's server scenarios, then runs each one in its own process:
 *    `npx -y -p node@22 -p @modelcontextprotocol/conformance@<v> -- conformance server
 *    --url http://localhost:<port>/mcp/conformance --scenario <name> -o <dir>`
 *    (the suite needs Node 22; npx brings it without changing the project's Node).
 * 3. Reads each scenario's `checks.json`: a scenario passes when it has checks
 *    and none is FAILURE or WARNING (the rule of the suite's own
 *    `--expected-failures` baseline).
 * 4. Compares with test/conformance/expected-failures.json: a `mustPass` scenario
 *    that fails, an `expectedFailures` scenario that passes (stale baseline), or
 *    a scenario in neither list fails the run (exit 1). Prints one table row per
 *    scenario; exits 0 when everything matches.
 *
 * Time is bounded: each scenario process is killed after
 * CONFORMANCE_SCENARIO_TIMEOUT_MS (default 120 s), and no scenario starts after
 * CONFORMANCE_TOTAL_TIMEOUT_MS (default 15 min). CONFORMANCE_CONCURRENCY
 * (default 4) scenarios run at once. Positional arguments restrict the run to
 * those scenarios (for local debugging; the others are then not judged).
 * Results stay in CONFORMANCE_RESULTS_DIR when set, else in a temporary
 * directory that is removed when the run matches the baseline.
 *
 * The gateway and the fixture are imported from dist/ (what `npm run build`
 * produced), wherever this file itself runs from.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type GatewayModule = typeof import('../../src/main/gateway.js');
type LoadModule = typeof import('../../src/shared/config/load.js');
type FixtureModule = typeof import('../fixtures/conformance-tool-service.js');
type UwsLoaderModule = typeof import('../../src/main/uws.js');

const SUITE_PACKAGE = '@modelcontextprotocol/conformance@0.1.16';
const ROUTE = 'conformance';

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

const SCENARIO_TIMEOUT_MS = envInt('CONFORMANCE_SCENARIO_TIMEOUT_MS', 120_000);
const TOTAL_TIMEOUT_MS = envInt('CONFORMANCE_TOTAL_TIMEOUT_MS', 15 * 60_000);
/** `list` is the first npx call: on a clean machine it downloads Node 22 and the suite. */
const LIST_TIMEOUT_MS = envInt('CONFORMANCE_LIST_TIMEOUT_MS', 5 * 60_000);
const CONCURRENCY = envInt('CONFORMANCE_CONCURRENCY', 4);

/** The repository root: the nearest ancestor with package.json (this file runs from test/ or dist/test/). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('conformance: cannot find the repository root (package.json)');
    dir = parent;
  }
}

const ROOT = repoRoot();
/** CONFORMANCE_BASELINE overrides the baseline file (to check the runner's own mismatch detection). */
const BASELINE_PATH = process.env['CONFORMANCE_BASELINE'] || join(ROOT, 'test', 'conformance', 'expected-failures.json');

async function importBuilt<T>(relative: string): Promise<T> {
  const file = join(ROOT, 'dist', relative);
  if (!existsSync(file)) throw new Error(`conformance: ${file} is missing; run \`npm run build\` first`);
  return (await import(pathToFileURL(file).href)) as T;
}

/** test/conformance/expected-failures.json. */
interface Baseline {
  suite: string;
  mustPass: string[];
  expectedFailures: Record<string, string>;
}

function readBaseline(): Baseline {
  const b = JSON.parse(readFileSync(BASELINE_PATH, 'utf8')) as Partial<Baseline>;
  const problems: string[] = [];
  if (b.suite !== SUITE_PACKAGE) problems.push(`"suite" is ${JSON.stringify(b.suite)}, the runner pins ${SUITE_PACKAGE}`);
  if (!Array.isArray(b.mustPass) || b.mustPass.some((s) => typeof s !== 'string')) problems.push('"mustPass" must be an array of scenario names');
  if (typeof b.expectedFailures !== 'object' || b.expectedFailures === null || Array.isArray(b.expectedFailures)) problems.push('"expectedFailures" must map scenario → reason');
  else {
    for (const [name, reason] of Object.entries(b.expectedFailures)) {
      if (typeof reason !== 'string' || reason.trim() === '') problems.push(`expectedFailures.${name}: a reason is required`);
      if (b.mustPass?.includes(name)) problems.push(`${name} is both in mustPass and in expectedFailures`);
    }
  }
  if (problems.length > 0) throw new Error(`conformance: ${BASELINE_PATH} is invalid:\n  - ${problems.join('\n  - ')}`);
  return b as Baseline;
}

/** Output of one child process. */
interface ProcessResult {
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

const OUTPUT_CAP = 256 * 1024;

/** Runs `npx -y -p node@22 -p <suite> -- conformance <args>` in its own process group, killed after `timeoutMs`. */
function runSuite(args: readonly string[], timeoutMs: number): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const child = spawn('npx', ['-y', '-p', 'node@22', '-p', SUITE_PACKAGE, '--', 'conformance', ...args], {
      cwd: tmpdir(),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (c: Buffer) => {
      if (stdout.length < OUTPUT_CAP) stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < OUTPUT_CAP) stderr += c.toString('utf8');
    });
    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    child.on('error', (err) => {
      stderr += `\nspawn failed: ${err.message}`;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      // npx may leave the suite's process behind when it is killed; the group kill covers it.
      if (timedOut) killGroup();
      resolve({ code, timedOut, stdout, stderr });
    });
  });
}

/** Server scenario names from `conformance list --server` (`  - name [versions]`). */
async function listScenarios(): Promise<string[]> {
  const r = await runSuite(['list', '--server'], LIST_TIMEOUT_MS);
  const names = [...r.stdout.matchAll(/^\s+-\s+([a-z0-9][a-z0-9-]*)\b/gm)].map((m) => m[1] as string);
  if (r.code !== 0 || names.length === 0) {
    throw new Error(`conformance list failed (exit ${String(r.code)}${r.timedOut ? ', timed out' : ''}):\n${r.stdout}\n${r.stderr}`.slice(0, 4000));
  }
  return names;
}

/** One check of a scenario's checks.json. */
interface Check {
  id?: string;
  name?: string;
  description?: string;
  status?: string;
  errorMessage?: string;
}

/** What happened to one scenario. */
interface ScenarioOutcome {
  scenario: string;
  passed: boolean;
  counts: { success: number; failure: number; warning: number; info: number };
  /** Why it did not pass (first failure/warning messages, a timeout, missing results). */
  note: string;
  exitCode: number | null;
  seconds: number;
}

function findChecks(dir: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = findChecks(path);
      if (found) return found;
    } else if (entry.name === 'checks.json') return path;
  }
  return undefined;
}

async function runScenario(scenario: string, url: string, resultsDir: string): Promise<ScenarioOutcome> {
  const started = Date.now();
  const outDir = join(resultsDir, scenario);
  mkdirSync(outDir, { recursive: true });
  const r = await runSuite(['server', '--url', url, '--scenario', scenario, '-o', outDir], SCENARIO_TIMEOUT_MS);
  writeFileSync(join(outDir, 'runner-stdout.txt'), r.stdout);
  writeFileSync(join(outDir, 'runner-stderr.txt'), r.stderr);
  const seconds = (Date.now() - started) / 1000;
  const counts = { success: 0, failure: 0, warning: 0, info: 0 };
  const checksPath = findChecks(outDir);
  if (r.timedOut || checksPath === undefined) {
    const why = r.timedOut ? `timed out after ${SCENARIO_TIMEOUT_MS} ms` : `no checks.json (exit ${String(r.code)}): ${lastLine(r.stderr) || lastLine(r.stdout)}`;
    return { scenario, passed: false, counts, note: why, exitCode: r.code, seconds };
  }
  let checks: Check[];
  try {
    checks = JSON.parse(readFileSync(checksPath, 'utf8')) as Check[];
  } catch (err) {
    return { scenario, passed: false, counts, note: `unreadable checks.json: ${(err as Error).message}`, exitCode: r.code, seconds };
  }
  const problems: string[] = [];
  for (const c of checks) {
    if (c.status === 'SUCCESS') counts.success++;
    else if (c.status === 'FAILURE') counts.failure++;
    else if (c.status === 'WARNING') counts.warning++;
    else counts.info++;
    if (c.status === 'FAILURE' || c.status === 'WARNING') problems.push(`${c.status} ${c.id ?? c.name ?? '?'}: ${c.errorMessage ?? c.description ?? ''}`.trim());
  }
  const passed = checks.length > 0 && counts.failure === 0 && counts.warning === 0;
  // The CLI's own exit code (failures only) must agree with the checks it wrote.
  if (passed && r.code !== 0) problems.push(`the suite exited ${String(r.code)} although every check passed`);
  return {
    scenario,
    passed: passed && r.code === 0,
    counts,
    note: checks.length === 0 ? 'no checks recorded' : problems.join(' | '),
    exitCode: r.code,
    seconds,
  };
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n').filter((l) => l.trim() !== '' && !l.includes('npm warn'));
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}

/** Runs `tasks` with at most `limit` at once; tasks not started before `deadline` resolve through `late`. */
async function pool<T, R>(items: readonly T[], limit: number, deadline: number, task: (item: T) => Promise<R>, late: (item: T) => R): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      const item = items[i] as T;
      results[i] = Date.now() > deadline ? late(item) : await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, () => worker()));
  return results;
}

type Verdict = 'pass' | 'expected failure' | 'NEW FAILURE' | 'NEW PASS (stale baseline)' | 'UNCLASSIFIED' | 'MISSING FROM SUITE';

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

async function main(): Promise<number> {
  const deadline = Date.now() + TOTAL_TIMEOUT_MS;
  const baseline = readBaseline();
  const only = process.argv.slice(2).filter((a) => !a.startsWith('-'));

  const { startGateway } = await importBuilt<GatewayModule>('src/main/gateway.js');
  const { validateConfig } = await importBuilt<LoadModule>('src/shared/config/load.js');
  const { startConformanceToolService, CONFORMANCE_SERVICE } = await importBuilt<FixtureModule>('test/fixtures/conformance-tool-service.js');
  const { loadedUwsBuild, runtimeDescription } = await importBuilt<UwsLoaderModule>('src/main/uws.js');

  const keepResults = process.env['CONFORMANCE_RESULTS_DIR'] !== undefined && process.env['CONFORMANCE_RESULTS_DIR'] !== '';
  const resultsDir = keepResults ? (process.env['CONFORMANCE_RESULTS_DIR'] as string) : mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  mkdirSync(resultsDir, { recursive: true });

  const svc = await startConformanceToolService({ host: '127.0.0.1', port: 0 });
  const gw = await startGateway(
    validateConfig({
      server: { host: '127.0.0.1', port: 0 },
      workers: { shards: 1 },
      log: { level: 'warn' },
      catalog: { source: 'static', static: { routes: { [ROUTE]: [{ id: CONFORMANCE_SERVICE, baseUrl: svc.url }] } } },
    }),
  );
  let ok = false;
  try {
    await gw.initialLoad();
    if (gw.readiness().status !== 200) throw new Error(`gateway not ready after the initial load: ${gw.readiness().body}`);
    // `localhost`, not 127.0.0.1: dns-rebinding-protection requires a localhost URL and sends Host: localhost:<port>.
    const url = `http://localhost:${gw.port}/mcp/${ROUTE}`;
    console.log(`conformance: ${SUITE_PACKAGE} against ${url} (fixture Tool Service ${svc.url}); results in ${resultsDir}`);
    // The gateway runs in this process: name its runtime, and hold it to the one CI pinned for this pass (.ci/run).
    const uws = loadedUwsBuild()?.release ?? 'none';
    console.log(`conformance: gateway on ${runtimeDescription()} with ${uws}`);
    const pinnedUws = process.env['MCP_TEST_EXPECT_UWS'];
    if (pinnedUws && pinnedUws !== uws) throw new Error(`the gateway runs ${uws}, but MCP_TEST_EXPECT_UWS pins ${pinnedUws}`);

    const listed = await listScenarios();
    const classified = new Set([...baseline.mustPass, ...Object.keys(baseline.expectedFailures)]);
    let toRun = listed;
    if (only.length > 0) {
      const unknown = only.filter((s) => !listed.includes(s));
      if (unknown.length > 0) throw new Error(`unknown scenario(s): ${unknown.join(', ')} (the suite has: ${listed.join(', ')})`);
      toRun = listed.filter((s) => only.includes(s));
    }
    console.log(`conformance: running ${toRun.length} scenario(s), ${CONCURRENCY} at a time, ${SCENARIO_TIMEOUT_MS / 1000} s each at most\n`);

    const outcomes = await pool(
      toRun,
      CONCURRENCY,
      deadline,
      async (scenario) => {
        const o = await runScenario(scenario, url, resultsDir);
        console.log(`  ${o.passed ? 'passed' : 'failed'}  ${scenario} (${o.seconds.toFixed(1)} s)`);
        return o;
      },
      (scenario): ScenarioOutcome => ({
        scenario,
        passed: false,
        counts: { success: 0, failure: 0, warning: 0, info: 0 },
        note: `not run: CONFORMANCE_TOTAL_TIMEOUT_MS (${TOTAL_TIMEOUT_MS} ms) exhausted`,
        exitCode: null,
        seconds: 0,
      }),
    );

    const rows: Array<{ scenario: string; expected: string; actual: string; checks: string; verdict: Verdict; note: string }> = [];
    for (const o of outcomes) {
      const expectedPass = baseline.mustPass.includes(o.scenario);
      const expectedFail = o.scenario in baseline.expectedFailures;
      let verdict: Verdict;
      if (!expectedPass && !expectedFail) verdict = 'UNCLASSIFIED';
      else if (expectedPass) verdict = o.passed ? 'pass' : 'NEW FAILURE';
      else verdict = o.passed ? 'NEW PASS (stale baseline)' : 'expected failure';
      rows.push({
        scenario: o.scenario,
        expected: expectedPass ? 'pass' : expectedFail ? 'fail' : '?',
        actual: o.passed ? 'pass' : 'fail',
        checks: `${o.counts.success}/${o.counts.failure}/${o.counts.warning}`,
        verdict,
        note: verdict === 'expected failure' ? (baseline.expectedFailures[o.scenario] ?? '').split(':')[0] + ': ' + o.note : o.note,
      });
    }
    if (only.length === 0) {
      for (const name of classified) {
        if (!listed.includes(name)) rows.push({ scenario: name, expected: 'listed', actual: '-', checks: '-', verdict: 'MISSING FROM SUITE', note: 'in the baseline but not offered by the suite' });
      }
    }

    const w = { scenario: Math.max(8, ...rows.map((r) => r.scenario.length)), verdict: Math.max(7, ...rows.map((r) => r.verdict.length)) };
    console.log(`\n${pad('scenario', w.scenario)}  expected  actual  S/F/W    ${pad('verdict', w.verdict)}  note`);
    console.log(`${'-'.repeat(w.scenario)}  --------  ------  -------  ${'-'.repeat(w.verdict)}  ----`);
    for (const r of rows) {
      const note = r.note.length > 160 ? r.note.slice(0, 157) + '...' : r.note;
      console.log(`${pad(r.scenario, w.scenario)}  ${pad(r.expected, 8)}  ${pad(r.actual, 6)}  ${pad(r.checks, 7)}  ${pad(r.verdict, w.verdict)}  ${note}`);
    }
    const bad = rows.filter((r) => r.verdict !== 'pass' && r.verdict !== 'expected failure');
    const passedCount = rows.filter((r) => r.verdict === 'pass').length;
    const expectedCount = rows.filter((r) => r.verdict === 'expected failure').length;
    if (only.length > 0) console.log(`\nconformance: only ${only.join(', ')} were run (positional arguments); the rest of the baseline was not checked`);
    console.log(`\nconformance: ${passedCount} passed, ${expectedCount} expected failures, ${bad.length} mismatches`);
    if (bad.length > 0) {
      console.log('conformance: MISMATCH with test/conformance/expected-failures.json:');
      for (const r of bad) console.log(`  - ${r.scenario}: ${r.verdict}${r.note ? ` (${r.note.slice(0, 300)})` : ''}`);
      console.log(`conformance: per-scenario output and checks.json kept in ${resultsDir}`);
    }
    ok = bad.length === 0;
    return ok ? 0 : 1;
  } finally {
    await gw.close();
    await svc.close();
    if (ok && !keepResults) rmSync(resultsDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('conformance: run failed:', err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
