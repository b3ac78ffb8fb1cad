/**
 * The auth rows' set-up (ADR-0011, docs/contracts/authentication.md): the
 * gateway's `auth` config protecting two more routes of the same 50-tool echo
 * catalog as route `bench` — `bench-key` by an API key, `bench-jwt` by a JWT
 * checked against a local JWKS file — and the credentials the load sends.
 * The key pair is made per run; the token outlives any run (24 h).
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

/** Route protected by an API key. */
export const KEY_ROUTE = 'bench-key';
/** Route protected by a JWT. */
export const JWT_ROUTE = 'bench-jwt';

const RESOURCE_BASE_URL = 'https://mcp.bench.invalid';
const ISSUER = 'https://sso.bench.invalid';
const API_KEY_HEADER = 'x-api-key';
/** A bench-only key; the gateway is configured with its SHA-256 only, as a real deployment would be. */
const API_KEY = 'bench-api-key-0123456789abcdef';
const SCOPE = 'mcp.tools';
const TOKEN_LIFETIME_SEC = 24 * 3600;

/** The gateway's `auth` section and the headers each protected route's load adds. */
export interface BenchAuth {
  config: object;
  keyHeaders: Record<string, string>;
  jwtHeaders: Record<string, string>;
}

/**
 * Writes the JWKS file into `dir` and signs the token. One rule per policy
 * allowing every tool (`*`), no rate limit: the rows measure the credential
 * check and the per-caller list variant, nothing that refuses.
 */
export async function benchAuth(dir: string): Promise<BenchAuth> {
  // RS256: the default of the common identity providers; verified once per acceptor thread, cached after.
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwksFile = join(dir, 'bench-jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench-1', alg: 'RS256', use: 'sig' }] }));
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ scope: SCOPE })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench-1' })
    .setIssuer(ISSUER)
    .setSubject('bench-client')
    .setAudience(`${RESOURCE_BASE_URL}/mcp/${JWT_ROUTE}`)
    .setIssuedAt(now)
    .setExpirationTime(now + TOKEN_LIFETIME_SEC)
    .sign(privateKey);
  const config = {
    resourceBaseUrl: RESOURCE_BASE_URL,
    providers: {
      keys: { type: 'apiKeys', header: API_KEY_HEADER, keyHashes: { bench: createHash('sha256').update(API_KEY).digest('hex') } },
      sso: { type: 'jwt', issuer: ISSUER, jwksFile, algorithms: ['RS256'] },
    },
    policies: {
      'bench-keys': { providers: ['keys'], rules: [{ when: { apiKeys: ['bench'] }, tools: ['*'] }] },
      'bench-sso': { providers: ['sso'], rules: [{ when: { scopes: [SCOPE] }, tools: ['*'] }] },
    },
    routes: { [KEY_ROUTE]: 'bench-keys', [JWT_ROUTE]: 'bench-sso' },
  };
  return { config, keyHeaders: { [API_KEY_HEADER]: API_KEY }, jwtHeaders: { authorization: `Bearer ${token}` } };
}

/** The auth and era rows' description for the report's notes. */
export const VARIANT_NOTE =
  "Variant rows (same run, each also divided by its reference row: the same gateway's for the 2026-07-28 rows, the auth-free gateway's for the auth rows): " +
  '"MCP 2026-07-28" sends the legacy row\'s request as a 2026-07-28 client does (MCP-Protocol-Version: 2026-07-28, Mcp-Method, Mcp-Name for tools/call, ' +
  '_meta with protocolVersion, clientCapabilities and clientInfo), reference: the legacy request. ' +
  `"API key" / "JWT" send it to route ${KEY_ROUTE} / ${JWT_ROUTE} (the same 50-tool catalog as route bench) protected by an auth policy with one rule allowing every tool and no rate limit — ` +
  `an ${API_KEY_HEADER} header checked against a SHA-256 in config, or an RS256 bearer token checked against a local JWKS file (verified on first sight per acceptor thread, then from the token cache) — reference: route bench, auth off. ` +
  'The per-call audit line is logged at info, so at the bench\'s log level warn it is not written. Their "÷ base" columns divide by the reference workload\'s baseline (bare uWS with the legacy body, the Tool Service alone).';
