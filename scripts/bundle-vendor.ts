/**
 * Second step of `npm run build`: replaces each compiled module of
 * `dist/src/shared/vendor/` (a re-export of a third-party package) with one
 * bundled ES module holding the package's code, so a thread loads one module
 * instead of the package's hundreds (ADR-0016: three threads importing
 * `typebox` unbundled cost +56 MB RSS over none, bundled +14 MB).
 *
 *   node dist/scripts/bundle-vendor.js
 *
 * The bundle must import nothing but Node's built-ins: a bare import left in
 * it would load the package's modules after all, so the build fails instead.
 * The tsc source map of a replaced module no longer matches it and is removed.
 */
import { readdirSync, renameSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const VENDOR_DIR = fileURLToPath(new URL('../src/shared/vendor/', import.meta.url));
const BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

async function bundle(file: string): Promise<void> {
  const temp = `${file}.bundle.tmp`;
  const { output } = await build({
    input: file,
    platform: 'node',
    logLevel: 'warn',
    output: { file: temp, format: 'esm', sourcemap: false, charset: 'ascii', comments: { legal: true, annotation: false, jsdoc: false } },
  });
  const foreign = output.flatMap((o) => (o.type === 'chunk' ? [...o.imports, ...o.dynamicImports] : [])).filter((s) => !BUILTINS.has(s));
  if (foreign.length > 0) {
    rmSync(temp);
    throw new Error(`${file}: the bundle still imports ${foreign.join(', ')}; only Node built-ins may stay outside it`);
  }
  renameSync(temp, file);
  rmSync(`${file}.map`, { force: true });
}

const modules = readdirSync(VENDOR_DIR).filter((f) => f.endsWith('.js'));
if (modules.length === 0) throw new Error(`${VENDOR_DIR}: no compiled vendor modules (run tsc first)`);
for (const f of modules) await bundle(join(VENDOR_DIR, f));
