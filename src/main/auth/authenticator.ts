/**
 * The auth step of one acceptor thread: for a request on a route, decide —
 * from the credential headers the endpoint copied — whether it is open (no
 * policy), allowed (with the caller's tool filter), refused (a ready reply),
 * or pending (first sight of a JWT: verification runs, the body is read
 * meanwhile). See docs/contracts/authentication.md.
 *
 * ```
 *  headers ─► route policy? ──no──► open
 *               │yes
 *               ▼
 *  Bearer JWT ─► sha256 → TokenCache ──miss──► verify (jose, once per token; deduplicated) ─┐
 *               │hit                                                                        │
 *               ▼                                                         verdict cached ◄──┘
 *  verdict ok? ─► provider in policy? ─► aud ∋ route resource (RFC 8707)? ─► rules → ToolFilter
 *  API key  ──► sha256 → key table ────────────────────────────────────────► rules → ToolFilter
 *               ▼
 *  rate limit (caller, route) ─► allow
 * ```
 * After the first sight a check is a hash, two Map lookups and a Set
 * lookup; no JSON is parsed.
 *
 * ~310 lines: the decision diagram above is one function of its parts
 * (token cache, verifiers, keys, limits), each in its own module already.
 */
import type { Buffer } from 'node:buffer';
import assert from 'node:assert';
import { decodeJwt } from '../../shared/vendor/jose.js';
import { authUnavailableReply, rateLimitedReply, routeChallenges, routeResource, type RouteChallenges, type RouteResource } from '../../shared/auth/challenge.js';
import type { AuthConfig } from '../../shared/auth/config-schema.js';
import { CompiledPolicy, type Principal, type ToolFilter } from '../../shared/auth/policy.js';
import type { SecretProblem } from '../../shared/auth/secret-source.js';
import type { Reply } from '../../shared/protocol/reply.js';
import { ApiKeyStore } from './api-keys.js';
import type { AuthMetrics, RefusalOutcome } from './auth-metrics.js';
import { JwtVerifier, type JwtResult } from './jwt-verifier.js';
import { RateLimiter, type CallSlots, type Limited } from './rate-limiter.js';
import { TokenCache, tokenKey, type TokenVerdict } from './token-cache.js';

/** Auth state of one pooled request (reused; reset by {@link Authenticator.check}). */
export class RequestAuth {
  /** Incremented per request: a verification that settles for an older request is ignored. */
  ticket = 0;
  pending = false;
  /** The body, when it arrived while {@link pending}. */
  body: Buffer | null = null;
  principal: Principal | null = null;
  /** The caller's tools; null on an open route. */
  filter: ToolFilter | null = null;
  policy: CompiledPolicy | null = null;
  /** `Authorization` header. */
  authorization = '';
  /** Values of the extra API-key headers, in {@link Authenticator.extraHeaders} order. */
  readonly extra: string[] = [];
  readonly slots: CallSlots = { caller: null, route: null };
}

/** A refusal: the reply, the outcome label and a machine reason for the audit line. */
export interface Refusal {
  kind: 'deny';
  reply: Reply;
  outcome: RefusalOutcome;
  reason: string;
}

/** What the auth step decided. */
export type AuthDecision = { kind: 'open' } | { kind: 'allow' } | Refusal | { kind: 'pending'; settled: Promise<AuthDecision> };

const OPEN: AuthDecision = Object.freeze({ kind: 'open' });
const ALLOW: AuthDecision = Object.freeze({ kind: 'allow' });

/** A protected route's precomputed pieces. */
interface RouteAuth {
  readonly policy: CompiledPolicy;
  readonly resource: RouteResource;
  readonly challenges: RouteChallenges;
  /** Accepted `aud` values per JWT provider of the policy. */
  readonly audiences: ReadonlyMap<string, readonly string[]>;
  /** The policy names at least one JWT provider. */
  readonly hasJwt: boolean;
  readonly refusals: Record<string, Refusal>;
}

/**
 * Three dot-separated segments: worth a JWT check (anything else is tried as
 * an API key). Two indexOf calls, not a regular expression: a regex over a
 * 1 KiB token cost ~1.3 µs per request; jose validates the segments anyway.
 */
function jwtShaped(token: string): boolean {
  const a = token.indexOf('.');
  if (a <= 0) return false;
  const b = token.indexOf('.', a + 1);
  return b > a + 1 && token.indexOf('.', b + 1) < 0;
}

/** `Bearer <token>` (scheme case-insensitive, RFC 6750 §2.1) → token; '' otherwise. */
export function bearerToken(authorization: string): string {
  if (authorization.length < 8 || authorization.charCodeAt(6) !== 32 || authorization.slice(0, 6).toLowerCase() !== 'bearer') return '';
  return authorization.slice(7).trim();
}

