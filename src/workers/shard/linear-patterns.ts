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
 * The one TypeBox call of `new RegExp(x, 'u')` that is not a schema pattern
 * is the `format: "regex"` check, which only asks whether the argument
 * compiles: it is re-registered here with the native constructor, so a valid
 * lookahead in an argument is not reported as invalid.
 */
import { Format } from 'typebox/format';
import { LinearRegExp } from '../../shared/catalog/linear-regexp.js';

const NativeRegExp = RegExp;
const MAX_CACHED = 512;
/** Errors() rebuilds patterns per call; translated engines are reused (bounded: cleared when full). */
const cache = new Map<string, LinearRegExp>();

function linear(pattern: string): LinearRegExp {
  let re = cache.get(pattern);
  if (re === undefined) {
    if (cache.size >= MAX_CACHED) cache.clear();
    re = new LinearRegExp(pattern);
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
