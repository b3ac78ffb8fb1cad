/**
 * Same-run micro-bench of the auth step's hot path (ADR-0011): the cost per
 * request of a *cached* JWT check (hash + cache lookup + audience + rule
 * memo + rate-limit bucket), of an API-key check, and of picking the
 * caller's `tools/list` variant — interleaved in rounds against a baseline
 * loop doing the same bookkeeping without auth, so machine noise hits both
 * alike. Run: `npm run build && node dist/bench/auth-check.js`.
 *
 * The whole-gateway numbers (autocannon, tools/list and tools/call with auth
 * on vs off) belong in `npm run bench`; this isolates what the step adds.
 */
import { createHash } from 'node:crypto';
import { Registry } from 'prom-client';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthMetrics } from '../src/main/auth/auth-metrics.js';
import { Authenticator, RequestAuth } from '../src/main/auth/authenticator.js';
import { AUTH_DEFAULTS, type AuthConfig } from '../src/shared/auth/config-schema.js';
import { filterListTemplate } from '../src/shared/auth/list-variant.js';

const ROUNDS = Number(process.env['ROUNDS'] ?? 7);
const N = Number(process.env['N'] ?? 200_000);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'auth-bench-'));
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, JSON.stringify({ keys: [jwk] }));
  const base = 'https://mcp.example.com';
  const config: AuthConfig = {
    ...AUTH_DEFAULTS,
    resourceBaseUrl: base,
    providers: {
      sso: { type: 'jwt', issuer: 'https://sso.example.com', jwksFile, algorithms: ['RS256'] },
      keys: { type: 'apiKeys', header: 'x-api-key', keyHashes: { ci: createHash('sha256').update('ci-key').digest('hex') } },
    },
    policies: {
      team: {
        providers: ['sso', 'keys'],
        rules: [
          { when: { claims: { groups: 'hr' } }, tools: ['hr_*'] },
          { when: { scopes: ['tools.read'] }, tools: ['echo'] },
          { when: { apiKeys: ['ci'] }, tools: ['*'] },
        ],
        rateLimit: { perCaller: { requestsPerSecond: 1e9, burst: 1e9, maxConcurrentCalls: 0 } },
      },
    },
    routes: { core: 'team' },
  };
  const auth = new Authenticator(config, 5, new AuthMetrics(new Registry()), () => undefined);
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({ groups: ['hr'], scope: 'tools.read' })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer('https://sso.example.com')
    .setSubject('alice')
    .setAudience(`${base}/mcp/core`)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(privateKey);
  const ra = new RequestAuth();
  ra.authorization = `Bearer ${token}`;
  const first = auth.check('core', ra, Date.now());
  if (first.kind !== 'pending') throw new Error(`expected a first-sight verification, got ${first.kind}`);
  const settled = await first.settled;
  if (settled.kind !== 'allow') throw new Error(`token refused: ${JSON.stringify(settled)}`);
  const keyRa = new RequestAuth();
  keyRa.extra[0] = 'ci-key';

  // A 50-tool template like the snapshot's.
  const tools = Array.from({ length: 50 }, (_, i) => ({
    name: i % 5 === 0 ? `hr_tool_${i}` : `tool_${i}`,
    description: `Tool ${i}.`,
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
  }));
  const template = Buffer.from(`{"jsonrpc":"2.0","result":${JSON.stringify({ tools })},"id":`);
  const variants = new WeakMap<Uint8Array, Map<string, Uint8Array>>();
  const variantOf = (filter: NonNullable<RequestAuth['filter']>): Uint8Array => {
    let byKey = variants.get(template);
    if (byKey === undefined) {
      byKey = new Map();
      variants.set(template, byKey);
    }
    let v = byKey.get(filter.key);
    if (v === undefined) {
      v = filterListTemplate(template, (n) => filter.allows(n));
      byKey.set(filter.key, v);
    }
    return v;
  };

  let sink = 0;
  const baseline = (): void => {
    for (let i = 0; i < N; i++) sink += Date.now() & 1;
  };
  const cachedJwt = (): void => {
    for (let i = 0; i < N; i++) {
      const d = auth.check('core', ra, Date.now());
      if (d.kind !== 'allow') throw new Error('refused');
      sink += 1;
    }
  };
  const apiKey = (): void => {
    for (let i = 0; i < N; i++) {
      const d = auth.check('core', keyRa, Date.now());
      if (d.kind !== 'allow') throw new Error('refused');
      sink += 1;
    }
  };
  const jwtPlusVariant = (): void => {
    for (let i = 0; i < N; i++) {
      auth.check('core', ra, Date.now());
      sink += variantOf(ra.filter as NonNullable<RequestAuth['filter']>).length & 1;
    }
  };
  const buildVariant = (): void => {
    const filter = ra.filter as NonNullable<RequestAuth['filter']>;
    for (let i = 0; i < N / 100; i++) sink += filterListTemplate(template, (n) => filter.allows(n)).length & 1;
  };

  const rows: Record<string, number[]> = { baseline: [], 'cached JWT check': [], 'API key check': [], 'cached JWT + tools/list variant': [], 'build a variant (once per rule set)': [] };
  const time = (fn: () => void, per: number): number => {
    const t = process.hrtime.bigint();
    fn();
    return Number(process.hrtime.bigint() - t) / per;
  };
  for (let r = 0; r < ROUNDS; r++) {
    rows['baseline']?.push(time(baseline, N));
    rows['cached JWT check']?.push(time(cachedJwt, N));
    rows['API key check']?.push(time(apiKey, N));
    rows['cached JWT + tools/list variant']?.push(time(jwtPlusVariant, N));
    rows['build a variant (once per rule set)']?.push(time(buildVariant, N / 100));
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const base0 = median(rows['baseline'] as number[]);
  console.log(`auth step micro-bench, ${ROUNDS} interleaved rounds of ${N} requests, median ns/request (busy machine: compare rows, not absolutes)`);
  for (const [name, xs] of Object.entries(rows)) {
    const m = median(xs);
    console.log(`${name.padEnd(40)} ${m.toFixed(0).padStart(8)} ns${name === 'baseline' || name.startsWith('build') ? '' : `   (+${(m - base0).toFixed(0)} ns over baseline)`}`);
  }
  auth.close();
  rmSync(dir, { recursive: true, force: true });
  if (sink === -1) console.log(sink);
}

void main();