/** The auth step of one acceptor thread. */
export class Authenticator {
  /** Lowercase names of the non-`authorization` headers API keys arrive in (the endpoint copies them). */
  readonly extraHeaders: readonly string[];
  /** True when at least one route can have a policy (else the endpoint skips the step entirely). */
  readonly enabled: boolean;
  private readonly policies = new Map<string, CompiledPolicy>();
  private readonly jwt = new Map<string, JwtVerifier>();
  private readonly byIssuer = new Map<string, JwtVerifier>();
  private readonly apiKeys = new Map<string, ApiKeyStore>();
  private readonly routes = new Map<string, RouteAuth | null>();
  private readonly cache: TokenCache;
  private readonly inflight = new Map<string, Promise<TokenVerdict | string>>();
  private readonly limiter: RateLimiter;
  private pendingCount = 0;

  constructor(
    private readonly config: AuthConfig,
    private readonly retryAfterSeconds: number,
    private readonly metrics: AuthMetrics,
    onProblem: SecretProblem,
  ) {
    this.enabled = config.defaultPolicy !== null || Object.keys(config.routes).length > 0;
    this.cache = new TokenCache(config.tokenCacheSize);
    this.limiter = new RateLimiter(config.maxTrackedCallers);
    for (const [name, p] of Object.entries(config.policies)) this.policies.set(name, new CompiledPolicy(name, p));
    const extra = new Set<string>();
    if (this.enabled) {
      for (const [name, p] of Object.entries(config.providers)) {
        if (p.type === 'jwt') {
          const v = new JwtVerifier(name, p, config.secretFileCheckMs, onProblem, (provider, ok) => metrics.jwksFetched(provider, ok));
          this.jwt.set(name, v);
          this.byIssuer.set(p.issuer, v);
        } else {
          this.apiKeys.set(name, new ApiKeyStore(name, p, config.secretFileCheckMs, onProblem));
          if (p.header !== 'authorization') extra.add(p.header);
        }
      }
    }
    this.extraHeaders = [...extra];
  }

  /** The policy name of a route, or null when the route is open. */
  policyName(routeKey: string): string | null {
    return this.config.routes[routeKey] ?? this.config.defaultPolicy;
  }

  /** The protected-resource pieces of a route (null: open), built on first use. */
  routeAuth(routeKey: string): RouteAuth | null {
    let r = this.routes.get(routeKey);
    if (r !== undefined) return r;
    const name = this.policyName(routeKey);
    const policy = name === null ? undefined : this.policies.get(name);
    if (policy === undefined) r = null;
    else {
      const base = this.config.resourceBaseUrl;
      assert(base !== null, 'auth.resourceBaseUrl is required when a route has a policy (config-schema.ts validates it)');
      const resource = routeResource(base, routeKey);
      const challenges = routeChallenges(resource, policy.scopesSupported);
      const audiences = new Map<string, readonly string[]>();
      for (const p of policy.providers) {
        const cfg = this.config.providers[p];
        if (cfg?.type === 'jwt') audiences.set(p, cfg.audiences ?? [resource.resource]);
      }
      const refusals: Record<string, Refusal> = {
        missing: { kind: 'deny', reply: challenges.missing, outcome: 'unauthenticated', reason: 'missing' },
        forbidden: { kind: 'deny', reply: challenges.forbidden, outcome: 'forbidden', reason: 'no_rule' },
      };
      for (const [why, reply] of Object.entries(challenges.invalid)) refusals[why] = { kind: 'deny', reply, outcome: 'unauthenticated', reason: why };
      r = { policy, resource, challenges, audiences, hasJwt: audiences.size > 0, refusals };
    }
    // Route keys reaching here passed the gate's directory check: the map is bounded by the routes.
    this.routes.set(routeKey, r);
    return r;
  }

  /** `authorization_servers` of a policy's metadata: every JWT provider's (default: its issuer). */
  authorizationServers(policy: CompiledPolicy): string[] {
    const out = new Set<string>();
    for (const p of policy.providers) {
      const cfg = this.config.providers[p];
      if (cfg?.type === 'jwt') for (const s of cfg.authorizationServers ?? [cfg.issuer]) out.add(s);
    }
    return [...out];
  }

  /**
   * Decides a request; `ra` holds the copied headers and receives the caller.
   * `pending` settles with the final decision (never rejects).
   */
  check(routeKey: string, ra: RequestAuth, now: number): AuthDecision {
    ra.principal = null;
    ra.filter = null;
    ra.policy = null;
    const route = this.routeAuth(routeKey);
    if (route === null) return OPEN;
    ra.policy = route.policy;
    const bearer = bearerToken(ra.authorization);
    const hasJwtProvider = route.hasJwt;
    if (bearer !== '' && hasJwtProvider && jwtShaped(bearer)) {
      const key = tokenKey(bearer);
      const verdict = this.cache.get(key, now);
      if (verdict !== undefined) return this.withVerdict(routeKey, route, ra, verdict, now);
      return this.firstSight(routeKey, route, ra, key, bearer);
    }
    // API keys: the first provider of the policy whose header carries a value decides.
    let extraIndex = -1;
    for (const p of route.policy.providers) {
      const store = this.apiKeys.get(p);
      if (store === undefined) continue;
      extraIndex = store.header === 'authorization' ? -1 : this.extraHeaders.indexOf(store.header);
      const value = extraIndex < 0 ? bearer : (ra.extra[extraIndex] ?? '');
      if (value === '') continue;
      const principal = store.lookup(value);
      if (principal === null) return route.refusals['unknown_api_key'] as Refusal;
      return this.authorize(routeKey, route, ra, principal, null, now);
    }
    if (bearer !== '') return route.refusals[hasJwtProvider ? 'malformed' : 'wrong_provider'] as Refusal;
    return route.refusals['missing'] as Refusal;
  }

