/**
 * Same-run micro-bench of what a shard's {@link CallObserver} costs per
 * `tools/call` (issue 13): the access log at `log.accessSampleRatio` 0, 0.01
 * and 1, and the observer with tracing off against no observer at all.
 *
 * It runs the observer's four hooks for one call per event-loop turn (as a
 * shard sees calls: each answer arrives in its own socket callback, which is
 * what makes unbuffered log writes expensive), with a fixed busy-wait
 * standing in for the rest of the call, in turns of `--ms` per variant,
 * round after round, and reports the process CPU (all threads: the log
 * writes run on the libuv pool) per call above the no-observer variant of
 * the same round. Log lines go to stdout: redirect it to a file.
 *
 * Usage: node dist/bench/access-log-cost.js [--rounds 7] [--ms 1000] > /tmp/lines.log
 */
import { parseArgs } from 'node:util';
import type { CatalogTool } from '../src/shared/catalog/types.js';
import { createLogger } from '../src/shared/log.js';
import { ShardMetrics } from '../src/shared/metrics.js';
import { CallObserver, Observation, type ObservedCall } from '../src/workers/shard/call-observer.js';
import type { UpstreamResult } from '../src/workers/shard/upstream.js';
import { median } from './harness.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, ms: { type: 'string', default: '1000' } } });
const ROUNDS = Number(values.rounds);
const MS = Number(values.ms);
/** Stand-in for the rest of a call's work on the shard thread. */
const WORK_MS = 0.02;

const tool = { serviceId: 'echo', executionUrl: 'http://127.0.0.1:3001/tools/echo' } as CatalogTool;
const result = { cause: 'ok', isError: false, json: '{}' } as UpstreamResult;

function observer(ratio: number): CallObserver {
  return new CallObserver(0, new ShardMetrics(), createLogger('info', { thread: 'shard-0' }), null, ratio);
}

const variants: Array<{ name: string; observer: CallObserver | null }> = [
  { name: 'no observer', observer: null },
  { name: 'observer, access 0, tracing off', observer: observer(0) },
  { name: 'access 0.01', observer: observer(0.01) },
  { name: 'access 1', observer: observer(1) },
];

async function run(o: CallObserver | null): Promise<number> {
  const call: ObservedCall = { routeKey: 'bench', toolName: 'get_weather', requestId: '', traceparent: '', observation: new Observation() };
  let n = 0;
  const c0 = process.cpuUsage();
  const end = performance.now() + MS;
  while (performance.now() < end) {
    call.requestId = `a1b2c3d4-${(n++).toString(36)}`;
    if (o !== null) {
      o.received(call);
      o.upstreamStart(call, tool);
      o.upstreamDone(call, result);
      o.answered(call, 0, false);
    }
    const t = performance.now();
    while (performance.now() - t < WORK_MS);
    await new Promise((r) => setImmediate(r));
  }
  // Let the last buffered writes finish inside this variant's account.
  await new Promise((r) => setTimeout(r, 300));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

const extra = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  const row: number[] = [];
  for (const v of variants) row.push(await run(v.observer));
  const base = row[0] ?? Number.NaN;
  variants.forEach((v, i) => {
    extra.set(v.name, [...(extra.get(v.name) ?? []), (row[i] ?? Number.NaN) - base]);
  });
}
process.stderr.write(`CPU per call above "no observer" (same round), median of ${ROUNDS} rounds, one call per event-loop turn:\n`);
for (const v of variants.slice(1))
  process.stderr.write(
    `  ${v.name.padEnd(34)} ${median(extra.get(v.name) ?? [])
      .toFixed(2)
      .padStart(6)} µs\n`,
  );
