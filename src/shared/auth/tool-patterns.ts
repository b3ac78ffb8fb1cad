/**
 * Tool-name patterns of authorization rules: literal characters and `*`
 * (any run, including none). Matched by the classic two-pointer wildcard
 * walk — O(name × pattern) at worst, no regular expression, so a pattern
 * from the configuration can never backtrack exponentially.
 */

/** True when `name` matches `pattern` (`*` = any run of characters). */
export function globMatch(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    if (p < pattern.length && pattern.charCodeAt(p) !== 42 /* * */ && pattern.charCodeAt(p) === name.charCodeAt(n)) {
      p++;
      n++;
    } else if (p < pattern.length && pattern.charCodeAt(p) === 42) {
      star = p++;
      resume = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 42) p++;
  return p === pattern.length;
}

/** A set of patterns; `allowsAll` when one of them is `*` alone. */
export class ToolPatternSet {
  readonly allowsAll: boolean;
  private readonly literals: ReadonlySet<string>;
  private readonly globs: readonly string[];

  constructor(patterns: readonly string[]) {
    this.allowsAll = patterns.includes('*');
    this.literals = new Set(patterns.filter((p) => !p.includes('*')));
    this.globs = patterns.filter((p) => p.includes('*'));
  }

  /** True when some pattern matches `name`. */
  matches(name: string): boolean {
    if (this.allowsAll || this.literals.has(name)) return true;
    for (const g of this.globs) if (globMatch(g, name)) return true;
    return false;
  }
}
