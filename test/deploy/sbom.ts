/**
 * The software bill of materials of what the container image ships: the
 * production dependency tree as `npm sbom --omit=dev --sbom-format cyclonedx`
 * reports it, committed at {@link SBOM_PATH}. `npm run sbom` rewrites it;
 * `test/deploy/sbom.test.ts` fails when it no longer matches the lockfile.
 *
 * npm names the root component after the directory it runs in (a clone's
 * folder name); that is replaced by the package name so every clone writes
 * the same file. The serial number, timestamp and the npm version that
 * generated it differ per run and are left out of the comparison.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Where the committed SBOM lives, relative to the repository root. */
export const SBOM_PATH = 'docs/sbom/mcp-route-gateway.cdx.json';

/** The parts of a CycloneDX document this module reads or rewrites. */
export interface CycloneDx {
  serialNumber?: string;
  metadata?: { timestamp?: string; tools?: unknown; component?: { name?: string; purl?: string } };
  components?: unknown[];
  dependencies?: unknown[];
  [key: string]: unknown;
}

/** Runs `npm sbom` for the production dependencies of the package at `root`. */
export function generateSbom(root: string): CycloneDx {
  const text = execFileSync('npm', ['sbom', '--omit=dev', '--sbom-format', 'cyclonedx'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const bom = JSON.parse(text) as CycloneDx;
  const component = bom.metadata?.component;
  // purl is pkg:npm/<name>@<version>; the name npm put beside it is the directory's.
  const purlName = /^pkg:npm\/(.+)@[^@]+$/.exec(component?.purl ?? '')?.[1];
  if (component !== undefined && purlName !== undefined) component.name = decodeURIComponent(purlName);
  return bom;
}

/** The document without the fields that change on every run (serial number, timestamp, generating tool). */
export function stableView(bom: CycloneDx): CycloneDx {
  const copy = structuredClone(bom);
  delete copy.serialNumber;
  if (copy.metadata !== undefined) {
    delete copy.metadata.timestamp;
    delete copy.metadata.tools;
  }
  return copy;
}

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package-lock.json'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('sbom: cannot find the repository root');
    dir = parent;
  }
}

// `npm run sbom` (node dist/test/deploy/sbom.js --write) rewrites the committed file.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv.includes('--write')) {
  const root = repoRoot();
  const file = join(root, SBOM_PATH);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(generateSbom(root), null, 2)}\n`);
  process.stdout.write(`wrote ${SBOM_PATH}\n`);
}
