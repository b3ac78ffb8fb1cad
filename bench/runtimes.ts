/**
 * The Node runtimes a bench runs the gateway on (ADR-0001): the machine's
 * Node (the one running the bench) and the supported runtime, Node 24 LTS
 * with uWebSockets.js 20.57.
 *
 * The Node 24 binary is `MCP_BENCH_NODE` when set, else whatever
 * `scripts/modern-node.sh` prepares (cached in .cache/modern-node; on a glibc
 * < 2.38 host a copy carrying a private glibc). Each runtime is described by
 * actually loading uWS on it through the gateway's loader, so a table row
 * names the build that really ran.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** A Node binary and what runs on it. */
export interface BenchRuntime {
  /** Short row label, e.g. `node 24.22.3 · uWS 20.57.0`. */
  label: string;
  /** Path of the `node` binary (spawn the gateway with it). */
  node: string;
  /** `process.version` on it. */
  version: string;
  /** The uWS release the gateway's loader picks on it, e.g. `@btc-vision/uwebsockets.js@20.57.0`. */
  uws: string;
}

/** The repository root: the nearest ancestor with package.json (this file runs from dist/bench/). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('bench/runtimes: cannot find the repository root');
    dir = parent;
  }
  return dir;
}

/**
 * Path of the Node 24 binary: `MCP_BENCH_NODE`, else prepared (or reused) by
 * scripts/modern-node.sh (first time ~15 s, needs npm and, on glibc < 2.38,
 * apt-get). `null`, with the reason on stderr, when it cannot be had.
 */
export function modernNodePath(): string | null {
  const given = process.env['MCP_BENCH_NODE'];
  if (given !== undefined && given !== '') return given;
  try {
    const out = execFileSync('bash', [join(repoRoot(), 'scripts', 'modern-node.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 5 * 60_000,
    });
    return out.trim().split('\n').pop() || null;
  } catch (err) {
    process.stderr.write(`bench: no Node 24 runtime (${(err as Error).message.split('\n')[0]}); its rows are skipped\n`);
    return null;
  }
}

/** Loads uWS through the gateway's loader on `node` and reports what ran; throws when no native build loads there. */
export function describeRuntime(node: string): BenchRuntime {
  const loader = pathToFileURL(join(repoRoot(), 'dist', 'src', 'main', 'uws.js')).href;
  const script = `import { loadUws } from ${JSON.stringify(loader)};
const b = loadUws({ maxHeaderBytes: 16384 });
console.log(JSON.stringify({ version: process.version, uws: b.release }));`;
  const out = execFileSync(node, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000, stdio: ['ignore', 'pipe', 'pipe'] });
  const { version, uws } = JSON.parse(out.trim().split('\n').pop() ?? '{}') as { version: string; uws: string };
  const uwsVersion = uws.slice(uws.lastIndexOf('@') + 1).replace(/-unofficial.*$/, '');
  return { label: `node ${version.slice(1)} · uWS ${uwsVersion}`, node, version, uws };
}

/** The machine's Node, then Node 24 + uWS 20.57 when it can be had and differs. */
export function benchRuntimes(): BenchRuntime[] {
  const runtimes = [describeRuntime(process.execPath)];
  const modern = modernNodePath();
  if (modern !== null) {
    const described = describeRuntime(modern);
    if (described.version !== runtimes[0]?.version || described.uws !== runtimes[0]?.uws) runtimes.push(described);
  }
  return runtimes;
}
