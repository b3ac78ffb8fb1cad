/**
 * The description of a run's conditions that heads every report: machine,
 * Node runtimes, gateway revision and knobs.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { IMAGE_NODE_FLAGS } from '../../test/deploy/deployment-constants.js';
import type { Options } from './options.js';
import { fromBench, type Runtime } from './servers.js';

/** Short revision of the checkout, with a mark when `src` has uncommitted changes. */
export function gitDescribe(): string {
  const cwd = fromBench('../..');
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', timeout: 3000, cwd }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { encoding: 'utf8', timeout: 3000, cwd }).trim() !== '';
    return `${rev}${dirty ? ' + uncommitted src changes' : ''}`;
  } catch {
    return 'unknown';
  }
}

/** The machine, as the JSON output records it. */
export function machine(runtimes: Runtime[]): Record<string, unknown> {
  return {
    node: process.version,
    servers: runtimes.map((r) => ({ node: r.node, version: r.version })),
    cores: availableParallelism(),
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform} ${process.arch}`,
  };
}

/** The gateway layout in words (the gateway's own defaults when not set). */
export function workersText(o: Options): string {
  return `acceptors ${o.acceptors ?? 'default (1)'}, shards ${o.shards ?? `default (${Math.max(1, availableParallelism() - 1)})`}`;
}

function knobsText(o: Options): string {
  return `${o.connections} connections, ${o.durationSec} s measured after ${o.warmupSec} s warm-up per run, ${o.repeats} interleaved repeat(s), medians; gateway ${workersText(o)}`;
}

function runtimesText(runtimes: Runtime[]): string {
  const [primary, ...others] = runtimes;
  if (primary === undefined) return '';
  const same = primary.node === process.execPath;
  const head = `servers on node ${primary.version}${same ? '' : ` (${primary.node})`}`;
  return others.length === 0
    ? head
    : `${head}; the gateway and its tools/call comparators (inline gateway, floors, SDK server) also on ${others.map((r) => `node ${r.version} (${r.node})`).join(', ')}`;
}

/** One paragraph: machine, runtimes, revision, knobs. */
export function describe(o: Options, runtimes: Runtime[]): string {
  const m = machine(runtimes);
  return `bench on node ${String(m['node'])}, ${runtimesText(runtimes)}; ${String(m['cores'])} cores (${String(m['cpu'])}), ${String(m['memoryGiB'])} GiB; gateway ${gitDescribe()}, production config (log level warn) and the image's environment and node flags (NODE_ENV=production, glibc malloc thresholds 128 KiB, ADR-0017; ${IMAGE_NODE_FLAGS.join(' ')} for the main thread, ADR-0018); ${knobsText(o)}. Every server is its own process on 127.0.0.1; load from autocannon in the bench process.`;
}
