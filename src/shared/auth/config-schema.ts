/**
 * The `auth` section of the configuration (docs/contracts/authentication.md,
 * ADR-0011): inbound authentication providers, per-route policies (rules and
 * rate limits), and the credentials the gateway itself presents to Tool
 * Services and the Portal. Kept out of `config/schema.ts` so that file only
 * gains one line; the cross-key checks are {@link authConfigProblems}.
 *
 * Secrets are never values here: API keys are SHA-256 hashes, header values
 * and TLS material are read from files or environment variables
 * (`secret-source.ts`). Every key holding even a hash is named so that
 * `--check-config` redacts it (`config/redact.ts`, SECRET_KEY_WORDS).
 *
 * ~310 lines of schema declarations (one per auth key) and their defaults:
 * long because the key list is, not because it does several jobs.
 */
import { Type, type Static } from '../vendor/typebox.js';

const Name = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' });
/**
 * Record keys that are names: no `pattern` here (TypeBox would turn it into a
 * template-literal key type, which this pattern cannot be, making the static
 * type `never`); {@link authConfigProblems} checks them against {@link NAME_RE}.
 */
const NameKey = Type.String({ minLength: 1, maxLength: 64 });
const NAME_RE = /^[A-Za-z0-9_.-]+$/;
const Path = Type.String({ minLength: 1, maxLength: 4096 });
const EnvName = Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Int = (min: number, max: number): ReturnType<typeof Type.Integer> => Type.Integer({ minimum: min, maximum: max });

/** A secret value: from a file (re-read when it changes) or an environment variable; never inline. */
export const SecretRefSchema = Type.Union([Type.Object({ file: Path }, { additionalProperties: false }), Type.Object({ env: EnvName }, { additionalProperties: false })]);
export type SecretRef = Static<typeof SecretRefSchema>;

/** JWS algorithms a JWT provider may accept: asymmetric only (an HS* key would have to be a shared secret). */
const JwtAlgorithm = Type.Union([
  Type.Literal('RS256'),
  Type.Literal('RS384'),
  Type.Literal('RS512'),
  Type.Literal('PS256'),
  Type.Literal('PS384'),
  Type.Literal('PS512'),
  Type.Literal('ES256'),
  Type.Literal('ES384'),
  Type.Literal('ES512'),
  Type.Literal('EdDSA'),
]);

const JwtProviderSchema = Type.Object(
  {
    type: Type.Literal('jwt'),
    /** Expected `iss`; also the default entry of the metadata's `authorization_servers`. */
    issuer: Url,
    /** JWKS over http(s), cached and refreshed by jose (exactly one of jwksUrl / jwksFile). */
    jwksUrl: Type.Optional(Url),
    /** A local JWKS document, re-read when it changes. */
    jwksFile: Type.Optional(Path),
    algorithms: Type.Array(JwtAlgorithm, { minItems: 1, maxItems: 10 }),
    /** Accepted `aud` values; absent: the route's resource URL (RFC 8707 audience binding). */
    audiences: Type.Optional(Type.Array(Url, { minItems: 1, maxItems: 16 })),
    clockToleranceSeconds: Type.Optional(Int(0, 300)),
    /** Keys kept at most this long before the JWKS is fetched again. */
    jwksCacheMaxAgeMs: Type.Optional(Int(1000, 86_400_000)),
    /** After a fetch, an unknown `kid` triggers another fetch only after this long (per acceptor thread). */
    jwksCooldownMs: Type.Optional(Int(0, 3_600_000)),
    jwksTimeoutMs: Type.Optional(Int(1, 60_000)),
    /** PEM CA bundle for an https JWKS endpoint with a private CA. */
    jwksCaFile: Type.Optional(Path),
    /** `authorization_servers` of the protected resource metadata; default: `[issuer]`. */
    authorizationServers: Type.Optional(Type.Array(Url, { minItems: 1, maxItems: 8 })),
  },
  { additionalProperties: false },
);

