import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinearRegExp } from '../../../../src/shared/catalog/linear-regexp.js';
import { KeySetRegExp, literalKeys, withLinearPatterns } from '../../../../src/workers/shard/linear-patterns.js';
import { compileArgumentValidator } from '../../../../src/workers/shard/validator-cache.js';

/** The pattern TypeBox builds for `additionalProperties` next to `properties` (typebox additionalProperties.mjs `GetPropertiesPattern`). */
const typeboxKeysPattern = (keys: readonly string[]): string => `(${keys.map((k) => `^${k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`).join('|')})`;

const SPECIAL_KEYS = ['a.b', 'c$', 'x|y', 'we\\ird', '^q', '(p)', '[r]', '{s}', 't*+?', 'ünïcødé', '🙂', '', 'line\nbreak'];

describe('schema key patterns that are literal alternations are set lookups', () => {
  it('reads the keys back from TypeBox-built patterns, special characters included', () => {
    expect(literalKeys(typeboxKeysPattern(SPECIAL_KEYS))).toEqual(new Set(SPECIAL_KEYS));
    expect(literalKeys(typeboxKeysPattern(['customerId']))).toEqual(new Set(['customerId']));
  });

  it('refuses every pattern that is not an alternation of anchored literals', () => {
    for (const p of ['(?!)', '^a$', '(^a+$)', '(^a$|b)', '(^a$|^[bc]$)', '(^a\\d$)', '(^a$|^b$', '^a$|^b$)', '(^a$)x', '(^a\\-b$)', '(^a.b$)', '(^a$|)', '()', '(^a$^b$)']) {
      expect(literalKeys(p), p).toBeNull();
    }
  });

  it('answers exactly as V8 runs the same pattern (generated keys and probes)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit: 'grapheme-ascii', maxLength: 6 }), { minLength: 1, maxLength: 6 }), fc.array(fc.string({ maxLength: 6 }), { maxLength: 10 }), (keys, probes) => {
        const pattern = typeboxKeysPattern(keys);
        const set = literalKeys(pattern);
        expect(set).toEqual(new Set(keys));
        const native = new RegExp(pattern, 'u'); // an anchored literal alternation: safe on the backtracking engine
        const fast = new KeySetRegExp(pattern, set as Set<string>);
        for (const probe of [...keys, ...probes, ...keys.map((k) => `${k}x`), ...keys.map((k) => `\n${k}`)]) expect(fast.test(probe), JSON.stringify(probe)).toBe(native.test(probe));
      }),
      { numRuns: 300 },
    );
  });

  it('TypeBox gets a KeySetRegExp for property keys and a LinearRegExp for real patterns', () => {
    const keys = withLinearPatterns(() => new RegExp(typeboxKeysPattern(['a', 'b']), 'u'));
    expect(keys).toBeInstanceOf(KeySetRegExp);
    // biome-ignore lint/complexity/useRegexLiterals: the point is to call the global RegExp constructor the validator swaps
    expect(withLinearPatterns(() => new RegExp('^(a+)+$', 'u'))).toBeInstanceOf(LinearRegExp);
    expect(() => keys.exec('a')).toThrow(/test\(\) only/);
  });

  it('a compiled validator with additionalProperties: false accepts the declared keys only', () => {
    const properties = Object.fromEntries(SPECIAL_KEYS.map((k) => [k, { type: 'number' }]));
    const v = compileArgumentValidator({ type: 'object', properties, additionalProperties: false });
    expect(v.Check(Object.fromEntries(SPECIAL_KEYS.map((k) => [k, 1])))).toBe(true);
    for (const extra of ['ab', 'a.bc', 'xy', 'x', '\\', 'q', '🙂🙂', 'line']) {
      expect(v.Check({ [extra]: 1 }), extra).toBe(false);
      expect(v.Errors({ [extra]: 1 }).map((e) => e.keyword)).toContain('additionalProperties');
    }
  });
});
