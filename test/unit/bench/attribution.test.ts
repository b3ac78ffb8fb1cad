/**
 * The bench's judging logic on fixed inputs: which thread group a kernel
 * thread's CPU goes to, how ratios pick their reference rows, and how the
 * target table decides met / not met.
 */
import { describe, expect, it } from 'vitest';
import type { Run, RunState } from '../../../dist/bench/suite/measure.js';
import { allSummaries, type Summary } from '../../../dist/bench/suite/summary.js';
import { targetChecks, targetsText } from '../../../dist/bench/suite/targets.js';
import { classify, splitCpu, type ThreadReport } from '../../../dist/bench/suite/threads.js';

const report = (tid: number, role: string): ThreadReport => {
  const mem = { heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0 };
  return { tid, role, threadId: tid, sampledAt: 0, now: mem, peak: mem };
};

describe('thread attribution', () => {
  it('Node 20 (every thread named "node"): main by pid, JS workers by report, the first 5 unnamed threads are the V8 platform', () => {
    const pid = 100;
    const tids = [100, 101, 102, 103, 104, 105, 106, 107, 120, 121];
    const comms = new Map(tids.map((t) => [t, 'node']));
    const reports = new Map([
      [120, report(120, 'shard-worker')],
      [121, report(121, 'refresh-worker')],
    ]);
    const groups = classify(pid, tids, comms, reports);
    expect([...groups]).toEqual([
      [100, 'main'],
      [101, 'V8 platform (GC, JIT)'],
      [102, 'V8 platform (GC, JIT)'],
      [103, 'V8 platform (GC, JIT)'],
      [104, 'V8 platform (GC, JIT)'],
      [105, 'V8 platform (GC, JIT)'],
      [106, 'other'],
      [107, 'other'],
      [120, 'shard'],
      [121, 'refresh'],
    ]);
  });

  it('without any report, unnamed late threads are flagged as possibly unreported workers', () => {
    const tids = [1, 2, 3, 4, 5, 6, 7];
    const groups = classify(1, tids, new Map(tids.map((t) => [t, 'node'])), new Map());
    expect(groups.get(7)).toBe('other (no thread-probe reports)');
  });

  it('Node ≥ 22 thread names: V8Worker, DelayedTaskSche, libuv-worker, a named Worker and an unnamed WorkerThread', () => {
    const comms = new Map([
      [10, 'MainThread'],
      [11, 'DelayedTaskSche'],
      [12, 'V8Worker'],
      [13, 'SignalInspector'],
      [14, 'libuv-worker'],
      [15, 'acceptor-1'],
      [16, 'WorkerThread'],
    ]);
    const groups = classify(10, comms.keys(), comms, new Map());
    expect(Object.fromEntries(groups)).toEqual({
      10: 'main',
      11: 'V8 platform (GC, JIT)',
      12: 'V8 platform (GC, JIT)',
      13: 'other',
      14: 'libuv pool',
      15: 'acceptor',
      16: 'other (no thread-probe reports)',
    });
  });

  it('splits CPU by group and puts what exited threads used into "exited / rounding"', () => {
    const before = new Map([
      [1, { comm: 'node', micros: 1000 }],
      [2, { comm: 'node', micros: 0 }],
      [9, { comm: 'node', micros: 0 }],
    ]);
    const after = new Map([
      [1, { comm: 'node', micros: 4000 }],
      [2, { comm: 'node', micros: 500 }],
      [9, { comm: 'node', micros: 2000 }],
    ]);
    const split = splitCpu(1, before, after, new Map([[9, report(9, 'shard-worker')]]), 6000);
    expect(split).toEqual([
      { group: 'main', threads: 1, micros: 3000 },
      { group: 'shard', threads: 1, micros: 2000 },
      { group: 'V8 platform (GC, JIT)', threads: 1, micros: 500 },
      { group: 'exited / rounding', threads: 0, micros: 500 },
    ]);
  });
});

function run(p: Partial<Run> & Pick<Run, 'workload' | 'role' | 'kind' | 'key' | 'runtime' | 'repeat'>): Run {
  return {
    reqPerSec: 1000,
    p50Ms: 1,
    p99Ms: 10,
    non2xx: 0,
    statusCounts: { 200: 1000 },
    errors: 0,
    total: 1000,
    durationSec: 1,
    cpuMicros: 1e5,
    cpuMicrosPerReq: 100,
    peakRssKb: 0,
    server: p.key,
    unexpected: 0,
    serverCores: 0,
    clientCores: 0,
    otherCores: 0,
    runPeakRssKb: 100 * 1024,
    ...p,
  };
}

function state(runs: Run[]): RunState {
  return { runs, skipped: new Map(), notes: [], started: new Date(0), idleRssKb: new Map(), threadMemory: new Map(), runtimes: [] };
}