const ApiKeyProviderSchema = Type.Object(
  {
    type: Type.Literal('apiKeys'),
    /** Where the key is sent: `authorization` (as `Bearer <key>`) or another lowercase header name. */
    header: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9-]+$' }),
    /** Key name → hex SHA-256 of the key (the key itself is never configured). */
    keyHashes: Type.Optional(Type.Record(NameKey, Type.String({ minLength: 64, maxLength: 64 }), { maxProperties: 10_000 })),
    /** A file with the same map (JSON or YAML), e.g. a mounted Secret; re-read when it changes. */
    keyHashesFile: Type.Optional(Path),
  },
  { additionalProperties: false },
);

const ProviderSchema = Type.Union([JwtProviderSchema, ApiKeyProviderSchema]);
export type AuthProviderConfig = Static<typeof ProviderSchema>;
export type JwtProviderConfig = Static<typeof JwtProviderSchema>;
export type ApiKeyProviderConfig = Static<typeof ApiKeyProviderSchema>;

/** A claim condition: the claim (a string or an array of strings) holds at least one of the values. */
const ClaimValues = Type.Union([Type.String({ maxLength: 512 }), Type.Array(Type.String({ maxLength: 512 }), { minItems: 1, maxItems: 256 })]);

const RuleSchema = Type.Object(
  {
    name: Type.Optional(Name),
    /** Conditions, all of which must hold; an empty object matches every authenticated caller. */
    when: Type.Object(
      {
        subjects: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 1024 })),
        /** API-key names of any apiKeys provider. */
        apiKeys: Type.Optional(Type.Array(Name, { maxItems: 1024 })),
        /** Every listed scope must be granted (`scope` / `scp` claim). */
        scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 64 })),
        claims: Type.Optional(Type.Record(Type.String({ minLength: 1, maxLength: 128 }), ClaimValues, { maxProperties: 32 })),
      },
      { additionalProperties: false },
    ),
    /** Tool names the rule allows; `*` matches any run of characters (`["*"]` = every tool). */
    tools: Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { minItems: 1, maxItems: 1024 }),
  },
  { additionalProperties: false },
);
export type AuthRuleConfig = Static<typeof RuleSchema>;

const BucketSchema = Type.Object(
  {
    /** Sustained rate; 0 = no request-rate limit. */
    requestsPerSecond: Type.Number({ minimum: 0, maximum: 1_000_000 }),
    /** Bucket size (requests allowed at once after idling); at least 1. */
    burst: Int(1, 10_000_000),
    /** `tools/call` in flight at once; 0 = no limit. */
    maxConcurrentCalls: Int(0, 1_000_000),
  },
  { additionalProperties: false },
);
export type BucketConfig = Static<typeof BucketSchema>;

