/**
 * The bench's knobs: command-line flags, each with a BENCH_* (or MCP_BENCH_*)
 * environment fallback, validated once into an {@link Options} object.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { VARIANTS, WORKLOADS, type WorkloadId } from './workloads.js';

/** `full` is `npm run bench`, `quick` is `npm run bench:quick`. */
export type Preset = 'full' | 'quick';

/** One gateway thread layout of a sweep. */
export interface Combo {
  acceptors: number;
  shards: number;
}

/** Every knob of a run, validated. */
export interface Options {
  preset: Preset;
  connections: number;
  durationSec: number;
  warmupSec: number;
  repeats: number;
  acceptors: number | undefined;
  shards: number | undefined;
  sweep: boolean;
  combos: Combo[];
  workloads: WorkloadId[];
  write: boolean;
  /** Node binary every server runs on (default: the one running the bench). */
  node: string;
  /** A second Node binary: the gateway and the inline gateway also run on it, side by side. */
  compareNode: string | undefined;
}

/** The `--help` text. */
export const USAGE = `usage: node dist/bench/run.js [options]   (quick: node dist/bench/quick.js [options])
  --connections N   autocannon connections (BENCH_CONNECTIONS, default 50)
  --duration S      measured seconds per run (BENCH_DURATION, default 5; quick 4)
  --warmup S        discarded warm-up seconds before each run (BENCH_WARMUP, default 1)
  --repeats N       interleaved repeats, medians reported (BENCH_REPEATS, default 3; quick 1)
  --acceptors N     gateway workers.acceptors (BENCH_ACCEPTORS, default: the gateway's default)
  --shards M        gateway workers.shards (BENCH_SHARDS, default: the gateway's default)
  --only LIST       workloads, comma-separated: ${WORKLOADS.join(',')} (quick: list50,call);
                    a variant (…-modern, …-auth, …-jwt) also runs the row it is divided by (list50 or call)
  --node PATH       Node binary the servers run on (MCP_BENCH_NODE; default: this bench's node)
  --compare-node PATH
                    also run the gateway and its tools/call comparators (inline gateway,
                    floors, SDK server) on this Node binary, in the same run, reported side
                    by side (MCP_BENCH_COMPARE_NODE)
  --sweep           instead: tools/list 50 + tools/call for several acceptors×shards combos
  --combos LIST     sweep combos as AxS, e.g. 1x1,1x2,2x2 (BENCH_COMBOS; default from the core count)
  --no-write        print only; do not write bench/results or docs/bench (quick never writes)
Env: BENCH_KEEP_TMP=1 keeps server logs; BENCH_GATEWAY_CMD overrides the gateway command
({config} and {port} substituted; --config <file> appended when {config} is absent; the
--node/--compare-node choice does not apply to it).`;

/** A number from a flag or variable, or `fallback` when unset; throws naming the knob. */
export function positive(name: string, raw: string | undefined, fallback: number, min: number, integer: boolean): number {
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new Error(`${name}: expected ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(raw)}`);
  return n;
}

function defaultCombos(): Combo[] {
  const cores = availableParallelism();
  const pow2 = (limit: number): number[] => [1, 2, 4, 8, 16].filter((n) => n <= Math.max(2, limit));
  const combos: Combo[] = [];
  for (const acceptors of pow2(Math.floor(cores / 2))) for (const shards of pow2(cores - 1)) combos.push({ acceptors, shards });
  return combos;
}

function parseCombos(raw: string | undefined): Combo[] {
  if (raw === undefined || raw.trim() === '') return defaultCombos();
  return raw.split(',').map((c) => {
    const m = /^\s*(\d+)\s*x\s*(\d+)\s*$/i.exec(c);
    if (m === null) throw new Error(`--combos: expected AxS items like 2x4, got ${JSON.stringify(c)}`);
    return { acceptors: positive('--combos acceptors', m[1], 1, 1, true), shards: positive('--combos shards', m[2], 1, 1, true) };
  });
}

function parseWorkloads(raw: string | undefined): WorkloadId[] {
  if (raw === undefined) return [...WORKLOADS];
  const chosen = raw.split(',').map((w) => {
    const id = w.trim() as WorkloadId;
    if (!WORKLOADS.includes(id)) throw new Error(`--only: unknown workload ${JSON.stringify(w)} (known: ${WORKLOADS.join(', ')})`);
    return id;
  });
  // A variant's ratios need its reference row measured in the same run.
  const refs = chosen.map((w) => VARIANTS[w]?.of).filter((w): w is WorkloadId => w !== undefined);
  return WORKLOADS.filter((w) => chosen.includes(w) || refs.includes(w));
}

const nonEmpty = (s: string | undefined): string | undefined => (s === undefined || s.trim() === '' ? undefined : s.trim());

/** Parses argv and the environment; prints usage and exits on `--help`. */
export function parseOptions(argv: string[], preset: Preset): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      connections: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      repeats: { type: 'string' },
      acceptors: { type: 'string' },
      shards: { type: 'string' },
      only: { type: 'string' },
      node: { type: 'string' },
      'compare-node': { type: 'string' },
      sweep: { type: 'boolean', default: false },
      combos: { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const env = process.env;
  const quick = preset === 'quick';
  const acceptorsRaw = nonEmpty(values.acceptors ?? env['BENCH_ACCEPTORS']);
  const shardsRaw = nonEmpty(values.shards ?? env['BENCH_SHARDS']);
  return {
    preset,
    connections: positive('--connections', values.connections ?? env['BENCH_CONNECTIONS'], 50, 1, true),
    durationSec: positive('--duration', values.duration ?? env['BENCH_DURATION'], quick ? 4 : 5, 0.5, false),
    warmupSec: positive('--warmup', values.warmup ?? env['BENCH_WARMUP'], 1, 0, false),
    repeats: positive('--repeats', values.repeats ?? env['BENCH_REPEATS'], quick ? 1 : 3, 1, true),
    acceptors: acceptorsRaw === undefined ? undefined : positive('--acceptors', acceptorsRaw, 1, 1, true),
    shards: shardsRaw === undefined ? undefined : positive('--shards', shardsRaw, 1, 1, true),
    sweep: values.sweep,
    combos: parseCombos(values.combos ?? env['BENCH_COMBOS']),
    workloads: parseWorkloads(values.only ?? (quick ? 'list50,call' : undefined)),
    write: !quick && !values['no-write'],
    node: nonEmpty(values.node ?? env['MCP_BENCH_NODE']) ?? process.execPath,
    compareNode: nonEmpty(values['compare-node'] ?? env['MCP_BENCH_COMPARE_NODE']),
  };
}
