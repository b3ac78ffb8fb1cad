/**
 * Makes TypeBox run a tool schema's regular expressions on the linear-time
 * engine ({@link LinearRegExp}) instead of V8's backtracking one (ADR-0010).
 *
 * TypeBox builds every regex of a schema itself, from strings, with
 * `new RegExp(pattern, 'u')`: for `pattern`, for each `patternProperties`
 * key and for the combined key pattern `additionalProperties` uses next to
 * them — at compile time for the compiled `Check`, and again at call time
 * inside `Errors()`. It offers no hook for the engine (a RegExp object is
 * accepted for `pattern`, but `patternProperties` keys are always strings).
 * So, for the synchronous duration of a `Compile()` or `Errors()` call only,
 * the global `RegExp` is replaced by a Proxy whose `new RegExp(string, 'u')`
 * returns a {@link LinearRegExp}; everything else is forwarded unchanged.
 * The swap is restored in `finally`, and no other code can run in between:
 * JavaScript does not interleave a synchronous call.
 *
 * The most common schema regex is not a schema pattern at all: for
 * `additionalProperties` next to `properties` TypeBox tests every argument
 * key against `(^k1$|^k2$|…)` built from the escaped property names. Such an
 * alternation of anchored literals is a set lookup ({@link KeySetRegExp}):
 * on the echo tool of `npm run bench` the re2js run cost ~1.2 µs and ~800
 * bytes of garbage per call.
 *
 * The one TypeBox call of `new RegExp(x, 'u')` that is not a schema pattern
 * is the `format: "regex"` check, which only asks whether the argument
 * compiles: it is re-registered here with the native constructor, so a valid
 * lookahead in an argument is not reported as invalid.
 */
import { Format } from '../../shared/vendor/typebox.js';
import { LinearRegExp } from '../../shared/catalog/linear-regexp.js';

const NativeRegExp = RegExp;
const MAX_CACHED = 512;
/** Errors() rebuilds patterns per call; translated engines are reused (bounded: cleared when full). */
const cache = new Map<string, RegExp>();

/** Characters TypeBox escapes in a property name (additionalProperties.mjs `GetPropertyKeyAsPattern`): special outside a class. */
const ESCAPED = '.*+?^$' + '{}()|[]\\'; // two literals: '$' next to '{' reads as a template placeholder to the linter

/**
 * The property names of a pattern `(^k1$|^k2$|…)` whose alternatives are
 * literals (only {@link ESCAPED} characters escaped, none of them bare), or
 * null for any other pattern. With the `u` flag and no `m`, `^k$` matches
 * exactly the string k, so the pattern matches a string iff the set holds it.
 */
export function literalKeys(pattern: string): Set<string> | null {
  const end = pattern.length - 1;
  if (pattern[0] !== '(' || pattern[end] !== ')') return null;
  const keys = new Set<string>();
  let i = 1;
  while (pattern[i] === '^') {
    i++;
    let key = '';
    for (;;) {
      if (i >= end) return null;
      const c = pattern[i] as string;
      if (c === '$') break;
      if (c === '\\') {
        const next = pattern[i + 1];
        if (next === undefined || !ESCAPED.includes(next)) return null;
        key += next;
        i += 2;
        continue;
      }
      if (ESCAPED.includes(c)) return null;
      key += c;
      i++;
    }
    keys.add(key);
    i++; // the '$'
    if (i === end) return keys;
    if (pattern[i] !== '|') return null;
    i++;
  }
  return null;
}

/** A pattern that is a set of literal keys ({@link literalKeys}), tested by lookup. Like {@link LinearRegExp}, only `test()` runs. */
export class KeySetRegExp extends RegExp {
  readonly #keys: Set<string>;

  constructor(pattern: string, keys: Set<string>) {
    super(pattern, 'u'); // compiled by V8, never run
    this.#keys = keys;
  }

  override test(input: string): boolean {
    return this.#keys.has(String(input));
  }

  override exec(_input: string): RegExpExecArray | null {
    throw new Error('KeySetRegExp supports test() only');
  }
}

function linear(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (re === undefined) {
    if (cache.size >= MAX_CACHED) cache.clear();
    const keys = literalKeys(pattern);
    re = keys === null ? new LinearRegExp(pattern) : new KeySetRegExp(pattern, keys);
    cache.set(pattern, re);
  }
  return re;
}

const LinearAwareRegExp: RegExpConstructor = new Proxy(NativeRegExp, {
  construct(target, args: unknown[], newTarget) {
    if (newTarget === LinearAwareRegExp && typeof args[0] === 'string' && args[1] === 'u') return linear(args[0]);
    return Reflect.construct(target, args, newTarget === LinearAwareRegExp ? target : newTarget) as object;
  },
});

Format.Set('regex', (value: string) => {
  try {
    new NativeRegExp(value, 'u'); // compiled only, never run
    return true;
  } catch {
    return false;
  }
});

/** Runs `fn` (a TypeBox `Compile` or `Errors`) with schema regexes built on the linear-time engine. */
export function withLinearPatterns<T>(fn: () => T): T {
  const previous = globalThis.RegExp;
  globalThis.RegExp = LinearAwareRegExp;
  try {
    return fn();
  } finally {
    globalThis.RegExp = previous;
  }
}
