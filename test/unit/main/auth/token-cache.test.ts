/**
 * The verified-token cache (bounded LRU with expiry, keyed by SHA-256) and
 * the identity headers a credential profile renders for Tool Services.
 */
import { describe, expect, it } from 'vitest';
import { TokenCache, tokenKey, type TokenVerdict } from '../../../../src/main/auth/token-cache.js';
import { OriginCredential } from '../../../../src/shared/auth/upstream-credentials.js';

const refused = (expiresAt: number): TokenVerdict => ({ ok: false, why: 'signature', expiresAt });

describe('TokenCache', () => {
  it('keys by the SHA-256 of the token, never the token', () => {
    const key = tokenKey('secret.token.value');
    expect(key).not.toContain('secret');
    expect(key).toHaveLength(44);
    expect(tokenKey('secret.token.value')).toBe(key);
  });

  it('forgets an entry at its expiry', () => {
    const c = new TokenCache(10);
    c.set('k', refused(1000));
    expect(c.get('k', 999)).toBeDefined();
    expect(c.get('k', 1000)).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('evicts the least recently used entry at capacity', () => {
    const c = new TokenCache(2);
    c.set('a', refused(1e12));
    c.set('b', refused(1e12));
    expect(c.get('a', 0)).toBeDefined();
    c.set('c', refused(1e12));
    expect(c.size).toBe(2);
    expect(c.get('b', 0)).toBeUndefined();
    expect(c.get('a', 0)).toBeDefined();
    expect(c.get('c', 0)).toBeDefined();
  });
});

describe('OriginCredential identity headers', () => {
  it('renders the subject and the profile’s claims only, percent-encoding what is not visible ASCII', () => {
    const cred = new OriginCredential('p', { origins: ['https://h'], forwardIdentity: { claims: ['groups', 'tenant'] } }, 1000, () => undefined);
    const text = cred.identityText(JSON.stringify({ sub: 'kim 김', claims: { groups: ['hr', 'ops'], tenant: 7, email: 'x@y' } }));
    expect(text).toBe('x-mcp-subject: kim%20%EA%B9%80\r\nx-mcp-claim-groups: hr,ops\r\nx-mcp-claim-tenant: 7\r\n');
    expect(cred.identityText('not json')).toBe('');
    cred.close();
  });

  it('renders nothing for a profile without forwardIdentity', () => {
    const cred = new OriginCredential('p', { origins: ['https://h'] }, 1000, () => undefined);
    expect(cred.identityText('{"sub":"a","claims":{}}')).toBe('');
    cred.close();
  });

  it('refuses a header secret with a line break at start', () => {
    process.env['MCP_GW_TEST_BAD_HEADER'] = 'Bearer a\r\nx-injected: 1';
    expect(() => new OriginCredential('p', { origins: ['https://h'], headers: { authorization: { env: 'MCP_GW_TEST_BAD_HEADER' } } }, 1000, () => undefined)).toThrow(/one line/);
    delete process.env['MCP_GW_TEST_BAD_HEADER'];
  });
});
