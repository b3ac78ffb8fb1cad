/**
 * The pure parts of the auth step: tool-name patterns, rule evaluation and
 * rule-set identity, the filtered `tools/list` template (byte-exact, any
 * template of the layout's shape), token-bucket edges, the `auth` config
 * checks and their redaction.
 */
import { describe, expect, it } from 'vitest';
import { routeChallenges, routeResource } from '../../../../src/shared/auth/challenge.js';
import { AUTH_DEFAULTS, authConfigProblems, type AuthConfig } from '../../../../src/shared/auth/config-schema.js';
import { filterListTemplate, TemplateShapeError } from '../../../../src/shared/auth/list-variant.js';
import { CompiledPolicy, scopesOf, type Principal } from '../../../../src/shared/auth/policy.js';
import { TokenBucket } from '../../../../src/shared/auth/token-bucket.js';
import { globMatch } from '../../../../src/shared/auth/tool-patterns.js';
import { exposureWarnings } from '../../../../src/shared/auth/exposure.js';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import { ROUTE_KEY_PATTERN, type GatewayConfig } from '../../../../src/shared/config/schema.js';
import { REDACTED, redactConfig } from '../../../../src/shared/config/redact.js';
import { encodeSnapshot, decodeSnapshot } from '../../../../src/shared/snapshot/layout.js';

const principal = (over: Partial<Principal> = {}): Principal => ({ id: 'p\u0000s', subject: 's', provider: 'p', apiKey: null, scopes: new Set(), claims: {}, ...over });

describe('globMatch', () => {
  it.each([
    ['*', 'anything', true],
    ['*', '', true],
    ['hr_*', 'hr_search', true],
    ['hr_*', 'hr_', true],
    ['hr_*', 'xhr_search', false],
    ['*_search', 'employee_search', true],
    ['a*b*c', 'aXXbYYc', true],
    ['a*b*c', 'aXXbYY', false],
    ['exact', 'exact', true],
    ['exact', 'exactly', false],
    ['**', 'x', true],
  ])('%s vs %s → %s', (pattern, name, expected) => {
    expect(globMatch(pattern, name)).toBe(expected);
  });

  it('stays linear on adversarial patterns', () => {
    // Would be exponential for a backtracking regex; the two-pointer walk is O(n·m).
    expect(globMatch(`${'a*'.repeat(60)}b`, 'a'.repeat(128))).toBe(false);
  });
});

