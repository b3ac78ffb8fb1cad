/**
 * `npm run test:conformance`: the official MCP conformance suite
 * (`@modelcontextprotocol/conformance`, pinned in suite.ts) against the built
 * gateway, twice — both protocol eras are served on every route:
 *
 * - **`default`**: every server scenario the suite lists, each in its own
 *   process (`conformance server --url … --scenario <name>`), at the wire the
 *   suite picks for it (2025-11-25 with the `initialize` handshake for the
 *   older scenarios, 2026-07-28 for the scenarios that revision introduced);
 * - **`requirements-2026-07-28`**: `conformance server --url …
 *   --requirements 2026-07-28`, one process: exactly the set that revision
 *   requires (and the not-scored ones it runs for visibility), all at the
 *   2026-07-28 wire.
 *
 * 1. Starts the conformance fixture Tool Service (test/fixtures/conformance-tool-service.ts)
 *    and the gateway from dist/ with one route, `conformance`, on 127.0.0.1:0
 *    (a short `catalog.refreshIntervalMs`, so a list change made by the
 *    fixture's trigger tool reaches `subscriptions/listen` within the suite's
 *    wait).
 * 2. Runs both; reads each scenario's `checks.json` (suite.ts: a pass needs a
 *    SUCCESS check and no FAILURE or WARNING).
 * 3. Compares each run with its section of test/conformance/expected-failures.json:
 *    a `mustPass` scenario that fails, an `expectedFailures` scenario that
 *    passes (stale baseline), or a scenario in neither list fails the run
 *    (exit 1). Prints one table row per scenario.
 *
 * Time is bounded: each scenario process of `default` is killed after
 * CONFORMANCE_SCENARIO_TIMEOUT_MS (default 120 s), the requirements run after
 * CONFORMANCE_REQUIREMENTS_TIMEOUT_MS (default 15 min), and no `default`
 * scenario starts after CONFORMANCE_TOTAL_TIMEOUT_MS (default 15 min).
 * CONFORMANCE_CONCURRENCY (default 4) scenarios run at once. `--run default`
 * or `--run requirements-2026-07-28` runs one of the two; positional
 * arguments restrict `default` to those scenarios (for local debugging; the
 * others are then not judged). Results stay in CONFORMANCE_RESULTS_DIR when
 * set, else in a temporary directory that is removed when both runs match.
 *
 * The gateway and the fixture are imported from dist/ (what `npm run build`
 * produced), wherever this file itself runs from.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { findChecks, lastLine, noVerdict, readChecks, requirementResults, runSuite, scenarioNames, SUITE_PACKAGE, type ScenarioOutcome } from './suite.js';

type GatewayModule = typeof import('../../src/main/gateway.js');
type LoadModule = typeof import('../../src/shared/config/load.js');
type FixtureModule = typeof import('../fixtures/conformance-tool-service.js');
type UwsLoaderModule = typeof import('../../src/main/uws.js');

const ROUTE = 'conformance';
/** The two runs and the arguments that select their scenarios. */
const RUNS = ['default', 'requirements-2026-07-28'] as const;
type RunName = (typeof RUNS)[number];

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

const SCENARIO_TIMEOUT_MS = envInt('CONFORMANCE_SCENARIO_TIMEOUT_MS', 120_000);
const TOTAL_TIMEOUT_MS = envInt('CONFORMANCE_TOTAL_TIMEOUT_MS', 15 * 60_000);
const REQUIREMENTS_TIMEOUT_MS = envInt('CONFORMANCE_REQUIREMENTS_TIMEOUT_MS', 15 * 60_000);
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

/** One run's section of test/conformance/expected-failures.json. */
interface RunBaseline {
  mustPass: string[];
  expectedFailures: Record<string, string>;
}

/** test/conformance/expected-failures.json. */
interface Baseline {
  suite: string;
  runs: Record<RunName, RunBaseline>;
}

function readBaseline(): Baseline {
  const b = JSON.parse(readFileSync(BASELINE_PATH, 'utf8')) as Partial<Baseline>;
  const problems: string[] = [];
  if (b.suite !== SUITE_PACKAGE) problems.push(`"suite" is ${JSON.stringify(b.suite)}, the runner pins ${SUITE_PACKAGE}`);
  for (const run of RUNS) {
    const r = b.runs?.[run];
    if (r === undefined) {
      problems.push(`runs["${run}"] is missing`);
      continue;
    }
    if (!Array.isArray(r.mustPass) || r.mustPass.some((s) => typeof s !== 'string')) problems.push(`runs["${run}"].mustPass must be an array of scenario names`);
    if (typeof r.expectedFailures !== 'object' || r.expectedFailures === null || Array.isArray(r.expectedFailures)) {
      problems.push(`runs["${run}"].expectedFailures must map scenario → reason`);
      continue;
    }
    for (const [name, reason] of Object.entries(r.expectedFailures)) {
      if (typeof reason !== 'string' || reason.trim() === '') problems.push(`runs["${run}"].expectedFailures.${name}: a reason is required`);
      if (r.mustPass?.includes(name)) problems.push(`runs["${run}"]: ${name} is both in mustPass and in expectedFailures`);
    }
  }
  if (problems.length > 0) throw new Error(`conformance: ${BASELINE_PATH} is invalid:\n  - ${problems.join('\n  - ')}`);
  return b as Baseline;
}