  /** Releases what an admitted `tools/call` reserved. */
  callEnded(ra: RequestAuth): void {
    this.limiter.releaseCall(ra.slots);
  }

  /** Reserves a concurrent-call slot for a `tools/call`; a refusal is a 429 with the request's id. */
  admitCall(routeKey: string, ra: RequestAuth, idText: string, now: number): Refusal | null {
    const policy = ra.policy;
    if (policy === null || ra.principal === null) return null;
    const limited = this.limiter.acquireCall(ra.principal.id, routeKey, policy.perCaller, policy.perRoute, now, ra.slots);
    return limited === null ? null : limitedRefusal(limited, idText);
  }

  close(): void {
    for (const v of this.jwt.values()) v.close();
    for (const s of this.apiKeys.values()) s.close();
  }

  private withVerdict(routeKey: string, route: RouteAuth, ra: RequestAuth, v: TokenVerdict, now: number): AuthDecision {
    if (!v.ok) return route.refusals[v.why] as Refusal;
    const provider = v.principal.provider;
    const accepted = route.audiences.get(provider);
    if (accepted === undefined) return route.refusals['wrong_provider'] as Refusal;
    let audOk = false;
    for (const a of accepted) if (v.audiences.has(a)) audOk = true;
    if (!audOk) return route.refusals['audience'] as Refusal;
    return this.authorize(routeKey, route, ra, v.principal, v.decisions, now);
  }

  private authorize(routeKey: string, route: RouteAuth, ra: RequestAuth, principal: Principal, memo: Map<string, ToolFilter | null> | null, now: number): AuthDecision {
    const policy = route.policy;
    let filter = memo?.get(policy.name);
    if (filter === undefined) {
      filter = policy.decide(principal);
      memo?.set(policy.name, filter);
    }
    ra.principal = principal;
    if (filter === null) return route.refusals['forbidden'] as Refusal;
    const limited = this.limiter.admit(principal.id, routeKey, policy.perCaller, policy.perRoute, now);
    if (limited !== null) return limitedRefusal(limited, null);
    ra.filter = filter;
    return ALLOW;
  }

  private firstSight(routeKey: string, route: RouteAuth, ra: RequestAuth, key: string, token: string): AuthDecision {
    let verdict = this.inflight.get(key);
    if (verdict === undefined) {
      if (this.pendingCount >= this.config.maxPendingVerifications) {
        return { kind: 'deny', reply: authUnavailableReply(this.retryAfterSeconds, 'too many new tokens are being checked'), outcome: 'auth_unavailable', reason: 'busy' };
      }
      this.pendingCount++;
      const started = this.verify(token).then((v) => {
        this.pendingCount--;
        this.inflight.delete(key);
        if (typeof v !== 'string') this.cache.set(key, v);
        return v;
      });
      this.inflight.set(key, started);
      verdict = started;
    }
    const settled = verdict.then((v): AuthDecision => {
      if (typeof v === 'string') return { kind: 'deny', reply: authUnavailableReply(this.retryAfterSeconds, 'the signing keys cannot be fetched'), outcome: 'auth_unavailable', reason: v };
      return this.withVerdict(routeKey, route, ra, v, Date.now());
    });
    return { kind: 'pending', settled };
  }

  /** A verdict for the cache, or the reason the keys were unavailable (not cached). Never rejects. */
  private async verify(token: string): Promise<TokenVerdict | string> {
    const failUntil = Date.now() + this.config.failedTokenCacheSeconds * 1000;
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return { ok: false, why: 'malformed', expiresAt: failUntil };
    }
    const verifier = typeof iss === 'string' ? this.byIssuer.get(iss) : undefined;
    if (verifier === undefined) return { ok: false, why: 'issuer', expiresAt: failUntil };
    let result: JwtResult;
    try {
      result = await verifier.verify(token);
    } catch (err) {
      result = { kind: 'unavailable', why: (err as Error).message };
    }
    this.metrics.verified(verifier.name, result.kind);
    if (result.kind === 'unavailable') return result.why;
    if (result.kind === 'invalid') return { ok: false, why: result.why, expiresAt: failUntil };
    return { ok: true, principal: result.principal, audiences: result.audiences, expiresAt: result.expiresAtMs, decisions: new Map() };
  }
}

function limitedRefusal(l: Limited, idText: string | null): Refusal {
  return { kind: 'deny', reply: rateLimitedReply(l.retryAfterSeconds, l.what, l.limit, idText), outcome: 'rate_limited', reason: `${l.what}_${l.limit}` };
}
