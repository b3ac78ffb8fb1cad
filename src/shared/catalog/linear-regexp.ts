/**
 * Linear-time matching for the regular expressions of third-party tool
 * schemas (`pattern`, `patternProperties`; ADR-0010).
 *
 * A JSON Schema `pattern` is an ECMA-262 regular expression, and V8's
 * backtracking engine runs some of them in exponential (`^(a+)+$`) or
 * quadratic (`[a-z]+$`, unanchored) time in the length of the argument —
 * with a 1 MiB body that stalls a shard for minutes. So the gateway never
 * runs a schema's pattern on V8's engine: it translates the pattern, with
 * the `u` flag semantics TypeBox uses, into RE2 syntax and runs it on
 * `re2js` (a pure-JS RE2: time linear in the input, no backtracking).
 *
 * The translation is exact for everything it accepts; the character sets
 * whose meaning differs between ECMAScript and RE2 are spelt out as
 * explicit code point ranges:
 *
 *   ECMAScript (u flag)        emitted for RE2
 *   .                          [^\n\r\x{2028}\x{2029}]
 *   \d \w (ASCII in both)      [0-9]  [0-9A-Za-z_]
 *   \s (Unicode white space)   [\t\n\x{B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}…\x{FEFF}]
 *   ^ $ (no m flag)            ^ $ (RE2 without m: start/end of text only)
 *   (?<name>…) (…)             (?:…)   (only a yes/no answer is needed)
 *   x*? x+? (lazy)             x* x+   (greediness cannot change a yes/no)
 *
 * Refused, because no linear engine can run them or RE2 lacks them:
 * backreferences, lookahead, regexp modifiers `(?i:…)`, `\p{…}` properties
 * RE2 does not know, repetition counts above 1000. Lookbehind is accepted
 * (re2js runs capture-free lookbehind in linear time).
 *
 * ~300 lines: the ECMAScript → RE2 translation is one recursive walk over
 * the regexpp AST; its cases only make sense side by side.
 */
import { RegExpParser, type AST } from '@eslint-community/regexpp';
import { RE2JS } from 're2js';

/** Outcome of {@link translatePattern}: RE2 syntax and flags, or why the pattern cannot run in linear time. */
export type Translation = { ok: true; source: string; flags: number } | { ok: false; reason: string };

/** RE2 limit on the product of nested repetition counts (RE2's `RepetitionWalker`, mirrored by re2js). */
const MAX_REPEAT = 1000;

const parser = new RegExpParser({ ecmaVersion: 2025 });

type Ranges = Array<[number, number]>;
const MAX_CODE_POINT = 0x10ffff;
const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
// ECMA-262 WhiteSpace + LineTerminator (what \s matches).
// biome-ignore format: one range table per line reads as the standard lists it
const SPACE: Ranges = [[0x09, 0x0d], [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x2028, 0x2029], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000], [0xfeff, 0xfeff]];
const LINE_TERMINATORS: Ranges = [
  [0x0a, 0x0a],
  [0x0d, 0x0d],
  [0x2028, 0x2029],
];

// General_Category long names (ECMAScript accepts both) → the short names RE2 knows.
// biome-ignore format: aligned by category group, as in the Unicode tables
const CATEGORY_ALIASES: Readonly<Record<string, string>> = {
  Letter: 'L', Cased_Letter: 'LC', Uppercase_Letter: 'Lu', Lowercase_Letter: 'Ll', Titlecase_Letter: 'Lt', Modifier_Letter: 'Lm', Other_Letter: 'Lo',
  Mark: 'M', Combining_Mark: 'M', Nonspacing_Mark: 'Mn', Spacing_Mark: 'Mc', Enclosing_Mark: 'Me',
  Number: 'N', Decimal_Number: 'Nd', digit: 'Nd', Letter_Number: 'Nl', Other_Number: 'No',
  Punctuation: 'P', punct: 'P', Connector_Punctuation: 'Pc', Dash_Punctuation: 'Pd', Open_Punctuation: 'Ps', Close_Punctuation: 'Pe',
  Initial_Punctuation: 'Pi', Final_Punctuation: 'Pf', Other_Punctuation: 'Po',
  Symbol: 'S', Math_Symbol: 'Sm', Currency_Symbol: 'Sc', Modifier_Symbol: 'Sk', Other_Symbol: 'So',
  Separator: 'Z', Space_Separator: 'Zs', Line_Separator: 'Zl', Paragraph_Separator: 'Zp',
  Other: 'C', Control: 'Cc', cntrl: 'Cc', Format: 'Cf', Surrogate: 'Cs', Private_Use: 'Co', Unassigned: 'Cn',
};

class Untranslatable extends Error {}

/** A class no code point is in: RE2's way of writing "fails here" (it has no empty class). */
const NEVER = '[^\\x{0}-\\x{10ffff}]';

/**
 * Translates an ECMA-262 pattern (read with the `u` flag, as TypeBox compiles
 * it) into RE2 syntax for re2js. Parsing and translating only: cheap enough
 * for every pattern of every catalog build. Compiling the RE2 program (about
 * a millisecond) is left to the shard, on the tool's first call.
 */
