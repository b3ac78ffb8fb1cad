/**
 * Tool Service manifest v1.1 golden examples (SPEC §4, §7): every
 * `docs/contracts/examples/manifest/*.json` goes through `validateManifest`.
 * A valid example must yield the listed tools (each listed field must match)
 * and refuse exactly the listed tools one by one (`refused`, v1.1); an
 * invalid one must be refused with a problem containing the stated text.
 * Format: `docs/contracts/examples/README.md`.
 */
import { describe, expect, it } from 'vitest';
import { validateManifest, type ManifestPolicy } from '../../src/shared/catalog/manifest.js';
import { DEFAULTS } from '../../src/shared/config/defaults.js';
import type { ServiceEntry } from '../../src/shared/config/schema.js';
import { loadExamples, resolvePlaceholders } from './support.js';

/** A manifest example file. */
type ManifestExample = {
  description: string;
  entry: ServiceEntry;
  policy?: ManifestPolicy;
  manifest: unknown;
} & ({ valid: true; tools: Array<Record<string, unknown>>; refused?: Array<{ name: string; problem: string }> } | { valid: false; problem: string });

/** The policy the gateway derives from the default configuration. */
const DEFAULT_POLICY: ManifestPolicy = {
  defaultTimeoutMs: DEFAULTS.tools.defaultTimeoutMs,
  maxTimeoutMs: DEFAULTS.tools.maxTimeoutMs,
  allowedExecutionOrigins: DEFAULTS.tools.allowedExecutionOrigins,
};

const MIN_EXAMPLES = 20;
const examples = loadExamples<ManifestExample>('manifest');

describe('Tool Service manifest v1 golden examples (docs/contracts/examples/manifest)', () => {
  it(`has at least ${MIN_EXAMPLES} examples, valid and invalid`, () => {
    expect(examples.length).toBeGreaterThanOrEqual(MIN_EXAMPLES);
    expect(examples.some((e) => e.example.valid)).toBe(true);
    expect(examples.some((e) => !e.example.valid)).toBe(true);
  });

  it.each(examples.map((e) => [e.file, e.example] as const))('%s', (file, example) => {
    expect(typeof example.description, `${file}: description`).toBe('string');
    const result = validateManifest(example.manifest, example.entry, example.policy ?? DEFAULT_POLICY);
    if (example.valid) {
      expect(result.ok ? [] : result.problems, `${file}: problems of a valid manifest`).toEqual([]);
      if (!result.ok) return;
      expect(result.tools.length, `${file}: number of tools`).toBe(example.tools.length);
      example.tools.forEach((want, i) => {
        const got = result.tools[i] as unknown as Record<string, unknown>;
        // Only the fields the example lists must match.
        const picked = Object.fromEntries(Object.keys(want).map((k) => [k, got[k]]));
        expect(picked, `${file}: tool ${i}`).toEqual(resolvePlaceholders(want, picked));
      });
      // Tools refused one by one (v1.1): each listed one, with a problem containing the stated text, and no other.
      const refused = example.refused ?? [];
      expect(
        result.refused.map((r) => r.name),
        `${file}: refused tools`,
      ).toEqual(refused.map((r) => r.name));
      refused.forEach((want, i) => {
        expect(result.refused[i]?.problem, `${file}: refused tool ${i}`).toContain(want.problem);
      });
    } else {
      expect(result.ok, `${file}: an invalid manifest was accepted`).toBe(false);
      if (result.ok) return;
      expect(
        result.problems.some((p) => p.includes(example.problem)),
        `${file}: no problem contains ${JSON.stringify(example.problem)}; got ${JSON.stringify(result.problems)}`,
      ).toBe(true);
    }
  });
});