async function runScenario(scenario: string, url: string, resultsDir: string): Promise<ScenarioOutcome> {
  const outDir = join(resultsDir, scenario.replace(/\//g, '-'));
  mkdirSync(outDir, { recursive: true });
  const r = await runSuite(['server', '--url', url, '--scenario', scenario, '-o', outDir], SCENARIO_TIMEOUT_MS);
  writeFileSync(join(outDir, 'runner-stdout.txt'), r.stdout);
  writeFileSync(join(outDir, 'runner-stderr.txt'), r.stderr);
  const checksPath = findChecks(outDir);
  if (r.timedOut || checksPath === undefined) {
    return noVerdict(scenario, r.timedOut ? `timed out after ${SCENARIO_TIMEOUT_MS} ms` : `no checks.json (exit ${String(r.code)}): ${lastLine(r.stderr) || lastLine(r.stdout)}`);
  }
  return readChecks(scenario, checksPath);
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

/** `default`: every server scenario the suite lists, one process each, at the suite's default wire. */
async function runDefault(url: string, resultsDir: string, only: readonly string[], deadline: number): Promise<{ outcomes: ScenarioOutcome[]; listed: string[] }> {
  const r = await runSuite(['list', '--server'], LIST_TIMEOUT_MS);
  const listed = scenarioNames(r.stdout.slice(0, r.stdout.search(/^Client scenarios/m) >= 0 ? r.stdout.search(/^Client scenarios/m) : undefined));
  if (r.code !== 0 || listed.length === 0) {
    throw new Error(`conformance list failed (exit ${String(r.code)}${r.timedOut ? ', timed out' : ''}):\n${r.stdout}\n${r.stderr}`.slice(0, 4000));
  }
  let toRun = listed;
  if (only.length > 0) {
    const unknown = only.filter((s) => !listed.includes(s));
    if (unknown.length > 0) throw new Error(`unknown scenario(s): ${unknown.join(', ')} (the suite has: ${listed.join(', ')})`);
    toRun = listed.filter((s) => only.includes(s));
  }
  console.log(`conformance [default]: ${toRun.length} scenario(s), ${CONCURRENCY} at a time, ${SCENARIO_TIMEOUT_MS / 1000} s each at most`);
  const outcomes = await pool(
    toRun,
    CONCURRENCY,
    deadline,
    async (scenario) => {
      const started = Date.now();
      const o = await runScenario(scenario, url, join(resultsDir, 'default'));
      console.log(`  ${o.passed ? 'passed' : 'failed'}  ${scenario} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      return o;
    },
    (scenario) => noVerdict(scenario, `not run: CONFORMANCE_TOTAL_TIMEOUT_MS (${TOTAL_TIMEOUT_MS} ms) exhausted`),
  );
  return { outcomes, listed };
}

/** `requirements-2026-07-28`: the suite's own requirement set for the revision, one process. */
async function runRequirements(url: string, resultsDir: string, expected: readonly string[]): Promise<{ outcomes: ScenarioOutcome[]; listed: string[] }> {
  const outDir = join(resultsDir, 'requirements-2026-07-28');
  mkdirSync(outDir, { recursive: true });
  console.log(`conformance [requirements-2026-07-28]: one run of --requirements 2026-07-28, ${REQUIREMENTS_TIMEOUT_MS / 1000} s at most`);
  const r = await runSuite(['server', '--url', url, '--requirements', '2026-07-28', '-o', outDir], REQUIREMENTS_TIMEOUT_MS);
  writeFileSync(join(outDir, 'runner-stdout.txt'), r.stdout);
  writeFileSync(join(outDir, 'runner-stderr.txt'), r.stderr);
  // Every scenario the run wrote a result for, plus the ones the baseline expects (so a missing one is reported).
  const ran = [...r.stdout.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1] as string);
  const names = [...new Set([...ran, ...expected])];
  const results = requirementResults(outDir, names);
  const outcomes = ran.map((scenario) => {
    const checks = results.get(scenario);
    return checks === undefined ? noVerdict(scenario, r.timedOut ? `timed out after ${REQUIREMENTS_TIMEOUT_MS} ms` : `no checks.json (exit ${String(r.code)})`) : readChecks(scenario, checks);
  });
  for (const o of outcomes) console.log(`  ${o.passed ? 'passed' : 'failed'}  ${o.scenario}`);
  if (ran.length === 0) throw new Error(`conformance --requirements 2026-07-28 ran nothing (exit ${String(r.code)}): ${lastLine(r.stderr) || lastLine(r.stdout)}`);
  return { outcomes, listed: ran };
}

type Verdict = 'pass' | 'expected failure' | 'NEW FAILURE' | 'NEW PASS (stale baseline)' | 'UNCLASSIFIED' | 'MISSING FROM SUITE';

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

/** Prints one run's table against its baseline; returns the mismatches. */
function judge(run: RunName, baseline: RunBaseline, outcomes: readonly ScenarioOutcome[], listed: readonly string[], complete: boolean): number {
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
  if (complete) {
    for (const name of [...baseline.mustPass, ...Object.keys(baseline.expectedFailures)]) {
      if (!listed.includes(name)) rows.push({ scenario: name, expected: 'listed', actual: '-', checks: '-', verdict: 'MISSING FROM SUITE', note: 'in the baseline but not run by the suite' });
    }
  }
  const w = { scenario: Math.max(8, ...rows.map((r) => r.scenario.length)), verdict: Math.max(7, ...rows.map((r) => r.verdict.length)) };
  console.log(`\n[${run}]\n${pad('scenario', w.scenario)}  expected  actual  S/F/W    ${pad('verdict', w.verdict)}  note`);
  console.log(`${'-'.repeat(w.scenario)}  --------  ------  -------  ${'-'.repeat(w.verdict)}  ----`);
  for (const r of rows) {
    const note = r.note.length > 160 ? r.note.slice(0, 157) + '...' : r.note;
    console.log(`${pad(r.scenario, w.scenario)}  ${pad(r.expected, 8)}  ${pad(r.actual, 6)}  ${pad(r.checks, 7)}  ${pad(r.verdict, w.verdict)}  ${note}`);
  }
  const bad = rows.filter((r) => r.verdict !== 'pass' && r.verdict !== 'expected failure');
  console.log(
    `\nconformance [${run}]: ${rows.filter((r) => r.verdict === 'pass').length} passed, ${rows.filter((r) => r.verdict === 'expected failure').length} expected failures, ${bad.length} mismatches`,
  );
  for (const r of bad) console.log(`  - ${r.scenario}: ${r.verdict}${r.note ? ` (${r.note.slice(0, 300)})` : ''}`);
  return bad.length;
}

async function main(): Promise<number> {
  const deadline = Date.now() + TOTAL_TIMEOUT_MS;
  const baseline = readBaseline();
  const args = process.argv.slice(2);
  const runFlag = args.indexOf('--run');
  const selected = runFlag >= 0 ? args[runFlag + 1] : undefined;
  if (selected !== undefined && !(RUNS as readonly string[]).includes(selected)) throw new Error(`--run must be one of ${RUNS.join(', ')}`);
  const only = args.filter((a, i) => !a.startsWith('-') && !(runFlag >= 0 && i === runFlag + 1));

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
      // A list change (the fixture's test_trigger_tool_change) is published within ~200 ms: the suite waits 800–1500 ms for it.
      catalog: { source: 'static', refreshIntervalMs: 200, static: { routes: { [ROUTE]: [{ id: CONFORMANCE_SERVICE, baseUrl: svc.url }] } } },
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

    let mismatches = 0;
    if (selected === undefined || selected === 'default') {
      const { outcomes, listed } = await runDefault(url, resultsDir, only, deadline);
      mismatches += judge('default', baseline.runs.default, outcomes, listed, only.length === 0);
      if (only.length > 0) console.log(`conformance [default]: only ${only.join(', ')} were run; the rest of the baseline was not checked`);
    }
    if ((selected === undefined && only.length === 0) || selected === 'requirements-2026-07-28') {
      const section = baseline.runs['requirements-2026-07-28'];
      const { outcomes, listed } = await runRequirements(url, resultsDir, [...section.mustPass, ...Object.keys(section.expectedFailures)]);
      mismatches += judge('requirements-2026-07-28', section, outcomes, listed, true);
    }
    if (mismatches > 0) console.log(`\nconformance: MISMATCH with ${BASELINE_PATH}; per-scenario output and checks.json kept in ${resultsDir}`);
    ok = mismatches === 0;
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