export function translatePattern(pattern: string): Translation {
  let ast: AST.Pattern;
  try {
    ast = parser.parsePattern(pattern, 0, pattern.length, { unicode: true });
  } catch (e) {
    return { ok: false, reason: `is not a valid regular expression (${(e as Error).message})` };
  }
  const state: State = { lookbehind: false, repeat: 1 };
  try {
    const source = alternatives(ast.alternatives, state);
    return { ok: true, source, flags: state.lookbehind ? RE2JS.LOOKBEHINDS : 0 };
  } catch (e) {
    if (e instanceof Untranslatable) return { ok: false, reason: e.message };
    throw e;
  }
}

/** Compiles a translation for matching; throws {@link UnsafePatternError} if RE2 refuses it after all. */
export function compileTranslation(pattern: string, t: { source: string; flags: number }): RE2JS {
  try {
    return RE2JS.compile(t.source, t.flags);
  } catch (e) {
    throw new UnsafePatternError(pattern, `cannot run on the linear-time engine (${(e as Error).message})`);
  }
}

interface State {
  lookbehind: boolean;
  /** Product of the repetition counts enclosing the current node. */
  repeat: number;
}

const verdicts = new Map<string, string | null>();
const MAX_VERDICTS = 4096;

/**
 * Why `pattern` cannot be run in linear time, or null when it can. Memoised
 * (bounded): the same patterns recur across tools, services and refreshes,
 * and a translation costs 20–45 µs where `new RegExp` costs 0.5 µs.
 */
export function linearPatternProblem(pattern: string): string | null {
  let verdict = verdicts.get(pattern);
  if (verdict === undefined) {
    const t = translatePattern(pattern);
    verdict = t.ok ? null : t.reason;
    if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
    verdicts.set(pattern, verdict);
  }
  return verdict;
}

function alternatives(list: readonly AST.Alternative[], state: State): string {
  return list.map((a) => a.elements.map((e) => element(e, state)).join('')).join('|');
}

function element(node: AST.Element, state: State): string {
  switch (node.type) {
    case 'Character':
      return char(node.value);
    case 'CharacterSet':
      return node.kind === 'property' ? property(node) : `[${ranges(setRanges(node))}]`;
    case 'CharacterClass':
      return characterClass(node);
    case 'ExpressionCharacterClass':
      throw new Untranslatable('uses a v-flag class expression, which the linear-time engine does not support');
    case 'Group':
      if (node.modifiers) throw new Untranslatable('uses a regexp modifier group "(?flags:…)", which the linear-time engine does not support');
      return `(?:${alternatives(node.alternatives, state)})`;
    case 'CapturingGroup':
      return `(?:${alternatives(node.alternatives, state)})`;
    case 'Quantifier': {
      const max = node.max === Infinity ? '' : String(node.max);
      const count =
        node.min === 0 && node.max === Infinity
          ? '*'
          : node.min === 1 && node.max === Infinity
            ? '+'
            : node.min === 0 && node.max === 1
              ? '?'
              : node.min === node.max
                ? `{${node.min}}`
                : `{${node.min},${max}}`;
      // Like RE2: counted repetitions, multiplied through their nesting, may not exceed 1000.
      const factor = count.startsWith('{') ? (node.max === Infinity ? node.min : node.max) : 1;
      const outer = state.repeat;
      if (outer * factor > MAX_REPEAT) {
        throw new Untranslatable(
          `repeats ${node.raw.slice(node.element.raw.length)}${outer > 1 ? ' inside another counted repetition' : ''}: the linear-time engine allows repetition counts up to ${MAX_REPEAT} (use minLength/maxLength for longer limits)`,
        );
      }
      state.repeat = outer * Math.max(factor, 1);
      try {
        return `(?:${element(node.element, state)})${count}`;
      } finally {
        state.repeat = outer;
      }
    }
    case 'Assertion':
      switch (node.kind) {
        case 'start':
          return '^';
        case 'end':
          return '$';
        case 'word':
          return node.negate ? '\\B' : '\\b';
        case 'lookahead':
          // An empty lookahead is a constant: "(?!)" never matches. TypeBox itself builds "(?!)" for
          // additionalProperties next to no properties, so it must translate.
          if (node.alternatives.length === 1 && node.alternatives[0]?.elements.length === 0) return node.negate ? NEVER : '(?:)';
          throw new Untranslatable(`uses a lookahead "${node.raw}", which needs a backtracking engine`);
        case 'lookbehind':
          state.lookbehind = true;
          return `(?<${node.negate ? '!' : '='}${alternatives(node.alternatives, state)})`;
      }
      break;
    case 'Backreference':
      throw new Untranslatable(`uses a backreference "${node.raw}", which needs a backtracking engine`);
  }
  throw new Untranslatable(`uses "${(node as { raw: string }).raw}", which the linear-time engine does not support`);
}

