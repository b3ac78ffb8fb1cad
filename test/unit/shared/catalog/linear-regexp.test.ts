import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinearRegExp, linearPatternProblem, translatePattern, UnsafePatternError } from '../../../../src/shared/catalog/linear-regexp.js';

// Characters where ECMAScript and RE2 disagree by default: line terminators, Unicode spaces, astral and lone surrogates.
const CHARS = ['a', 'b', 'Z', '0', '9', '_', '-', ' ', '\t', '\n', '\r', '\u000b', '\u00a0', '\u2028', '\u3000', '\ufeff', 'é', 'Σ', '😀', '\ud800', '.', '$', '\\', ']'];

const atom: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('a', 'b', '0', '\\.', '\\$', '-', ' ', 'é', '😀', '\\u00e9', '\\u{1F600}', '\\x41', '\\n', '\\t', '\\\\'),
  fc.constantFrom('.', '\\d', '\\D', '\\w', '\\W', '\\s', '\\S', '\\p{L}', '\\P{L}', '\\p{Lu}', '\\p{Letter}', '\\p{Script=Greek}', '\\p{Nd}'),
  fc.constantFrom('[a-c]', '[^a-c]', '[\\s\\d]', '[^\\S]', '[^\\W_]', '[\\p{L}0-9]', '[^\\p{L}\\s]', '[]', '[^]', '[.$\\]\\\\-]', '[😀-😃]', '[\\0-\\x1f]'),
);
const pattern: fc.Arbitrary<string> = fc.letrec<{ re: string; term: string }>((tie) => ({
  term: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    atom.chain((a) => fc.constantFrom(`${a}*`, `${a}+`, `${a}?`, `${a}{2}`, `${a}{1,3}`, `${a}{2,}`, `${a}*?`, `${a}+?`)),
    tie('re').map((r) => `(${r})`),
    tie('re').map((r) => `(?:${r})+`),
    tie('re').map((r) => `(?<n>${r})?`),
    fc.constantFrom('^', '$', '\\b', '\\B'),
  ),
  re: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.array(tie('term'), { minLength: 0, maxLength: 4 }).map((t) => t.join('')),
    fc.tuple(tie('re'), tie('re')).map(([a, b]) => `${a}|${b}`),
  ),
})).re;
const input = fc.array(fc.constantFrom(...CHARS), { maxLength: 10 }).map((c) => c.join(''));

