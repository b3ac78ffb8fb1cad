/**
 * The A/B's command line and its arithmetic (bench/ab.ts runs it): arms,
 * rounds, and per arm the medians of its rounds and the median of its
 * per-round ratios to the first arm.
 */
import { parseArgs } from 'node:util';
import { median, type MeasureResult } from '../harness.js';
import { COMPARATORS, type Comparator } from './servers.js';

/** One arm: a gateway command, or one of the bench's comparators. */
export type Arm = { name: string; command: string } | { name: Comparator; comparator: Comparator };

export interface AbOptions {
  arms: Arm[];
  request: 'call' | 'list';
  rounds: number;
  durationSec: number;
  warmupSec: number;
  connections: number;
}

/** The MCP request each `--request` value stands for. */
const SERVES = { call: 'tools/call', list: 'tools/list' } as const;

export const AB_USAGE = `usage: node dist/bench/ab.js --arm NAME=COMMAND [--arm NAME=COMMAND …] [--with COMPARATOR,…]
        [--request call|list] [--rounds 6] [--duration 6] [--warmup 3] [--connections 50]
  --arm NAME=COMMAND  a gateway command as for BENCH_GATEWAY_CMD ({config}/{port} filled, else --config FILE appended)
  --with LIST         comparators as arms: ${Object.entries(COMPARATORS)
    .map(([name, c]) => `${name} (${SERVES[c.serves]})`)
    .join(', ')}
  --request KIND      the request every arm serves: tools/call (call) or tools/list of 50 tools (list)
  the first arm is the base of the ratios; at least two arms`;

/** Parses the command line (`'help'` for `--help`); throws a message naming the bad flag. */
export function abOptions(argv: string[]): AbOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      arm: { type: 'string', multiple: true },
      with: { type: 'string' },
      request: { type: 'string' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return 'help';
  const count = (name: string, raw: string | undefined, fallback: number, min: number): number => {
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name}: an integer ≥ ${min}, got ${String(raw)}`);
    return n;
  };
  const arms: Arm[] = [];
  for (const spec of values.arm ?? []) {
    const eq = spec.indexOf('=');
    const name = eq < 0 ? '' : spec.slice(0, eq).trim();
    const command = eq < 0 ? '' : spec.slice(eq + 1).trim();
    if (name === '' || command === '') throw new Error(`--arm: NAME=COMMAND, got ${JSON.stringify(spec)}`);
    arms.push({ name, command });
  }
  for (const raw of values.with === undefined ? [] : values.with.split(',')) {
    const name = raw.trim();
    if (!(name in COMPARATORS)) throw new Error(`--with: one of ${Object.keys(COMPARATORS).join(', ')}, got ${JSON.stringify(name)}`);
    arms.push({ name: name as Comparator, comparator: name as Comparator });
  }
  const names = arms.map((a) => a.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) throw new Error(`two arms are named ${JSON.stringify(twice)}`);
  if (arms.length < 2) throw new Error('an A/B needs at least two arms (--arm NAME=COMMAND, --with COMPARATOR)');
  const request = values.request ?? 'call';
  if (request !== 'call' && request !== 'list') throw new Error(`--request: call or list, got ${JSON.stringify(request)}`);
  for (const a of arms) {
    if ('comparator' in a && COMPARATORS[a.comparator].serves !== request) {
      const serves = COMPARATORS[a.comparator].serves;
      throw new Error(`--with ${a.name}: it serves ${SERVES[serves]} (--request ${serves}) only`);
    }
  }
  return {
    arms,
    request,
    rounds: count('rounds', values.rounds, 6, 1),
    durationSec: count('duration', values.duration, 6, 1),
    warmupSec: count('warmup', values.warmup, 3, 0),
    connections: count('connections', values.connections, 50, 1),
  };
}

/** One arm's figures over the rounds. */
export interface ArmSummary {
  name: string;
  /** CPU µs per request of each round, in round order. */
  cpuPerRound: number[];
  cpuMicrosPerReq: number;
  reqPerSec: number;
  p99Ms: number;
  /** Median of per-round ratios to the first arm (1 for the first arm). */
  cpuVsFirst: number;
  /** Non-2xx answers and connection errors over all rounds (anything but 0 spoils the arm). */
  failures: number;
}

/** Medians per arm and per-round ratios to the first arm; `rounds[r][a]` is arm a's result in round r. */
export function summarizeAb(names: string[], rounds: MeasureResult[][]): ArmSummary[] {
  return names.map((name, a) => {
    const mine = rounds.map((r) => r[a]).filter((m): m is MeasureResult => m !== undefined);
    const ratios = rounds.map((r) => (r[a]?.cpuMicrosPerReq ?? Number.NaN) / (r[0]?.cpuMicrosPerReq ?? Number.NaN));
    return {
      name,
      cpuPerRound: mine.map((m) => m.cpuMicrosPerReq),
      cpuMicrosPerReq: median(mine.map((m) => m.cpuMicrosPerReq)),
      reqPerSec: median(mine.map((m) => m.reqPerSec)),
      p99Ms: median(mine.map((m) => m.p99Ms)),
      cpuVsFirst: median(ratios),
      failures: mine.reduce((s, m) => s + m.non2xx + m.errors, 0),
    };
  });
}