function characterClass(node: AST.CharacterClass): string {
  if (node.unicodeSets) throw new Untranslatable('uses a v-flag character class, which the linear-time engine does not support');
  let set: Ranges = [];
  const properties: string[] = [];
  for (const e of node.elements) {
    if (e.type === 'Character') set.push([e.value, e.value]);
    else if (e.type === 'CharacterClassRange') set.push([e.min.value, e.max.value]);
    else if (e.type === 'CharacterSet' && e.kind === 'property') properties.push(property(e));
    else if (e.type === 'CharacterSet') set = set.concat(setRanges(e));
    else throw new Untranslatable(`uses "${(e as { raw: string }).raw}" in a character class, which the linear-time engine does not support`);
  }
  // RE2 has no empty class: [] never matches, [^] matches any character.
  if (set.length === 0 && properties.length === 0) return node.negate ? `[${ranges([[0, MAX_CODE_POINT]])}]` : NEVER;
  // A property inside a class is written as its bracketed form's body (\p{L} works inside RE2 classes too).
  return `[${node.negate ? '^' : ''}${ranges(normalise(set))}${properties.join('')}]`;
}

function setRanges(node: AST.EscapeCharacterSet | AST.AnyCharacterSet): Ranges {
  const base = node.kind === 'any' ? complement(LINE_TERMINATORS) : node.kind === 'digit' ? DIGIT : node.kind === 'word' ? WORD : SPACE;
  return node.kind !== 'any' && node.negate ? complement(base) : base;
}

function property(node: AST.UnicodePropertyCharacterSet): string {
  if (node.strings) throw new Untranslatable(`uses the property of strings "${node.raw}", which the linear-time engine does not support`);
  let name: string;
  if (node.value === null)
    name = CATEGORY_ALIASES[node.key] ?? node.key; // \p{L}, \p{Letter} arrive as General_Category; this is a binary property
  else if (node.key === 'General_Category' || node.key === 'gc') name = CATEGORY_ALIASES[node.value] ?? node.value;
  else if (node.key === 'Script' || node.key === 'sc') name = node.value;
  else throw new Untranslatable(`uses the property "${node.raw}", which the linear-time engine does not support`);
  if (name === 'LC') throw new Untranslatable(`uses the property "${node.raw}", which the linear-time engine does not support`);
  if (!knownProperty(name)) {
    throw new Untranslatable(`uses the property "${node.raw}", which the linear-time engine does not know (use the long script name or a general category)`);
  }
  return `\\${node.negate ? 'P' : 'p'}{${name}}`;
}

/** Property names re2js knows, learnt once each (few distinct names ever appear). */
const propertyNames = new Map<string, boolean>();
function knownProperty(name: string): boolean {
  let known = propertyNames.get(name);
  if (known === undefined) {
    try {
      RE2JS.compile(`\\p{${name}}`);
      known = true;
    } catch {
      known = false;
    }
    if (propertyNames.size < 1024) propertyNames.set(name, known);
  }
  return known;
}

function char(cp: number): string {
  // Letters and digits stand for themselves in both syntaxes; everything else is escaped by code point.
  return (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) ? String.fromCharCode(cp) : `\\x{${cp.toString(16)}}`;
}

function ranges(list: Ranges): string {
  return list.map(([lo, hi]) => (lo === hi ? char(lo) : `${char(lo)}-${char(hi)}`)).join('');
}

function normalise(list: Ranges): Ranges {
  const sorted = [...list].sort((a, b) => a[0] - b[0]);
  const out: Ranges = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

function complement(list: Ranges): Ranges {
  const out: Ranges = [];
  let next = 0;
  for (const [lo, hi] of normalise(list)) {
    if (lo > next) out.push([next, lo - 1]);
    next = hi + 1;
  }
  if (next <= MAX_CODE_POINT) out.push([next, MAX_CODE_POINT]);
  return out;
}

/**
 * A RegExp whose `test` runs on the linear-time engine. It is a real
 * `RegExp` (TypeBox accepts a RegExp for `pattern` and checks `instanceof`),
 * but every other matching entry point throws instead of silently
 * backtracking on V8's engine: only `test` is ever needed to validate.
 */
export class LinearRegExp extends RegExp {
  readonly #engine: RE2JS;

  /** Throws {@link UnsafePatternError} when `pattern` cannot run in linear time. */
  constructor(pattern: string) {
    const t = translatePattern(pattern);
    if (!t.ok) throw new UnsafePatternError(pattern, t.reason);
    const engine = compileTranslation(pattern, t);
    super(pattern, 'u');
    this.#engine = engine;
  }

  override test(input: string): boolean {
    return this.#engine.test(String(input));
  }

  override exec(_input: string): RegExpExecArray | null {
    throw new Error('LinearRegExp supports test() only');
  }
}

/** A schema pattern that the gateway refuses to run (it would need a backtracking engine). */
export class UnsafePatternError extends Error {
  constructor(
    readonly pattern: string,
    readonly reason: string,
  ) {
    super(`pattern ${JSON.stringify(pattern)} ${reason}`);
    this.name = 'UnsafePatternError';
  }
}
