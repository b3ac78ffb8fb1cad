/**
 * One JWT provider on one acceptor thread: jose's `jwtVerify` against the
 * provider's JWKS, with the issuer, the allowed algorithms (asymmetric
 * only, so an `HS256` token "signed" with the RSA public key is refused
 * before any key is touched; `alg: none` is never accepted by jose), a
 * bounded clock skew and a required `exp` (a verified token is cached until
 * then, so one without `exp` is refused).
 *
 * The audience is *not* checked here: it depends on the route (RFC 8707:
 * a token is valid only for the route it was issued for), so the verdict
 * carries the token's `aud` set and the caller checks it per request — one
 * verification serves every route the token is good for.
 *
 * JWKS from a URL: jose's remote set (cached `jwksCacheMaxAgeMs`, an
 * unknown `kid` refetches at most once per `jwksCooldownMs`), fetched with
 * undici so a private CA (`jwksCaFile`) can be given — undici loaded by the
 * first fetch, not at start: its bundle costs each thread that loads it
 * ~10 MB of RSS (ADR-0020), and only a remote JWKS needs it. Every acceptor thread
 * has its own set: a replica fetches at most `acceptors` times per max-age
 * period in steady state, plus at most `acceptors` times per cooldown while
 * unknown `kid`s arrive. JWKS from a file: re-read when the file changes.
 */
import assert from 'node:assert';
import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, customFetch, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from '../../shared/vendor/jose.js';
import type { Agent } from '../../shared/vendor/undici.js';
import type { InvalidCredential } from '../../shared/auth/challenge.js';
import { JWT_DEFAULTS, type JwtProviderConfig } from '../../shared/auth/config-schema.js';
import { scopesOf, type Principal } from '../../shared/auth/policy.js';
import { WatchedFile, type SecretProblem } from '../../shared/auth/secret-source.js';

type Undici = typeof import('../../shared/vendor/undici.js');
let undici: Promise<Undici> | null = null;
/** The undici module, imported once per thread by the first JWKS fetch. */
const loadUndici = (): Promise<Undici> => (undici ??= import('../../shared/vendor/undici.js'));

/** Outcome of a first-sight verification. */
export type JwtResult =
  | { kind: 'ok'; principal: Principal; audiences: Set<string>; expiresAtMs: number }
  | { kind: 'invalid'; why: InvalidCredential }
  /** Not a verdict on the token: the keys could not be fetched. */
  | { kind: 'unavailable'; why: string };

/** Counts JWKS fetches (for `mcp_gateway_auth_jwks_fetches_total`). */
export type JwksFetchObserver = (provider: string, ok: boolean) => void;

/** Maps a jose error code to a refusal reason; undefined: the keys were unavailable, not the token bad. */
function invalidReason(err: unknown): InvalidCredential | undefined {
  if (!(err instanceof errors.JOSEError)) return undefined;
  switch (err.code) {
    case 'ERR_JWT_EXPIRED':
      return 'expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = (err as errors.JWTClaimValidationFailed).claim;
      if (claim === 'nbf' || claim === 'iat') return 'not_yet_valid';
      if (claim === 'iss') return 'issuer';
      return 'claims';
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'signature';
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return 'unknown_key';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return 'algorithm';
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return 'malformed';
    default:
      // ERR_JWKS_TIMEOUT, ERR_JWKS_INVALID, ERR_JOSE_GENERIC (JWKS answered non-200 / not JSON).
      return undefined;
  }
}

/** A verifier for one configured JWT provider. */
export class JwtVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly file: WatchedFile<JWTVerifyGetKey> | null = null;
  /** With `jwksCaFile`: the agent that trusts its CA, made by the first fetch. */
  private agent: Agent | null = null;
  private readonly clockTolerance: number;

  constructor(
    readonly name: string,
    readonly config: JwtProviderConfig,
    secretFileCheckMs: number,
    onProblem: SecretProblem,
    onFetch: JwksFetchObserver,
  ) {
    this.clockTolerance = config.clockToleranceSeconds ?? JWT_DEFAULTS.clockToleranceSeconds;
    if (config.jwksFile !== undefined) {
      const file = new WatchedFile(config.jwksFile, (text): JWTVerifyGetKey => createLocalJWKSet(JSON.parse(text) as JSONWebKeySet), secretFileCheckMs, onProblem);
      this.file = file;
      this.keys = (header, token) => file.value(header, token);
      return;
    }
    assert(config.jwksUrl !== undefined, 'a JWT provider has exactly one of jwksUrl and jwksFile (config-schema.ts validates it)');
    const url = new URL(config.jwksUrl);
    // Read now: a CA file that cannot be read fails the start, not the first request.
    const ca = config.jwksCaFile !== undefined ? readFileSync(config.jwksCaFile, 'utf8') : null;
    this.keys = createRemoteJWKSet(url, {
      cacheMaxAge: config.jwksCacheMaxAgeMs ?? JWT_DEFAULTS.jwksCacheMaxAgeMs,
      cooldownDuration: config.jwksCooldownMs ?? JWT_DEFAULTS.jwksCooldownMs,
      timeoutDuration: config.jwksTimeoutMs ?? JWT_DEFAULTS.jwksTimeoutMs,
      [customFetch]: async (href: string, options: { headers: Headers; method: 'GET'; redirect: 'manual'; signal: AbortSignal }) => {
        try {
          const { Agent, fetch } = await loadUndici();
          if (ca !== null) this.agent ??= new Agent({ connect: { ca } });
          const res = await fetch(href, {
            method: options.method,
            redirect: options.redirect,
            signal: options.signal,
            headers: Object.fromEntries(options.headers),
            ...(this.agent !== null ? { dispatcher: this.agent } : {}),
          });
          onFetch(name, res.status === 200);
          return res as unknown as Response;
        } catch (err) {
          onFetch(name, false);
          throw err;
        }
      },
    });
  }

  /** Verifies signature, issuer, algorithm, `exp`/`nbf` (with the clock tolerance). */
  async verify(token: string): Promise<JwtResult> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.config.issuer,
        algorithms: [...this.config.algorithms],
        clockTolerance: this.clockTolerance,
        requiredClaims: ['exp'],
      }));
    } catch (err) {
      const why = invalidReason(err);
      if (why !== undefined) return { kind: 'invalid', why };
      return { kind: 'unavailable', why: `JWKS of provider ${this.name}: ${(err as Error).message}` };
    }
    const aud = payload.aud;
    const audiences = new Set(typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : []);
    if (typeof payload.sub !== 'string' || payload.sub === '') return { kind: 'invalid', why: 'claims' };
    const principal: Principal = Object.freeze({
      id: `${this.name}\u0000${payload.sub}`,
      subject: payload.sub,
      provider: this.name,
      apiKey: null,
      scopes: scopesOf(payload),
      claims: Object.freeze({ ...payload }),
    });
    assert(typeof payload.exp === 'number', 'jose verified the required exp claim (a NumericDate)');
    return { kind: 'ok', principal, audiences, expiresAtMs: (payload.exp + this.clockTolerance) * 1000 };
  }

  close(): void {
    this.file?.close();
    void this.agent?.close();
  }
}
