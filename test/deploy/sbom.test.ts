/**
 * The committed SBOM (docs/sbom/) matches the production dependencies of the
 * lockfile: a dependency change without `npm run sbom` fails here.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generateSbom, SBOM_PATH, stableView, type CycloneDx } from './sbom.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe(SBOM_PATH, () => {
  const committed = JSON.parse(readFileSync(join(ROOT, SBOM_PATH), 'utf8')) as CycloneDx;

  it('is CycloneDX for this package, production dependencies only', () => {
    expect(committed['bomFormat']).toBe('CycloneDX');
    expect(committed.metadata?.component?.name).toBe('mcp-route-gateway');
    const names = (committed.components as Array<{ name: string }>).map((c) => c.name);
    expect(names).toContain('undici');
    for (const dev of ['vitest', 'typescript', 'autocannon', '@modelcontextprotocol/sdk']) expect(names).not.toContain(dev);
  });

  it('matches what npm sbom reports now (else run `npm run sbom`)', { timeout: 60_000 }, () => {
    expect(stableView(generateSbom(ROOT)), `${SBOM_PATH} is stale: run \`npm run sbom\` and commit it`).toEqual(stableView(committed));
  });
});
