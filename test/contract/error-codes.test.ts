/**
 * Error codes both ways (fastify's `test/internals/errors.test.js` pattern):
 * every code `src/shared/errors.ts` defines is emitted somewhere in `src`
 * and documented in `docs/contracts/errors.md`; every code the document
 * lists exists; and no source file spells a code as a literal instead of
 * naming it through the tables (so a rename cannot leave a stale spelling).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GatewayErrorCode, JsonRpcErrorCode } from '../../src/shared/errors.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ERRORS_TS = join('src', 'shared', 'errors.ts');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(join(ROOT, 'src'))
  .filter((f) => relative(ROOT, f) !== ERRORS_TS)
  .map((f) => ({ file: relative(ROOT, f), text: readFileSync(f, 'utf8') }));
const doc = readFileSync(join(ROOT, 'docs', 'contracts', 'errors.md'), 'utf8');

/** First-column backticked names of the table rows under a heading of errors.md. */
function tableNames(heading: string): string[] {
  const start = doc.indexOf(heading);
  if (start < 0) throw new Error(`errors.md has no section "${heading}"`);
  const next = doc.indexOf('\n## ', start + heading.length);
  const section = doc.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1] as string);
}

describe('JSON-RPC error codes', () => {
  it.each(Object.keys(JsonRpcErrorCode))('%s is emitted by src', (name) => {
    const users = files.filter((f) => f.text.includes(`JsonRpcErrorCode.${name}`)).map((f) => f.file);
    expect(users, `JsonRpcErrorCode.${name} is defined but never used`).not.toEqual([]);
  });

  it('errors.md lists exactly the defined codes', () => {
    expect(tableNames('## JSON-RPC error codes').sort()).toEqual(Object.keys(JsonRpcErrorCode).sort());
  });

  it('no source writes a JSON-RPC code as a number literal', () => {
    const literal = new RegExp(`(?<![\\w.])(${Object.values(JsonRpcErrorCode).join('|')})(?![\\w.])`);
    const offenders = files.filter((f) => literal.test(f.text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ''))).map((f) => f.file);
    expect(offenders).toEqual([]);
  });
});

describe('gateway error codes', () => {
  it.each(Object.keys(GatewayErrorCode))('%s is emitted by src', (name) => {
    const users = files.filter((f) => f.text.includes(`GatewayErrorCode.${name}`)).map((f) => f.file);
    expect(users, `GatewayErrorCode.${name} is defined but never used`).not.toEqual([]);
  });

  it('errors.md lists exactly the defined codes', () => {
    expect(tableNames('## Gateway error codes').sort()).toEqual(Object.values(GatewayErrorCode).sort());
  });

  it('no source spells a gateway code as a string literal', () => {
    const literal = new RegExp(`['"\`](${Object.values(GatewayErrorCode).join('|')})['"\`]`);
    const code = (text: string): string => text.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '');
    const offenders = files.filter((f) => literal.test(code(f.text))).map((f) => `${f.file}: ${literal.exec(code(f.text))?.[0]}`);
    expect(offenders).toEqual([]);
  });
});
