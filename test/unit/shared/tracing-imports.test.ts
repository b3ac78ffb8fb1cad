/**
 * Tracing off costs nothing (issue 13: "zero cost when disabled — no SDK
 * loaded"): no module any thread loads at start reaches an OpenTelemetry
 * package through static imports; only `tracer.ts`'s dynamic `import()` —
 * taken when `tracing.otlp.endpoint` is set — does. Checked on the built
 * code (dist/, what runs), from every thread's entry point.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'src');
const ENTRY_POINTS = ['main/cli.js', 'main/gateway.js', 'main/acceptor-worker.js', 'workers/shard/shard-worker.js', 'workers/refresh/refresh-worker.js'];

/**
 * Vendor bundles (ADR-0016) are not followed: test/contract/vendor-bundles.test.ts
 * checks they import nothing but Node's built-ins, and the text of a bundle
 * holds import-like strings from its package's code. (prom-client's bundle
 * carries `@opentelemetry/api`, which prom-client requires for exemplars —
 * the API only, never the SDK.)
 */
const VENDOR = join(DIST, 'shared', 'vendor');
const STATIC = /^\s*(?:import|export)\s(?:[^'"]*?\sfrom\s)?['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every bare package specifier reachable from `entry` (relative imports followed; dynamic ones only when asked). */
function reachablePackages(entry: string, followDynamic: boolean): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const todo = [resolve(DIST, entry)];
  while (todo.length > 0) {
    const file = todo.pop() as string;
    if (seen.has(file) || file.startsWith(VENDOR)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    const specifiers = [...text.matchAll(STATIC)].map((m) => m[1] as string);
    if (followDynamic) specifiers.push(...[...text.matchAll(DYNAMIC)].map((m) => m[1] as string));
    for (const spec of specifiers) {
      if (spec.startsWith('.')) todo.push(resolve(dirname(file), spec));
      else packages.add(spec);
    }
  }
  return packages;
}

describe('tracing off loads no OpenTelemetry code', () => {
  it.each(ENTRY_POINTS)('%s reaches no @opentelemetry package through static imports', (entry) => {
    const otel = [...reachablePackages(entry, false)].filter((p) => p.startsWith('@opentelemetry/'));
    expect(otel).toEqual([]);
  });

  it.each(['main/gateway.js', 'main/acceptor-worker.js', 'workers/shard/shard-worker.js'])('%s reaches the SDK through the dynamic import (the check above can fail)', (entry) => {
    const otel = [...reachablePackages(entry, true)].filter((p) => p.startsWith('@opentelemetry/'));
    expect(otel).toEqual(expect.arrayContaining(['@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http']));
  });
});
