/**
 * The A/B's command line and arithmetic (bench/suite/ab.ts): arms as given,
 * clear errors for what cannot run, medians per arm and the median of
 * per-round ratios to the first arm.
 */
import { describe, expect, it } from 'vitest';
import type { MeasureResult } from '../../../dist/bench/harness.js';
import { AB_USAGE, abOptions, summarizeAb, type AbOptions } from '../../../dist/bench/suite/ab.js';

/** {@link abOptions} of a command line that is not `--help`. */
function parsed(argv: string[]): AbOptions {
  const o = abOptions(argv);
  if (o === 'help') throw new Error('parsed as --help');
  return o;
}

function result(cpuMicrosPerReq: number, extra: Partial<MeasureResult> = {}): MeasureResult {
  return {
    reqPerSec: 1000,
    p50Ms: 1,
    p99Ms: 2,
    non2xx: 0,
    statusCounts: {},
    errors: 0,
    total: 1000,
    durationSec: 1,
    cpuMicros: cpuMicrosPerReq * 1000,
    cpuMicrosPerReq,
    peakRssKb: 0,
    ...extra,
  };
}

describe('abOptions', () => {
  it('takes arms in order, a command keeping its own = and spaces, and comparators after them', () => {
    const o = parsed(['--arm', 'before=node --max-semi-space-size=1 /tmp/b/cli.js --x=1', '--arm', 'after = node cli.js', '--with', 'inline,floor-sharded', '--rounds', '2']);
    expect(o.arms).toEqual([
      { name: 'before', command: 'node --max-semi-space-size=1 /tmp/b/cli.js --x=1' },
      { name: 'after', command: 'node cli.js' },
      { name: 'inline', comparator: 'inline' },
      { name: 'floor-sharded', comparator: 'floor-sharded' },
    ]);
    expect(o).toMatchObject({ request: 'call', rounds: 2, durationSec: 6, warmupSec: 3, connections: 50 });
  });

  it('refuses what cannot be an A/B, naming the flag', () => {
    expect(() => abOptions(['--arm', 'a=node cli.js'])).toThrow(/at least two arms/);
    expect(() => abOptions(['--arm', 'node cli.js', '--arm', 'b=x'])).toThrow(/--arm: NAME=COMMAND/);
    expect(() => abOptions(['--arm', 'a=', '--arm', 'b=x'])).toThrow(/--arm: NAME=COMMAND/);
    expect(() => abOptions(['--arm', 'a=x', '--arm', 'a=y'])).toThrow(/two arms are named "a"/);
    expect(() => abOptions(['--arm', 'a=x', '--with', 'sdk'])).toThrow(/--with: one of inline, floor-sharded, floor-inline, bare/);
    expect(() => abOptions(['--arm', 'a=x', '--with', 'inline', '--request', 'list'])).toThrow(/--with inline: it serves tools\/call \(--request call\) only/);
    expect(() => abOptions(['--arm', 'a=x', '--with', 'bare'])).toThrow(/--with bare: it serves tools\/list \(--request list\) only/);
    expect(() => abOptions(['--arm', 'a=x', '--arm', 'b=y', '--request', 'initialize'])).toThrow(/--request: call or list/);
    expect(() => abOptions(['--arm', 'a=x', '--arm', 'b=y', '--rounds', '0'])).toThrow(/--rounds: an integer ≥ 1/);
    expect(() => abOptions(['--arm', 'a=x', '--arm', 'b=y', '--warmup=-1'])).toThrow(/--warmup: an integer ≥ 0/);
    expect(abOptions(['--arm', 'a=x', '--arm', 'b=y', '--warmup', '0'])).toMatchObject({ warmupSec: 0 });
    expect(() => abOptions(['--arm', 'a=x', '--arm', 'b=y', '--bogus'])).toThrow(/Unknown option '--bogus'/);
  });

  it('answers --help with the usage, whatever else is on the line', () => {
    expect(abOptions(['--help'])).toBe('help');
    expect(abOptions(['--arm', 'a=x', '-h'])).toBe('help');
    expect(AB_USAGE).toMatch(/bare \(tools\/list\)/);
  });

  it('takes bare uWS as the comparator of a tools/list A/B', () => {
    const o = parsed(['--arm', 'a=node cli.js', '--with', 'bare', '--request', 'list']);
    expect(o.arms).toEqual([
      { name: 'a', command: 'node cli.js' },
      { name: 'bare', comparator: 'bare' },
    ]);
    expect(o).toMatchObject({ request: 'list' });
  });
});

describe('summarizeAb', () => {
  it('gives each arm the median of its rounds and the median of its per-round ratios to the first arm', () => {
    // The machine slows down in round 3: the per-round ratio stays 0.8, the medians move.
    const rounds = [
      [result(20), result(16, { reqPerSec: 1200 })],
      [result(21), result(16.8, { reqPerSec: 1250 })],
      [result(30), result(24, { reqPerSec: 900, non2xx: 2, errors: 1 })],
    ];
    const [a, b] = summarizeAb(['a', 'b'], rounds);
    expect(a?.cpuMicrosPerReq).toBe(21);
    expect(a?.cpuVsFirst).toBe(1);
    expect(b?.cpuPerRound).toEqual([16, 16.8, 24]);
    expect(b?.cpuMicrosPerReq).toBeCloseTo(16.8);
    expect(b?.cpuVsFirst).toBeCloseTo(0.8);
    expect(b?.reqPerSec).toBe(1200);
    expect(b?.failures).toBe(3);
  });
});