describe('ratios and targets', () => {
  const callRuns = (gatewayCpu: number, gatewayRss: number): Run[] => [
    run({ workload: 'call', role: 'baseline', kind: 'echo', key: 'echo', runtime: 'v20', repeat: 1, cpuMicrosPerReq: 10 }),
    run({ workload: 'call', role: 'reference', kind: 'inline', key: 'inline', runtime: 'v20', repeat: 1, cpuMicrosPerReq: 60, reqPerSec: 10_000, p99Ms: 16 }),
    run({ workload: 'call', role: 'reference', kind: 'inline', key: 'inline-2', runtime: 'v24', repeat: 1, cpuMicrosPerReq: 40, reqPerSec: 10_000, p99Ms: 16 }),
    run({ workload: 'call', role: 'reference', kind: 'sdk', key: 'sdk', runtime: 'v20', repeat: 1, runPeakRssKb: 200 * 1024 }),
    run({ workload: 'call', role: 'gateway', kind: 'gateway', key: 'gateway', runtime: 'v20', repeat: 1, cpuMicrosPerReq: gatewayCpu, reqPerSec: 14_000, p99Ms: 12, runPeakRssKb: gatewayRss * 1024 }),
    run({ workload: 'call', role: 'gateway', kind: 'gateway', key: 'gateway-2', runtime: 'v24', repeat: 1, cpuMicrosPerReq: 30, reqPerSec: 14_000, p99Ms: 12 }),
  ];

  it("divides each row's peak RSS by the SDK server on the row's runtime, or by the only SDK row there is", () => {
    const sdk24 = run({ workload: 'call', role: 'reference', kind: 'sdk', key: 'sdk-2', runtime: 'v24', repeat: 1, runPeakRssKb: 400 * 1024 });
    const find = (rows: Summary[], key: string): Summary | undefined => rows.find((s) => s.key === key);
    const both = allSummaries(state([...callRuns(30, 100), sdk24]));
    // gateway-2 peaks at 100 MiB (run's default): ÷ 400 on v24, not ÷ 200 on v20.
    expect(find(both, 'gateway-2')?.rssVsSdk).toBeCloseTo(0.25);
    expect(find(both, 'inline-2')?.rssVsSdk).toBeCloseTo(0.25);
    expect(find(both, 'gateway')?.rssVsSdk).toBeCloseTo(0.5);
    expect(find(both, 'sdk-2')?.rssVsSdk).toBeUndefined();
    expect(find(allSummaries(state(callRuns(30, 100))), 'gateway-2')?.rssVsSdk).toBeCloseTo(0.5);
  });

  it('compares each gateway with the inline gateway on its own runtime', () => {
    const rows = allSummaries(state(callRuns(30, 100)));
    const find = (key: string): Summary | undefined => rows.find((s) => s.key === key);
    expect(find('gateway')?.inlineRatios?.cpuMicrosPerReq).toBeCloseTo(0.5);
    expect(find('gateway-2')?.inlineRatios?.cpuMicrosPerReq).toBeCloseTo(0.75);
    expect(find('gateway')?.ratios?.cpuMicrosPerReq).toBeCloseTo(3);
    expect(find('gateway')?.rssVsSdk).toBeCloseTo(0.5);
    expect(find('inline')?.inlineRatios).toBeUndefined();
  });

  it('marks each call target met or not met at its bound, per gateway', () => {
    const checks = targetChecks(allSummaries(state(callRuns(42, 130))));
    const status = (name: string, server: string): boolean | null | undefined => checks.find((c) => c.name === name && c.server === server)?.met;
    // 42 / 10 = 4.2× the Tool Service (bound 3.5×); 42 / 60 = 0.70× the inline gateway (bound 0.7×, inclusive).
    expect(status('tools/call: CPU/call', 'gateway')).toBe(false);
    expect(status('tools/call: CPU/call vs inline', 'gateway')).toBe(true);
    // 14k / 10k = 1.4× (≥ 1.3×); p99 12 / 16 = 0.75× (≤ 0.8×); RSS 130 / 200 = 0.65× (> 0.6×).
    expect(status('tools/call: req/s vs inline', 'gateway')).toBe(true);
    expect(status('tools/call: p99 vs inline', 'gateway')).toBe(true);
    expect(status('tools/call: peak RSS under load', 'gateway')).toBe(false);
    // Workloads not run are "not measured", never met.
    expect(status('mixed · 40 routes: CPU/req', 'gateway')).toBeNull();
    expect(status('tools/call: CPU/call vs inline', 'gateway-2')).toBe(false);
  });

  it("judges the gateway's budget over the acceptor + shard floor on its own runtime, at and past 1.3×", () => {
    const floors = (v20: number, v24: number): Run[] => [
      run({ workload: 'call', role: 'reference', kind: 'floor-sharded', key: 'floor-sharded', runtime: 'v20', repeat: 1, cpuMicrosPerReq: v20 }),
      run({ workload: 'call', role: 'reference', kind: 'floor-sharded', key: 'floor-sharded-2', runtime: 'v24', repeat: 1, cpuMicrosPerReq: v24 }),
    ];
    // Gateways: 39 µs on v20, 30 on v24 (callRuns).
    const rows = allSummaries(state([...callRuns(39, 100), ...floors(30, 20)]));
    expect(rows.find((s) => s.key === 'gateway')?.floorRatios?.cpuMicrosPerReq).toBeCloseTo(1.3);
    expect(rows.find((s) => s.key === 'gateway-2')?.floorRatios?.cpuMicrosPerReq).toBeCloseTo(1.5);
    // Only gateway rows are compared with the floor.
    expect(rows.find((s) => s.key === 'inline')?.floorRatios).toBeUndefined();
    const budget = (checks: ReturnType<typeof targetChecks>): Array<[string, boolean | null]> => checks.filter((c) => c.name === 'tools/call: CPU/call vs the floor').map((c) => [c.server, c.met]);
    expect(budget(targetChecks(rows))).toEqual([
      ['gateway', true],
      ['gateway-2', false],
    ]);
    // Without floor rows the budget is not measured, never met.
    expect(budget(targetChecks(allSummaries(state(callRuns(39, 100)))))).toEqual([
      ['gateway', null],
      ['gateway-2', null],
    ]);
  });

  it('judges the acceptor + shard floor of each runtime by every target against the inline gateway, at and past the bound', () => {
    const floor = (key: string, runtime: string, cpu: number, reqPerSec: number, p99Ms: number): Run =>
      run({ workload: 'call', role: 'reference', kind: 'floor-sharded', key, runtime, repeat: 1, cpuMicrosPerReq: cpu, reqPerSec, p99Ms });
    // Inline: 60 µs, 10k req/s, p99 16 ms on v20; 40 µs on v24. v20 floor: 0.70× CPU, 1.3× req/s, p99 0.8× (each at its bound).
    // v24 floor: 0.75× CPU, 1.29× req/s, p99 0.81× (each just past it).
    const checks = targetChecks(allSummaries(state([...callRuns(39, 100), floor('floor-sharded', 'v20', 42, 13_000, 12.8), floor('floor-sharded-2', 'v24', 30, 12_900, 12.96)])));
    const floorOf = (name: string, server: string): boolean | null | undefined => checks.find((c) => c.name === name && c.server === server)?.floor?.met;
    for (const name of ['tools/call: CPU/call vs inline', 'tools/call: req/s vs inline', 'tools/call: p99 vs inline']) {
      expect(floorOf(name, 'gateway')).toBe(true);
      expect(floorOf(name, 'gateway-2')).toBe(false);
    }
    expect(checks.find((c) => c.name === 'tools/call: CPU/call vs inline' && c.server === 'gateway-2')?.floor?.measured).toBe('0.75×');
    // Only targets against the inline gateway carry the floor's figure; without floor rows it is not measured.
    expect(checks.filter((c) => c.floor !== undefined).every((c) => c.name.endsWith('vs inline'))).toBe(true);
    expect(checks.find((c) => c.name === 'tools/call: CPU/call' && c.server === 'gateway')?.floor).toBeUndefined();
    const none = targetChecks(allSummaries(state(callRuns(39, 100))));
    expect(none.find((c) => c.name === 'tools/call: p99 vs inline')?.floor).toEqual({ measured: '–', met: null });
    expect(targetsText(checks, true)).toContain('| 0.75× (not met) |');
  });

  it('divides an auth row by the auth-free gateway named by refKey, and judges its budget only where it ran', () => {
    const runs = [...callRuns(40, 100), run({ workload: 'call-auth', role: 'gateway', kind: 'gateway', key: 'gateway-auth', refKey: 'gateway', runtime: 'v20', repeat: 1, cpuMicrosPerReq: 44 })];
    const rows = allSummaries(state(runs));
    const authRow = rows.find((s) => s.workload === 'call-auth');
    expect(authRow?.variantRatios?.cpuMicrosPerReq).toBeCloseTo(1.1);
    // "÷ base" of a variant row divides by its reference workload's baseline (the Tool Service: 10 µs).
    expect(authRow?.ratios?.cpuMicrosPerReq).toBeCloseTo(4.4);
    const budget = targetChecks(rows).filter((c) => c.name === 'tools/call · API key: CPU/call');
    expect(budget.map((c) => [c.server, c.met])).toEqual([['gateway-auth', true]]);
    const over = targetChecks(
      allSummaries(
        state([...callRuns(40, 100), run({ workload: 'call-auth', role: 'gateway', kind: 'gateway', key: 'gateway-auth', refKey: 'gateway', runtime: 'v20', repeat: 1, cpuMicrosPerReq: 44.4 })]),
      ),
    );
    expect(over.find((c) => c.name === 'tools/call · API key: CPU/call')?.met).toBe(false);
  });

  it('checks the mixed load against the committed 101.3 µs', () => {
    const mixed = (cpu: number): Run[] => [run({ workload: 'mixed', role: 'gateway', kind: 'gateway', key: 'gateway', runtime: 'v20', repeat: 1, cpuMicrosPerReq: cpu })];
    const met = (cpu: number): boolean | null | undefined => targetChecks(allSummaries(state(mixed(cpu)))).find((c) => c.name.startsWith('mixed'))?.met;
    expect(met(60)).toBe(true);
    expect(met(61)).toBe(false);
  });
});
