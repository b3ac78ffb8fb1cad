/**
 * The benchmark suite behind `npm run bench` (bench/run.ts) and
 * `npm run bench:quick` (bench/quick.ts): the gateway against baselines and
 * comparators measured in the same run, each server its own process.
 *
 * Servers (spawned by this process on `--node`, killed on exit):
 *  - the gateway, built, production config (log level warn), routes `bench`
 *    (50 tools), `list5` (5 tools) and `r00`…`r39` (5–50 tools) — and, for
 *    the auth rows, `bench-key` and `bench-jwt` (the `bench` catalog behind
 *    an API key and a JWT, bench/suite/auth.ts) — in front of
 *  - the echo Tool Service (bench/echo-tool-service.ts), also called directly:
 *    the floor for `tools/call`;
 *  - the bare uWebSockets.js server (bench/bare-uws.ts) answering a constant
 *    body of the same size as the gateway's answer — 0, 5 or 50 tools — the
 *    physical limit for `tools/list` and `initialize`;
 *  - the inline single-threaded gateway (bench/inline-gateway.ts): what the
 *    sharded design must beat on `tools/call`;
 *  - the MCP SDK's stateless Streamable HTTP server (bench/sdk-server.ts):
 *    the memory reference under `tools/call` load;
 *  - with `--compare-node`, a second gateway and inline gateway on that Node;
 *  - for the refresh-under-load workload only (started after the others are
 *    gone, so its refresh work never disturbs them): a second gateway with 40
 *    routes refreshed every 50 ms from an echo service started with
 *    `--churn`, measured with churn on and paused.
 *
 * Method: autocannon (programmatic, in this process), fixed connections and
 * duration, a discarded warm-up before every measured run, repeats
 * interleaved (order reversed every other repeat), medians reported. Latency
 * quantiles come from every response's own time. Server CPU per request is
 * user+system time of the server process (all threads) from /proc ÷
 * responses, split per thread for the gateway. Ratios to a reference are the
 * median over repeats of the ratio within a repeat.
 *
 * Modules (bench/suite/): options (flags), workloads (requests), auth (the
 * protected routes' config and credentials), probes (answer checks), servers
 * (start-up, runtimes), threads (per-thread CPU and memory), measure (one
 * run), summary (medians, ratios), targets, tables, environment, report
 * (files, console), and the phases main-phase, refresh-phase and sweep. This file is the entry and the watchdog.
 */
import { killAll } from './harness.js';
import { mainPhase } from './suite/main-phase.js';
import type { RunState } from './suite/measure.js';
import { parseOptions, type Options, type Preset } from './suite/options.js';
import { refreshPhase } from './suite/refresh-phase.js';
import { printSummary, writeOutputs } from './suite/report.js';
import { GATEWAY_READY_TIMEOUT_MS, resolveRuntime } from './suite/servers.js';
import { describe } from './suite/environment.js';
import { sweep } from './suite/sweep.js';
import { VARIANTS } from './suite/workloads.js';

export type { Preset } from './suite/options.js';

/** Rough upper bound of the run's wall time, for the watchdog. */
function budgetSec(o: Options): number {
  const perRun = o.warmupSec + o.durationSec + 3;
  const startSec = GATEWAY_READY_TIMEOUT_MS / 1000;
  if (o.sweep) return o.repeats * (2 * perRun + o.combos.length * (2 * perRun + startSec)) + 60;
  const runtimes = o.compareNode === undefined ? 1 : 2;
  const targetsPer: Record<string, number> = { list5: 1 + runtimes, list50: 1 + runtimes, call: 2 + 2 * runtimes, initialize: 1 + runtimes, mixed: runtimes, refresh: 4 };
  // A variant row (…-modern, …-auth, …-jwt) is one gateway target per runtime.
  const runs = o.workloads.reduce((a, w) => a + (targetsPer[w] ?? (VARIANTS[w] !== undefined ? runtimes : 0)), 0);
  // Each idle refresh run may wait ≤ 5 s for the swaps to stop.
  const settle = o.workloads.includes('refresh') ? 2 * 5 : 0;
  // The auth rows' own gateway is one more start.
  const gateways = runtimes + 1 + (o.workloads.some((w) => w.endsWith('-auth') || w.endsWith('-jwt')) ? 1 : 0);
  return o.repeats * (runs * perRun + settle) + gateways * startSec + 60;
}

/** Entry point of bench/run.ts and bench/quick.ts. */
export async function runCli(argv: string[], preset: Preset): Promise<void> {
  const o = parseOptions(argv, preset);
  const compare = o.compareNode;
  const runtimes = [resolveRuntime(o.node, compare !== undefined), ...(compare !== undefined ? [resolveRuntime(compare, true)] : [])];
  // Two binaries of the same version (e.g. testing the plumbing) still need distinct row names.
  const second = runtimes[1];
  if (second !== undefined && second.version === runtimes[0]?.version) second.tag += ' (2)';
  const state: RunState = { runs: [], skipped: new Map(), notes: [], started: new Date(), idleRssKb: new Map(), threadMemory: new Map(), runtimes };
  const title = preset === 'quick' ? 'bench:quick' : o.sweep ? 'bench --sweep' : 'bench';
  console.log(`# ${title} — ${describe(o, runtimes)}`);
  const budget = budgetSec(o);
  console.log(`(bounded: stops after ${Math.round(budget)} s whatever happens)`);
  const watchdog = setTimeout(() => {
    console.error(`${title} exceeded its ${Math.round(budget)} s budget; stopping`);
    if (o.write && state.runs.length > 0) console.error(`partial results: ${writeOutputs(o, state, true).join(', ')}`);
    void killAll().finally(() => process.exit(2));
  }, budget * 1000);
  watchdog.unref();
  try {
    if (o.sweep) await sweep(o, state);
    else {
      await mainPhase(o, state);
      await refreshPhase(o, state);
    }
    printSummary(o, state);
    if (o.write) console.log(`\nwritten: ${writeOutputs(o, state, false).join(', ')}`);
  } catch (err) {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exitCode = 1;
    if (o.write && state.runs.length > 0) console.error(`partial results: ${writeOutputs(o, state, true).join(', ')}`);
  } finally {
    clearTimeout(watchdog);
    await killAll();
  }
}
