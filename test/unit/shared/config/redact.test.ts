import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import { isSecretKey, REDACTED, redactConfig } from '../../../../src/shared/config/redact.js';

describe('redactConfig', () => {
  it('leaves a configuration without credentials unchanged (and does not mutate it)', () => {
    const copy = structuredClone(DEFAULTS);
    expect(redactConfig(copy)).toEqual(DEFAULTS);
    expect(copy).toEqual(DEFAULTS);
  });

  it('removes the userinfo of every URL, wherever it is', () => {
    const out = redactConfig({
      redis: { url: 'redis://:pw@redis:6379/0' },
      catalog: { portal: { url: 'https://svc:tok@portal.example.com/api/registry' } },
      routes: { core: [{ id: 'a', baseUrl: 'http://user:p%40ss@10.0.0.1:9000' }] },
    });
    expect(out).toEqual({
      redis: { url: `redis://${REDACTED}@redis:6379/0` },
      catalog: { portal: { url: `https://${REDACTED}@portal.example.com/api/registry` } },
      routes: { core: [{ id: 'a', baseUrl: `http://${REDACTED}@10.0.0.1:9000` }] },
    });
  });

  it('redacts secret query parameters and keeps the others', () => {
    expect(redactConfig('rediss://redis:6380/0?password=pw&tls=1&Api_Token=t#x')).toBe(`rediss://redis:6380/0?password=${REDACTED}&tls=1&Api_Token=${REDACTED}#x`);
  });

  it('replaces the whole value of keys named as secrets, whatever their type (keys the auth work adds)', () => {
    const out = redactConfig({
      auth: { jwt: { sharedSecret: 'k', audience: 'mcp' }, apiKeys: ['a', 'b'], upstream: { headers: { authorization: 'Bearer x' } } },
      redis: { password: 'pw', namespace: 'ns' },
    });
    expect(out).toEqual({
      auth: { jwt: { sharedSecret: REDACTED, audience: 'mcp' }, apiKeys: REDACTED, upstream: { headers: { authorization: REDACTED } } },
      redis: { password: REDACTED, namespace: 'ns' },
    });
  });

  it('names no current config key a secret (none is today)', () => {
    const names: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v !== 'object' || v === null) return;
      for (const [k, child] of Object.entries(v)) {
        names.push(k);
        walk(child);
      }
    };
    walk(DEFAULTS);
    expect(names.filter((n) => isSecretKey(n))).toEqual([]);
  });

  it('leaves non-URL strings alone, even with an @', () => {
    expect(redactConfig({ a: 'ops@example.com', b: 'mcp-gateway' })).toEqual({ a: 'ops@example.com', b: 'mcp-gateway' });
  });
});