describe('translatePattern', () => {
  it('agrees with V8 (u flag) on generated patterns and inputs', () => {
    fc.assert(
      fc.property(pattern, fc.array(input, { minLength: 1, maxLength: 8 }), (p, inputs) => {
        let native: RegExp;
        try {
          native = new RegExp(p, 'u');
        } catch {
          return; // not a valid u-mode pattern: refused earlier, at catalog build
        }
        const t = translatePattern(p);
        // Node 24's V8 accepts a few patterns ES2025 forbids (nested duplicate group names); those are refused, never mistranslated.
        if (!t.ok && t.reason.startsWith('is not a valid regular expression')) return;
        const linear = new LinearRegExp(p);
        for (const s of inputs) expect(linear.test(s), `${JSON.stringify(p)} on ${JSON.stringify(s)}`).toBe(native.test(s));
      }),
      { numRuns: 200, seed: 11, endOnFailure: true },
    );
  });

  it('agrees with V8 on patterns of real tool schemas', () => {
    const cases: Array<[string, string[]]> = [
      ['^[A-Za-z0-9_.-]{1,128}$', ['a.b', 'a b', '', 'x'.repeat(128), 'x'.repeat(129)]],
      ['^\\d{4}-\\d{2}-\\d{2}$', ['2026-12-01', '2026-1-01', '٢٠٢٦-12-01']],
      ['^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$', ['a@b.io', 'a b@c.io', 'a@b.c']],
      ['^\\p{Lu}\\p{Ll}+$', ['Émile', 'émile', 'Ab']],
      ['(?<=\\$)\\d+', ['$12', '12', 'x$']],
      ['(?<!-)\\b\\d+', ['-12', '12', 'a-1 2']],
      ['^\\S+$', ['abc', 'a\u00a0b', 'a\ufeffb']],
      ['^.+$', ['a\u2028b', 'ab', '😀']],
      ['^.$', ['😀', '\ud800', 'ab']],
    ];
    for (const [p, inputs] of cases) {
      const native = new RegExp(p, 'u');
      const linear = new LinearRegExp(p);
      for (const s of inputs) expect(linear.test(s), `${p} on ${JSON.stringify(s)}`).toBe(native.test(s));
    }
  });

  it('refuses what only a backtracking engine can run, saying why', () => {
    expect(linearPatternProblem('^(a)\\1$')).toMatch(/backreference "\\1"/);
    expect(linearPatternProblem('^(?<x>a)\\k<x>$')).toMatch(/backreference/);
    expect(linearPatternProblem('^(?=a)a')).toMatch(/lookahead "\(\?=a\)"/);
    expect(linearPatternProblem('^(?!a)b')).toMatch(/lookahead/);
    expect(linearPatternProblem('^a{1001}$')).toMatch(/repetition counts up to 1000/);
    expect(linearPatternProblem('\\p{Script_Extensions=Greek}')).toMatch(/property/);
    expect(linearPatternProblem('\\p{sc=Grek}')).toMatch(/long script name/);
    expect(linearPatternProblem('(')).toMatch(/not a valid regular expression/);
    expect(() => new LinearRegExp('(a)\\1')).toThrow(UnsafePatternError);
    expect(translatePattern('^(a+)+$')).toMatchObject({ ok: true });
    // TypeBox builds "(?!)" itself (additionalProperties: false next to no properties): empty lookaheads are constants.
    expect(new LinearRegExp('(?!)').test('')).toBe(false);
    expect(new LinearRegExp('^(?=)a').test('a')).toBe(true);
  });

  it('never falls back to V8 matching: only test() is served', () => {
    const re = new LinearRegExp('a+');
    expect(re).toBeInstanceOf(RegExp);
    expect(re.source).toBe('a+');
    expect(() => 'aaa'.match(re)).toThrow(/test\(\) only/);
    expect(() => re.exec('a')).toThrow(/test\(\) only/);
  });
});

/** Median time of `runs` calls of `fn` (ns); medians keep a busy machine's outliers out. */
function medianNs(fn: () => void, runs = 9): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t));
  }
  return times.sort((a, b) => a - b)[runs >> 1] as number;
}

describe('LinearRegExp time bound (issue 11 High #1)', () => {
  it('runs the ReDoS patterns in time linear in the input, like a trivial pattern', () => {
    const trivial = new LinearRegExp('^a+$');
    for (const evil of ['^(a+)+$', '^(a|a)*$', '^(\\w+\\s?)*$', '[a-z]+$', '\\d+x', '(a*)*b']) {
      const re = new LinearRegExp(evil);
      // Both sizes in one re2js regime: it picks its engine by input length (each linear, with different costs per character).
      const n = 4_000;
      const s1 = 'a'.repeat(n) + '!';
      const s4 = 'a'.repeat(4 * n) + '!';
      // Warm up (JIT, lazy DFA).
      for (let i = 0; i < 3; i++) {
        re.test(s1);
        re.test(s4);
        trivial.test(s4);
      }
      const t1 = medianNs(() => re.test(s1));
      const t4 = medianNs(() => re.test(s4));
      const base = medianNs(() => trivial.test(s4));
      // Linear: 4x the input costs about 4x the time (quadratic would be 16x, exponential astronomical).
      expect(t4 / t1, `${evil}: ${t1} ns for n, ${t4} ns for 4n`).toBeLessThan(10);
      // And the worst case costs a bounded multiple of a trivial pattern on the same input.
      expect(t4 / base, `${evil}: ${t4} ns vs trivial ${base} ns`).toBeLessThan(50);
    }
  });
});