describe('CompiledPolicy', () => {
  const policy = new CompiledPolicy('p', {
    providers: ['sso'],
    rules: [
      { when: { claims: { groups: 'hr' } }, tools: ['hr_*'] },
      { when: { scopes: ['tools.read'] }, tools: ['echo'] },
      { when: { claims: { 'realm_access.roles': ['admin', 'ops'] } }, tools: ['*'] },
      { when: { subjects: ['bob'], apiKeys: ['ci'] }, tools: ['ci_*'] },
    ],
  });

  it('unions the tools of every matching rule and refuses when none matches', () => {
    const f = policy.decide(principal({ claims: { groups: ['staff', 'hr'] }, scopes: new Set(['tools.read']) }));
    expect(f?.key).toBe('0,1');
    expect(f?.allows('hr_search')).toBe(true);
    expect(f?.allows('echo')).toBe(true);
    expect(f?.allows('admin_reset')).toBe(false);
    expect(policy.decide(principal({ claims: { groups: 'sales' } }))).toBeNull();
  });

  it('shares one filter between callers with the same rule set', () => {
    const a = policy.decide(principal({ subject: 'a', claims: { groups: 'hr' } }));
    const b = policy.decide(principal({ subject: 'b', claims: { groups: ['hr', 'x'] } }));
    expect(a).toBe(b);
  });

  it('reads dotted claim paths, and needs every condition of a rule', () => {
    expect(policy.decide(principal({ claims: { realm_access: { roles: ['ops'] } } }))?.allowsAll).toBe(true);
    expect(policy.decide(principal({ subject: 'bob' }))).toBeNull();
    expect(policy.decide(principal({ subject: 'bob', apiKey: 'ci' }))?.key).toBe('3');
  });

  it('takes scopes from scope (space-separated) and scp (array)', () => {
    expect([...scopesOf({ scope: 'a b  c', scp: ['d', 7] })].sort()).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('filterListTemplate', () => {
  const tools = [
    { name: 'keep_1', description: 'has ] and } and \\" inside', inputSchema: { type: 'object', properties: { n: { type: 'number', maximum: 1.0e308 } } } },
    { name: 'drop', inputSchema: { type: 'object' } },
    { name: 'keep_2', title: 'Ünïcode ✓', inputSchema: { type: 'object' } },
  ];

  it('keeps the allowed tools byte for byte from a real snapshot template', () => {
    const snap = decodeSnapshot(
      encodeSnapshot({
        routeKey: 'core',
        revision: 'r',
        source: 'static',
        builtAt: 0,
        tools: tools.map((t) => ({ ...t, version: '1', active: true, serviceId: 's', timeoutMs: 1000, executionUrl: 'http://x/t' })),
      }),
    );
    const template = Buffer.from(snap.listTemplate);
    const out = Buffer.from(filterListTemplate(template, (n) => n.startsWith('keep'))).toString('utf8');
    const parsed = JSON.parse(`${out}1}`) as { result: { tools: Array<{ name: string }> } };
    expect(parsed.result.tools.map((t) => t.name)).toEqual(['keep_1', 'keep_2']);
    const original = template.toString('utf8');
    for (const t of parsed.result.tools) {
      const bytes = JSON.stringify((JSON.parse(`${original}1}`) as { result: { tools: Array<{ name: string }> } }).result.tools.find((x) => x.name === t.name));
      expect(out).toContain(bytes);
    }
  });

  it('keeps other members of the result (a later era template) and handles none or all allowed', () => {
    const template = Buffer.from(`{"jsonrpc":"2.0","result":{"ttlMs":5000,"tools":[{"name":"a"},{"name":"b"}],"cacheScope":"shared"},"id":`);
    expect(Buffer.from(filterListTemplate(template, (n) => n === 'b')).toString()).toBe(`{"jsonrpc":"2.0","result":{"ttlMs":5000,"tools":[{"name":"b"}],"cacheScope":"shared"},"id":`);
    expect(Buffer.from(filterListTemplate(template, () => false)).toString()).toBe(`{"jsonrpc":"2.0","result":{"ttlMs":5000,"tools":[],"cacheScope":"shared"},"id":`);
    expect(Buffer.from(filterListTemplate(template, () => true)).toString()).toBe(template.toString());
  });

  it('refuses a template of another shape', () => {
    expect(() => filterListTemplate(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}'), () => true)).toThrow(TemplateShapeError);
    expect(() => filterListTemplate(Buffer.from('{"jsonrpc":"2.0","result":{"x":1},"id":'), () => true)).toThrow(TemplateShapeError);
  });
});

describe('TokenBucket', () => {
  it('grants exactly burst requests at once, then says how long to wait', () => {
    const b = new TokenBucket(3, 0);
    expect([b.take(0, 1, 3), b.take(0, 1, 3), b.take(0, 1, 3)]).toEqual([0, 0, 0]);
    expect(b.take(0, 1, 3)).toBeCloseTo(1);
    expect(b.take(500, 1, 3)).toBeCloseTo(0.5);
    expect(b.take(1000, 1, 3)).toBe(0);
  });

  it('never exceeds the burst after idling, and rate 0 means unlimited', () => {
    const b = new TokenBucket(2, 0);
    b.take(0, 10, 2);
    b.take(0, 10, 2);
    expect(b.take(60_000, 10, 2)).toBe(0);
    expect(b.take(60_000, 10, 2)).toBe(0);
    expect(b.take(60_000, 10, 2)).toBeGreaterThan(0);
    expect(new TokenBucket(1, 0).take(0, 0, 1)).toBe(0);
  });
});

describe('auth config checks', () => {
  const re = new RegExp(ROUTE_KEY_PATTERN);
  const base = (over: Partial<AuthConfig>): AuthConfig => ({ ...AUTH_DEFAULTS, ...over });

  it('names every broken reference', () => {
    const problems = authConfigProblems(
      base({
        providers: {
          a: { type: 'jwt', issuer: 'https://i', algorithms: ['RS256'] },
          b: { type: 'jwt', issuer: 'https://i', jwksUrl: 'ftp://x', algorithms: ['RS256'] },
          k: { type: 'apiKeys', header: 'x-api-key' },
        },
        policies: { p: { providers: ['a', 'nope'], rules: [{ when: {}, tools: ['*'] }] } },
        routes: { core: 'p', Bad: 'p', other: 'missing' },
        upstream: { profiles: { c1: { origins: ['http://h:1'], caFile: '/ca' }, c2: { origins: ['http://h:1', 'https://h/path'], certFile: '/c' } } },
      }),
      re,
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        'auth.providers.a: exactly one of jwksUrl and jwksFile is required',
        'auth.providers.b.issuer: "https://i" is already the issuer of provider "a"',
        'auth.providers.b.jwksUrl: must be an absolute http(s) URL',
        'auth.providers.k: keyHashes or keyHashesFile is required',
        'auth.policies.p.providers: unknown provider "nope"',
        'auth.routes.Bad: route key must be a lowercase DNS label',
        'auth.routes.other: unknown policy "missing"',
        'auth.resourceBaseUrl: required when a route has a policy (it is the audience tokens must carry)',
        'auth.upstream.profiles.c1: TLS settings need https origins, got http://h:1',
        'auth.upstream.profiles.c2.origins: http://h:1 is already served by profile "c1"',
        'auth.upstream.profiles.c2.origins: "https://h/path" is not an origin (scheme://host[:port], no path)',
        'auth.upstream.profiles.c2: certFile and keyFile go together',
      ]),
    );
  });

  it('accepts the defaults (auth off)', () => {
    expect(authConfigProblems(AUTH_DEFAULTS, re)).toEqual([]);
  });

  it('redacts API-key digests in --check-config output', () => {
    const out = redactConfig({ auth: { providers: { k: { type: 'apiKeys', header: 'x', keyHashes: { ci: 'a'.repeat(64) } } } } }) as { auth: { providers: { k: Record<string, unknown> } } };
    expect(out.auth.providers.k['keyHashes']).toBe(REDACTED);
  });
});

describe('challenges', () => {
  it('puts the metadata URL of a base with a path where the gateway serves it', () => {
    const r = routeResource('https://h.example.com/gw', 'core');
    expect(r).toEqual({
      resource: 'https://h.example.com/gw/mcp/core',
      metadataUrl: 'https://h.example.com/.well-known/oauth-protected-resource/gw/mcp/core',
      metadataPath: '/.well-known/oauth-protected-resource/gw/mcp/core',
    });
  });

  it('quotes scope values', () => {
    const c = routeChallenges(routeResource('https://h', 'core'), ['a"b', 'c\\d']);
    expect(c.missing.headers?.[0]?.[1]).toBe('Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp/core", scope="a\\"b c\\\\d"');
  });
});

describe('exposureWarnings', () => {
  const config = (host: string, auth: Partial<AuthConfig>): GatewayConfig => ({ ...DEFAULTS, server: { ...DEFAULTS.server, host }, auth: { ...AUTH_DEFAULTS, ...auth } });

  it('is silent on loopback, and loud on another address without a default policy', () => {
    expect(exposureWarnings(config('127.0.0.1', {}))).toEqual([]);
    expect(exposureWarnings(config('0.0.0.0', {}))[0]).toMatch(/^AUTHENTICATION IS OFF: the gateway listens on 0\.0\.0\.0/);
    expect(exposureWarnings(config('0.0.0.0', { routes: { core: 'p' } }))[0]).toMatch(/every route not named in auth.routes .* is open/);
    expect(exposureWarnings(config('0.0.0.0', { defaultPolicy: 'p' }))).toEqual([]);
  });
});
