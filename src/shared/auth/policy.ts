/**
 * Authorization rules of one policy, evaluated for an authenticated caller
 * (a {@link Principal}): which rules match, and so which tools the caller may
 * list and call on a route that uses the policy. Pure: no I/O, no clock.
 *
 * A caller's tools are the union of the tools of every matching rule. The
 * set of matching rules is the caller's *rule set*; callers with the same
 * rule set share one {@link ToolFilter} object (and so one precomputed
 * `tools/list` variant per route snapshot, `list-variant.ts`).
 */
import type { AuthPolicyConfig, AuthRuleConfig, BucketConfig } from './config-schema.js';
import { ToolPatternSet } from './tool-patterns.js';

/** Who called, as established by a provider. Immutable; cached with the token. */
export interface Principal {
  /** `{provider}\u0000{subject}`: the rate-limit identity (two providers may reuse a subject). */
  readonly id: string;
  /** `sub` of a JWT; `apikey:<name>` for an API key. */
  readonly subject: string;
  /** The provider (config name) that established it. */
  readonly provider: string;
  /** Name of the API key, `null` for a JWT. */
  readonly apiKey: string | null;
  /** Granted scopes (`scope` space-separated, or `scp` array). */
  readonly scopes: ReadonlySet<string>;
  /** The verified JWT claims (empty for an API key). */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** What a caller may use on a route: shared by every caller with the same rule set. */
export interface ToolFilter {
  /** The matching rule indices, e.g. `0,2`: the identity of the rule set. */
  readonly key: string;
  /** True when every tool is allowed (no filtering needed). */
  readonly allowsAll: boolean;
  allows(toolName: string): boolean;
}

/** Most remembered per-name answers of one filter (names come from clients). */
const MAX_MEMO = 4096;

class PatternFilter implements ToolFilter {
  readonly allowsAll: boolean;
  private readonly memo = new Map<string, boolean>();

  constructor(
    readonly key: string,
    private readonly patterns: ToolPatternSet,
  ) {
    this.allowsAll = patterns.allowsAll;
  }

  allows(toolName: string): boolean {
    if (this.allowsAll) return true;
    let hit = this.memo.get(toolName);
    if (hit === undefined) {
      hit = this.patterns.matches(toolName);
      if (this.memo.size >= MAX_MEMO) this.memo.clear();
      this.memo.set(toolName, hit);
    }
    return hit;
  }
}

/** The scopes of a JWT payload: `scope` (RFC 8693 / RFC 9068, space-separated) or `scp` (array or string). */
export function scopesOf(claims: Readonly<Record<string, unknown>>): Set<string> {
  const out = new Set<string>();
  const add = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const s of v.split(' ')) if (s !== '') out.add(s);
    } else if (Array.isArray(v)) {
      for (const s of v) if (typeof s === 'string' && s !== '') out.add(s);
    }
  };
  add(claims['scope']);
  add(claims['scp']);
  return out;
}

/** True when a claim value (string, number, boolean or an array of them) holds one of `wanted`. */
function claimHolds(value: unknown, wanted: readonly string[]): boolean {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return wanted.includes(String(value));
  if (Array.isArray(value)) return value.some((v) => (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && wanted.includes(String(v)));
  return false;
}

/** A dotted claim path (`realm_access.roles`) of a payload. */
function claimAt(claims: Readonly<Record<string, unknown>>, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let node: unknown = claims;
  for (const part of path.split('.')) {
    if (typeof node !== 'object' || node === null || Array.isArray(node) || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

function ruleMatches(rule: AuthRuleConfig, p: Principal): boolean {
  const w = rule.when;
  if (w.subjects !== undefined && !w.subjects.includes(p.subject)) return false;
  if (w.apiKeys !== undefined && (p.apiKey === null || !w.apiKeys.includes(p.apiKey))) return false;
  if (w.scopes !== undefined && !w.scopes.every((s) => p.scopes.has(s))) return false;
  if (w.claims !== undefined) {
    for (const [claim, values] of Object.entries(w.claims)) {
      if (!claimHolds(claimAt(p.claims, claim), typeof values === 'string' ? [values] : values)) return false;
    }
  }
  return true;
}

/** One policy, compiled once per acceptor thread. */
export class CompiledPolicy {
  readonly providers: readonly string[];
  readonly scopesSupported: readonly string[];
  readonly perCaller: BucketConfig | null;
  readonly perRoute: BucketConfig | null;
  private readonly rules: readonly AuthRuleConfig[];
  /** Rule-set key → its filter; at most 2^rules entries, in practice a handful. */
  private readonly filters = new Map<string, ToolFilter>();

  constructor(
    readonly name: string,
    config: AuthPolicyConfig,
  ) {
    this.providers = config.providers;
    this.scopesSupported = config.scopesSupported ?? [];
    this.rules = config.rules;
    this.perCaller = config.rateLimit?.perCaller ?? null;
    this.perRoute = config.rateLimit?.perRoute ?? null;
  }

  /** The caller's tools on this policy's routes, or null when no rule matches (403). */
  decide(p: Principal): ToolFilter | null {
    let key = '';
    for (let i = 0; i < this.rules.length; i++) {
      if (ruleMatches(this.rules[i] as AuthRuleConfig, p)) key = key === '' ? String(i) : `${key},${i}`;
    }
    if (key === '') return null;
    let filter = this.filters.get(key);
    if (filter === undefined) {
      const patterns = key.split(',').flatMap((i) => (this.rules[Number(i)] as AuthRuleConfig).tools);
      filter = new PatternFilter(key, new ToolPatternSet(patterns));
      this.filters.set(key, filter);
    }
    return filter;
  }
}
