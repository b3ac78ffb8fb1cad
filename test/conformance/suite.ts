/**
 * The official MCP conformance suite as `test/conformance/run.ts` drives it:
 * the pinned package, one child process per invocation (`npx -y -p node@22
 * -p <suite> -- conformance …`, killed with its process group after a
 * timeout), and the reading of each scenario's `checks.json` into a verdict.
 *
 * A scenario **passes** when it recorded at least one SUCCESS check of its
 * own and no FAILURE or WARNING (the suite's own `--expected-failures` rule,
 * minus its leniency for scenarios that only reported INFO or SKIPPED: those
 * exercised nothing, so they are not counted as passes). The synthetic
 * `wire-schema-*` checks the suite adds to every scenario do not count as
 * the scenario's own success (a scenario that skipped every check still
 * sent valid messages).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The pinned suite (the 2026-07-28 requirement set ships with it). */
export const SUITE_PACKAGE = '@modelcontextprotocol/conformance@0.2.0-alpha.12';

/** Output of one child process. */
export interface ProcessResult {
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

const OUTPUT_CAP = 512 * 1024;

/** Runs `npx -y -p node@22 -p <suite> -- conformance <args>` in its own process group, killed after `timeoutMs`. */
export function runSuite(args: readonly string[], timeoutMs: number): Promise<ProcessResult> {
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

/** Scenario names of a listing (`  - name [versions]` lines). */
export function scenarioNames(listing: string): string[] {
  return [...listing.matchAll(/^\s+-\s+([a-z0-9][a-z0-9/-]*)\b/gm)].map((m) => m[1] as string);
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
export interface ScenarioOutcome {
  scenario: string;
  passed: boolean;
  counts: { success: number; failure: number; warning: number; other: number };
  /** Why it did not pass (the failing checks, a timeout, missing results). */
  note: string;
}

/** A scenario that produced no verdict (timeout, crash, not run). */
export function noVerdict(scenario: string, note: string): ScenarioOutcome {
  return { scenario, passed: false, counts: { success: 0, failure: 0, warning: 0, other: 0 }, note };
}

/** Reads one scenario's checks.json into an outcome. */
export function readChecks(scenario: string, checksPath: string): ScenarioOutcome {
  let checks: Check[];
  try {
    checks = JSON.parse(readFileSync(checksPath, 'utf8')) as Check[];
  } catch (err) {
    return noVerdict(scenario, `unreadable checks.json: ${(err as Error).message}`);
  }
  const counts = { success: 0, failure: 0, warning: 0, other: 0 };
  const problems: string[] = [];
  let own = 0;
  for (const c of checks) {
    if (c.status === 'SUCCESS' && !(c.id ?? '').startsWith('wire-schema-')) own++;
    if (c.status === 'SUCCESS') counts.success++;
    else if (c.status === 'FAILURE') counts.failure++;
    else if (c.status === 'WARNING') counts.warning++;
    else counts.other++;
    if (c.status === 'FAILURE' || c.status === 'WARNING') problems.push(`${c.status} ${c.id ?? c.name ?? '?'}: ${c.errorMessage ?? c.description ?? ''}`.trim());
  }
  const passed = own > 0 && counts.failure === 0 && counts.warning === 0;
  const note = own === 0 && problems.length === 0 ? `no SUCCESS check of its own (${counts.other} INFO/SKIPPED): not counted as a pass` : problems.join(' | ');
  return { scenario, passed, counts, note };
}

/** The first `checks.json` under `dir`. */
export function findChecks(dir: string): string | undefined {
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

/**
 * The per-scenario result directories of one `--requirements` run
 * (`server-<scenario>-<timestamp>/checks.json`), by scenario name; when a
 * scenario ran twice the later directory wins.
 */
export function requirementResults(dir: string, scenarios: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  const dirs = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  // Longest names first, so `tools-call-with-progress` is not taken for `tools-call`.
  const byLength = [...scenarios].sort((a, b) => b.length - a.length);
  for (const name of dirs) {
    const scenario = byLength.find((s) => name.startsWith(`server-${s.replace(/\//g, '-')}-2`));
    const checks = join(dir, name, 'checks.json');
    if (scenario !== undefined && existsSync(checks)) out.set(scenario, checks);
  }
  return out;
}

/** The last meaningful line of a process output (for short notes). */
export function lastLine(text: string): string {
  const lines = text
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.includes('npm warn'));
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}
