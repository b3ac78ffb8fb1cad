/**
 * Third-party packages that ship as many small modules reach the gateway only
 * through `src/shared/vendor/` (ADR-0016): `npm run build` bundles each vendor
 * module into one file, so a thread loads one module instead of hundreds.
 * Three things keep that true: no other module imports a vendored package
 * directly (it would load the package's own modules beside the bundle — and
 * a second copy of its state, such as TypeBox's format registry); the built
 * vendor modules import nothing but Node's built-ins (the bundling ran); and
 * every name a vendor module re-exports is still there after bundling.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../helpers/source-files.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const VENDOR_SRC = join(ROOT, 'src', 'shared', 'vendor');
const VENDOR_DIST = join(ROOT, 'dist', 'src', 'shared', 'vendor');
const BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
/** `import … from 'x'` / `export … from 'x'` (type-only ones too: they must go through the vendor module as well). */
const FROM = /^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gm;

const specifiers = (text: string): string[] => [...text.matchAll(FROM)].map((m) => m[1] as string);
/** The package a specifier belongs to: `typebox/compile` → `typebox`, `@scope/a/b` → `@scope/a`. */
const packageOf = (spec: string): string =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

/** Vendor module file name → the names it re-exports at run time (type-only names excluded). */
function vendorModules(): Map<string, string[]> {
  const modules = new Map<string, string[]>();
  for (const file of readdirSync(VENDOR_SRC).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(join(VENDOR_SRC, file), 'utf8');
    const names = [...text.matchAll(/^export \{([^}]*)\} from '[^']+';$/gm)].flatMap((m) =>
      (m[1] as string)
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== '' && !n.startsWith('type '))
        .map((n) => n.split(/\s+as\s+/).pop() as string),
    );
    modules.set(file.replace(/\.ts$/, '.js'), names);
  }
  return modules;
}

const VENDORED = new Set(sourceFiles(VENDOR_SRC).flatMap((f) => specifiers(readFileSync(f, 'utf8')).map(packageOf)));

describe('vendor bundles', () => {
  it('the vendor directory re-exports the packages ADR-0016 names', () => {
    expect([...VENDORED].sort()).toEqual(['jose', 'prom-client', 'typebox', 'undici', 'yaml']);
  });

  it('no module outside src/shared/vendor imports a vendored package directly', () => {
    const offenders = sourceFiles(join(ROOT, 'src'))
      .filter((f) => !f.startsWith(VENDOR_SRC))
      .flatMap((f) =>
        specifiers(readFileSync(f, 'utf8'))
          .filter((s) => VENDORED.has(packageOf(s)))
          .map((s) => `${relative(ROOT, f)} imports '${s}'`),
      );
    expect(offenders).toEqual([]);
  });

  it.each([...vendorModules()])('dist vendor module %s is one bundle that imports only Node built-ins', (file) => {
    const text = readFileSync(join(VENDOR_DIST, file), 'utf8');
    const bare = specifiers(text).filter((s) => !s.startsWith('.') && !BUILTINS.has(s));
    expect(bare).toEqual([]);
    expect(specifiers(text).filter((s) => s.startsWith('.'))).toEqual([]);
  });

  it.each([...vendorModules()])('dist vendor module %s still exports every name its source re-exports', async (file, names) => {
    const mod = (await import(pathToFileURL(join(VENDOR_DIST, file)).href)) as Record<string, unknown>;
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((n) => mod[n] === undefined)).toEqual([]);
  });
});
