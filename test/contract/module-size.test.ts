/**
 * The house rule on module size (docs/architecture.md, "Threads"): a file in
 * src/ stays under ~300 lines unless its header says why it is longer, and
 * the size it states (`~N lines`) is still roughly true — a reason written
 * for 310 lines does not excuse 600.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceFiles } from '../helpers/source-files.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Lines a module may have without stating a reason. */
const PLAIN_LIMIT = 300;
/** How far the stated size may lag behind the file before the reason must be re-read. */
const STATED_SLACK = 1.2;

/** The leading block comment of a module (its header), or ''. */
function header(text: string): string {
  const m = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text);
  return m ? (m[1] as string) : '';
}

const files = sourceFiles(join(ROOT, 'src')).map((path) => {
  const text = readFileSync(path, 'utf8');
  return { name: relative(ROOT, path), lines: text.split('\n').length - 1, header: header(text) };
});

describe('module size', () => {
  it('reads the source tree', () => {
    expect(files.length).toBeGreaterThan(50);
  });

  const long = files.filter((f) => f.lines > PLAIN_LIMIT);
  it.each(long.map((f) => [f.name, f] as const))('%s states why it is longer than ~300 lines', (name, f) => {
    const stated = /~(\d+) lines/.exec(f.header);
    expect(stated, `${name} has ${f.lines} lines and no "~N lines: <reason>" in its header`).not.toBeNull();
    const n = Number((stated as RegExpExecArray)[1]);
    expect(f.lines, `${name} states ~${n} lines but has ${f.lines}`).toBeLessThanOrEqual(Math.round(n * STATED_SLACK));
  });
});