const PolicySchema = Type.Object(
  {
    /** Provider names tried in order; a credential no provider accepts is 401. */
    providers: Type.Array(Name, { minItems: 1, maxItems: 8 }),
    /** Caller → tools; the union of every matching rule. No matching rule: 403. */
    rules: Type.Array(RuleSchema, { minItems: 1, maxItems: 64 }),
    /** `scopes_supported` of the route's metadata and `scope` of its 401 challenge. */
    scopesSupported: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }), { maxItems: 64 })),
    rateLimit: Type.Optional(Type.Object({ perCaller: Type.Optional(BucketSchema), perRoute: Type.Optional(BucketSchema) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
export type AuthPolicyConfig = Static<typeof PolicySchema>;

/** Headers from secrets, TLS material from files: what the gateway presents to one origin. */
const CredentialProfileSchema = Type.Object(
  {
    /** Origins (`https://host:port`) the profile is sent to; nothing else ever receives it. */
    origins: Type.Array(Url, { minItems: 1, maxItems: 64 }),
    /** Header name (lowercase) → secret; e.g. `authorization: {file: /var/run/secrets/hr/bearer}` (the file holds `Bearer …`). */
    headers: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z0-9-]{1,64}$' }), SecretRefSchema, { maxProperties: 16 })),
    /** PEM CA bundle that replaces the system CAs for these origins. */
    caFile: Type.Optional(Path),
    /** Client certificate and key (PEM) for mTLS. */
    certFile: Type.Optional(Path),
    keyFile: Type.Optional(Path),
    /** TLS SNI / certificate name when it differs from the URL host. */
    serverName: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    /**
     * Tool Services only: tell the service who called (never the client's token): the caller's
     * subject in `x-mcp-subject`, and these claims as `x-mcp-claim-{name}`.
     */
    forwardIdentity: Type.Optional(Type.Object({ claims: Type.Array(Type.String({ pattern: '^[a-z0-9_-]{1,64}$' }), { maxItems: 16 }) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);
export type CredentialProfileConfig = Static<typeof CredentialProfileSchema>;

/** `auth` in the configuration. */
export const AuthConfigSchema = Type.Object(
  {
    /**
     * The public base URL clients use (`https://mcp.example.com`): a route's resource URL is
     * `{resourceBaseUrl}/mcp/{routeKey}` (RFC 8707 audience, RFC 9728 `resource`). Required
     * when any policy is in use.
     */
    resourceBaseUrl: Type.Union([Url, Type.Null()]),
    providers: Type.Record(NameKey, ProviderSchema, { maxProperties: 32 }),
    policies: Type.Record(NameKey, PolicySchema, { maxProperties: 256 }),
    /** Route key → policy name (static and Portal routes alike: the Portal owns addresses, not access). */
    routes: Type.Record(Type.String(), Name, { maxProperties: 100_000 }),
    /** Policy of every route `routes` does not name; `null` = those routes are open. */
    defaultPolicy: Type.Union([Name, Type.Null()]),
    /** Verified tokens remembered per acceptor thread (until their `exp`); least recently used go first. */
    tokenCacheSize: Int(1, 10_000_000),
    /** A token that failed verification is refused from memory for this long (a flood of one bad token costs one check). */
    failedTokenCacheSeconds: Int(0, 3600),
    /** JWT verifications in flight per acceptor thread (first sight of a token); beyond it 503 + Retry-After. */
    maxPendingVerifications: Int(1, 100_000),
    /** Callers and routes with rate-limit state kept per acceptor thread; the least recently seen are dropped. */
    maxTrackedCallers: Int(16, 10_000_000),
    /** How often a secret file (API-key hashes, header values, JWKS file) is checked for a change. */
    secretFileCheckMs: Int(100, 3_600_000),
    /** What the gateway presents upstream: profiles matched by origin (Tool Services) and for the Portal. */
    upstream: Type.Object(
      {
        profiles: Type.Record(NameKey, CredentialProfileSchema, { maxProperties: 256 }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type AuthConfig = Static<typeof AuthConfigSchema>;

/** Default: no authentication (the embedded demo); `gateway.ts` warns loudly when a non-loopback listener runs without it. */
export const AUTH_DEFAULTS: AuthConfig = {
  resourceBaseUrl: null,
  providers: {},
  policies: {},
  routes: {},
  defaultPolicy: null,
  tokenCacheSize: 10_000,
  failedTokenCacheSeconds: 30,
  maxPendingVerifications: 256,
  maxTrackedCallers: 10_000,
  secretFileCheckMs: 5_000,
  upstream: { profiles: {} },
};

/** Per-provider defaults not written in the config. */
export const JWT_DEFAULTS = Object.freeze({
  clockToleranceSeconds: 30,
  jwksCacheMaxAgeMs: 600_000,
  jwksCooldownMs: 30_000,
  jwksTimeoutMs: 5_000,
});

function httpUrl(text: string, httpsOnly = false): URL | null {
  try {
    const u = new URL(text);
    if (u.protocol !== 'https:' && (httpsOnly || u.protocol !== 'http:')) return null;
    return u;
  } catch {
    return null;
  }
}

/** Cross-key checks of the `auth` section; each problem names its key. */
export function authConfigProblems(auth: AuthConfig, routeKeyPattern: RegExp): string[] {
  const problems: string[] = [];
  const policyNames = new Set(Object.keys(auth.policies));
  const issuers = new Map<string, string>();
  for (const [section, names] of [
    ['auth.providers', Object.keys(auth.providers)],
    ['auth.policies', Object.keys(auth.policies)],
    ['auth.upstream.profiles', Object.keys(auth.upstream.profiles)],
  ] as const) {
    for (const n of names) if (!NAME_RE.test(n)) problems.push(`${section}.${n}: names are letters, digits, '_', '.', '-'`);
  }
  for (const [name, p] of Object.entries(auth.providers)) {
    const at = `auth.providers.${name}`;
    if (p.type === 'jwt') {
      // A token picks its provider by its `iss`: one provider per issuer.
      const other = issuers.get(p.issuer);
      if (other !== undefined) problems.push(`${at}.issuer: ${JSON.stringify(p.issuer)} is already the issuer of provider ${JSON.stringify(other)}`);
      issuers.set(p.issuer, name);
      if ((p.jwksUrl === undefined) === (p.jwksFile === undefined)) problems.push(`${at}: exactly one of jwksUrl and jwksFile is required`);
      if (p.jwksUrl !== undefined && httpUrl(p.jwksUrl) === null) problems.push(`${at}.jwksUrl: must be an absolute http(s) URL`);
      if (p.jwksCaFile !== undefined && p.jwksUrl === undefined) problems.push(`${at}.jwksCaFile: only used with jwksUrl`);
      for (const s of p.authorizationServers ?? []) if (httpUrl(s) === null) problems.push(`${at}.authorizationServers: ${JSON.stringify(s)} is not an http(s) URL`);
    } else if (p.keyHashes === undefined && p.keyHashesFile === undefined) {
      problems.push(`${at}: keyHashes or keyHashesFile is required`);
    }
  }
  for (const [name, policy] of Object.entries(auth.policies)) {
    for (const provider of policy.providers) {
      if (auth.providers[provider] === undefined) problems.push(`auth.policies.${name}.providers: unknown provider ${JSON.stringify(provider)}`);
    }
  }
  for (const [routeKey, policy] of Object.entries(auth.routes)) {
    if (!routeKeyPattern.test(routeKey)) problems.push(`auth.routes.${routeKey}: route key must be a lowercase DNS label`);
    if (!policyNames.has(policy)) problems.push(`auth.routes.${routeKey}: unknown policy ${JSON.stringify(policy)}`);
  }
  if (auth.defaultPolicy !== null && !policyNames.has(auth.defaultPolicy)) problems.push(`auth.defaultPolicy: unknown policy ${JSON.stringify(auth.defaultPolicy)}`);
  const inUse = auth.defaultPolicy !== null || Object.keys(auth.routes).length > 0;
  if (auth.resourceBaseUrl !== null) {
    const u = httpUrl(auth.resourceBaseUrl);
    if (u === null || u.search !== '' || u.hash !== '' || auth.resourceBaseUrl.endsWith('/')) {
      problems.push('auth.resourceBaseUrl: must be an absolute http(s) URL without query, fragment or trailing slash');
    }
  } else if (inUse) {
    problems.push('auth.resourceBaseUrl: required when a route has a policy (it is the audience tokens must carry)');
  }
  const seen = new Map<string, string>();
  for (const [name, profile] of Object.entries(auth.upstream.profiles)) {
    const at = `auth.upstream.profiles.${name}`;
    for (const origin of profile.origins) {
      const u = httpUrl(origin);
      if (u === null || u.origin !== origin) problems.push(`${at}.origins: ${JSON.stringify(origin)} is not an origin (scheme://host[:port], no path)`);
      const other = seen.get(origin);
      if (other !== undefined) problems.push(`${at}.origins: ${origin} is already served by profile ${JSON.stringify(other)}`);
      seen.set(origin, name);
      const tls = profile.caFile !== undefined || profile.certFile !== undefined || profile.serverName !== undefined;
      if (tls && u !== null && u.protocol !== 'https:') problems.push(`${at}: TLS settings need https origins, got ${origin}`);
    }
    if ((profile.certFile === undefined) !== (profile.keyFile === undefined)) problems.push(`${at}: certFile and keyFile go together`);
  }
  return problems;
}
