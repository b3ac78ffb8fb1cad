/**
 * What each thread loads at start: the static import graph of its entry
 * module (type-only imports and `import()` excluded: they load nothing at
 * start). undici costs a thread ~10 MB of RSS once loaded and 13–22 MB once
 * it made a request (ADR-0020), so no thread loads it at start: the shard
 * calls Tool Services on its own HTTP/1.1 client (ADR-0005), the refresh
 * worker fetches on `node:http` (src/workers/refresh/http-get.ts), and an
 * acceptor imports it with its first remote JWKS fetch (jwt-verifier.ts).
 * Nor do the shard and the refresh worker load the configuration loader
 * (the YAML parser, the compiled configuration schema): the main thread
 * hands them the validated configuration.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
/** `import … from './x.js'` / `export … from './x.js'`, not `import type` / `export type`. */
const STATIC_IMPORT = /^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;

/** Source files (relative to the repository) the module `entry` loads, transitively, at start. */
function staticGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const pending = [join(ROOT, entry)];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    const rel = relative(ROOT, file);
    if (seen.has(rel)) continue;
    seen.add(rel);
    for (const m of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      const spec = m[1] as string;
      if (spec.startsWith('.')) pending.push(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
    }
  }
  return seen;
}

describe('no thread loads undici at start', () => {
  const UNDICI = 'src/shared/vendor/undici.ts';

  it('the import scan sees through relative paths and re-exports (jose, the sibling vendor module, is found)', () => {
    // The checks below are worth something only if the scan would find undici where it is imported.
    expect(staticGraph('src/main/cli.ts').has('src/shared/vendor/jose.ts')).toBe(true);
  });

  it.each(['src/main/cli.ts', 'src/main/acceptor-worker.ts', 'src/workers/refresh/refresh-worker.ts', 'src/workers/shard/shard-worker.ts'])('%s', (entry) => {
    const graph = staticGraph(entry);
    expect(graph.size).toBeGreaterThan(10);
    expect(graph.has(UNDICI)).toBe(false);
  });
});

describe('only the main thread loads the configuration loader', () => {
  const LOADER = ['src/shared/config/load.ts', 'src/shared/vendor/yaml.ts'];

  it('the scan finds the loader where it is imported', () => {
    const graph = staticGraph('src/main/cli.ts');
    for (const file of LOADER) expect(graph.has(file)).toBe(true);
  });

  it.each(['src/workers/refresh/refresh-worker.ts', 'src/workers/shard/shard-worker.ts'])('%s', (entry) => {
    const graph = staticGraph(entry);
    expect(graph.size).toBeGreaterThan(10);
    for (const file of LOADER) expect(graph.has(file), file).toBe(false);
  });
});
