/**
 * Fault and abuse suite, catalog (issue 11): generated Tool Service manifests
 * through `validateManifest` → `mergeRoute` → `encodeSnapshot` /
 * `decodeSnapshot` → the shard's argument validator. Zero crashes; every
 * refusal names its place; whatever the catalog accepts, the shard can
 * compile and run on any argument without throwing (its patterns translate
 * to the linear-time engine, its `$ref`s resolve and do not loop).
 * Seed: FUZZ_SEED (printed by fast-check on failure); counts: FUZZ_RUNS_SCALE.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateManifest, type ManifestPolicy } from '../../src/shared/catalog/manifest.js';
import { mergeRoute, type MergedRoute } from '../../src/shared/catalog/merge.js';
import { GatewayError, GatewayErrorCode } from '../../src/shared/errors.js';
import { decodeSnapshot, encodeSnapshot } from '../../src/shared/snapshot/layout.js';
import { compileArgumentValidator } from '../../src/workers/shard/validator-cache.js';
import { check, fuzzRuns, fuzzSeed, manifest } from './arbitraries.js';

const ORIGIN = 'http://127.0.0.1:8081';
const entry = { id: 'svc', baseUrl: ORIGIN };
const policy: ManifestPolicy = { defaultTimeoutMs: 30_000, maxTimeoutMs: 60_000, allowedExecutionOrigins: [] };
const argument = fc.dictionary(fc.constantFrom('p', 'q', 'r', 'aaaa', 'x'), fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant('a'.repeat(40) + '!')), { maxKeys: 4 });

describe('fuzz: manifests through validation, merge, snapshot and the shard validator (≥ 1,000)', () => {
  it('never crashes; refusals name their place; accepted schemas compile and check any argument', { timeout: 120_000 }, () => {
    const seen = { accepted: 0, refused: 0, tools: 0, mergeRefused: 0 };
    fc.assert(
      fc.property(manifest(ORIGIN), fc.array(argument, { minLength: 1, maxLength: 3 }), (raw, args) => {
        const result = validateManifest(raw, entry, policy);
        if (!result.ok) {
          seen.refused++;
          check(result.problems.length > 0, 'a refusal lists its problems');
          for (const p of result.problems) check(typeof p === 'string' && p.startsWith('/') && p.includes(': '), 'each problem names its place: "<pointer>: <what>"', p);
          return;
        }
        seen.accepted++;
        let catalog: MergedRoute;
        try {
          catalog = mergeRoute('core', [{ serviceId: 'svc', tools: result.tools }], { maxToolsPerRoute: 4, source: 'static', now: 0 });
        } catch (err) {
          check(GatewayError.is(err) && err.code === GatewayErrorCode.ToolCapExceeded, 'mergeRoute refuses only with a gateway code', String(err));
          seen.mergeRefused++;
          return;
        }
        const view = decodeSnapshot(encodeSnapshot(catalog), { verifyChecksum: true });
        check(JSON.stringify(view.catalogTools()) === JSON.stringify(catalog.tools), 'the snapshot round-trips the catalog');
        const list = JSON.parse(new TextDecoder().decode(view.listTemplate) + '1}') as { id: number; result: { tools: unknown[] } };
        check(list.id === 1 && Array.isArray(list.result.tools), 'the tools/list template completes to a JSON-RPC answer');
        for (const tool of catalog.tools) {
          seen.tools++;
          const validator = compileArgumentValidator(tool.inputSchema);
          for (const a of args) {
            if (!validator.Check(a)) validator.Errors(a);
          }
        }
      }),
      { numRuns: fuzzRuns(1_000), seed: fuzzSeed() },
    );
    console.log(`manifest fuzz: ${JSON.stringify(seen)}`);
    // Both outcomes are exercised, and accepted manifests carry tools the shard really compiles.
    expect(seen.accepted).toBeGreaterThan(fuzzRuns(1_000) / 20);
    expect(seen.refused).toBeGreaterThan(fuzzRuns(1_000) / 20);
    expect(seen.tools).toBeGreaterThan(fuzzRuns(1_000) / 10);
  });
});
