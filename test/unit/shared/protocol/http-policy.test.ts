import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import type { GatewayConfig } from '../../../../src/shared/config/schema.js';
import { buildHttpPolicy, isJsonContentType, isLoopbackHost, parseAccept } from '../../../../src/shared/protocol/http-policy.js';

const server = (over: Partial<GatewayConfig['server']> = {}): GatewayConfig['server'] => ({ ...DEFAULTS.server, ...over });

describe('buildHttpPolicy', () => {
  it('carries the body limit and Retry-After from the config', () => {
    const policy = buildHttpPolicy(server({ maxBodyBytes: 4096, retryAfterSeconds: 9 }));
    expect(policy.maxBodyBytes).toBe(4096);
    expect(policy.retryAfterSeconds).toBe(9);
  });

  describe.each(['127.0.0.1', 'localhost', '::1'])('loopback bind %s without lists', (host) => {
    const policy = buildHttpPolicy(server({ host }));

    it('allows localhost, 127.0.0.1 and [::1] Hosts with any port, case-insensitively', () => {
      for (const h of ['localhost', 'localhost:8080', 'LOCALHOST:1', '127.0.0.1', '127.0.0.1:65535', '[::1]', '[::1]:8080']) {
        expect(policy.hostAllowed(h), h).toBe(true);
      }
    });

    it('refuses any other Host, including look-alikes', () => {
      for (const h of ['evil.example.com', 'evil.example.com:8080', 'localhost.evil.com', '127.0.0.1.nip.io', '10.0.0.1', '[::2]:80']) {
        expect(policy.hostAllowed(h), h).toBe(false);
      }
    });

    it('allows http(s) loopback Origins with any port', () => {
      for (const o of ['http://localhost', 'http://localhost:3000', 'https://127.0.0.1:8443', 'http://[::1]:8080', 'HTTP://LOCALHOST:5173']) {
        expect(policy.originAllowed(o), o).toBe(true);
      }
    });

    it('refuses foreign, opaque and non-http Origins', () => {
      for (const o of ['http://evil.example.com', 'https://localhost.evil.com', 'null', 'file://localhost', 'ws://localhost:1', '']) {
        expect(policy.originAllowed(o), o).toBe(false);
      }
    });
  });

  it('on a non-loopback bind without lists, does not check Host and refuses every Origin', () => {
    const policy = buildHttpPolicy(server({ host: '0.0.0.0' }));
    expect(policy.hostAllowed('gw.example.com:8443')).toBe(true);
    expect(policy.hostAllowed('10.1.2.3')).toBe(true);
    expect(policy.originAllowed('https://app.example.com')).toBe(false);
    expect(policy.originAllowed('http://localhost:3000')).toBe(false);
  });

  it('with explicit lists, allows exactly the listed names and nothing else (loopback defaults are replaced)', () => {
    const policy = buildHttpPolicy(server({ host: '127.0.0.1', allowedOrigins: ['https://App.Example.com/'], allowedHosts: ['gw.example.com', 'other.example.com:8443'] }));
    expect(policy.originAllowed('https://app.example.com')).toBe(true);
    expect(policy.originAllowed('HTTPS://APP.EXAMPLE.COM')).toBe(true);
    expect(policy.originAllowed('http://app.example.com')).toBe(false);
    expect(policy.originAllowed('http://localhost:3000')).toBe(false);
    expect(policy.hostAllowed('gw.example.com')).toBe(true);
    expect(policy.hostAllowed('gw.example.com:8443')).toBe(true);
    expect(policy.hostAllowed('GW.EXAMPLE.COM')).toBe(true);
    expect(policy.hostAllowed('other.example.com:8443')).toBe(true);
    expect(policy.hostAllowed('other.example.com')).toBe(false);
    expect(policy.hostAllowed('localhost')).toBe(false);
  });

  it('with empty lists, allows no Origin and no Host', () => {
    const policy = buildHttpPolicy(server({ host: '0.0.0.0', allowedOrigins: [], allowedHosts: [] }));
    expect(policy.originAllowed('http://localhost')).toBe(false);
    expect(policy.hostAllowed('localhost')).toBe(false);
  });
});

describe('isLoopbackHost', () => {
  it('names loopback interfaces', () => {
    expect(['localhost', '127.0.0.1', '[::1]', '::1', 'LocalHost'].map(isLoopbackHost)).toEqual([true, true, true, true, true]);
    expect(['0.0.0.0', '10.0.0.1', 'example.com', '::', ''].map(isLoopbackHost)).toEqual([false, false, false, false, false]);
  });
});

describe('isJsonContentType', () => {
  it('accepts application/json and application/json-rpc with parameters, in any case', () => {
    for (const t of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8', 'application/json-rpc', ' application/json ']) {
      expect(isJsonContentType(t), t).toBe(true);
    }
  });

  it('refuses everything else, including a missing header', () => {
    for (const t of ['', 'text/plain', 'application/jsonx', 'application/x-www-form-urlencoded', 'text/json', 'application/json-seq']) {
      expect(isJsonContentType(t), t).toBe(false);
    }
  });
});

describe('parseAccept', () => {
  it('allows JSON for a missing header, */*, application/* and application/json', () => {
    expect(parseAccept('')).toEqual({ json: true, sse: false });
    expect(parseAccept('*/*')).toEqual({ json: true, sse: false });
    expect(parseAccept('application/*')).toEqual({ json: true, sse: false });
    expect(parseAccept('application/json')).toEqual({ json: true, sse: false });
    expect(parseAccept('Application/JSON; q=0.9')).toEqual({ json: true, sse: false });
  });

  it('notes text/event-stream next to JSON', () => {
    expect(parseAccept('application/json, text/event-stream')).toEqual({ json: true, sse: true });
    expect(parseAccept('text/event-stream;q=1,application/json;q=0.5')).toEqual({ json: true, sse: true });
  });

  it('does not allow JSON for SSE alone or unrelated types', () => {
    expect(parseAccept('text/event-stream')).toEqual({ json: false, sse: true });
    expect(parseAccept('text/html, application/xml')).toEqual({ json: false, sse: false });
  });

  it('keeps the last decision for a repeated header, and every header still gets its own (the memo never leaks)', () => {
    const cases: Array<[string, { json: boolean; sse: boolean }]> = [
      ['application/json, text/event-stream', { json: true, sse: true }],
      ['application/json, text/event-stream', { json: true, sse: true }],
      ['', { json: true, sse: false }],
      ['text/event-stream', { json: false, sse: true }],
      ['', { json: true, sse: false }],
      ['text/html', { json: false, sse: false }],
      ['text/html', { json: false, sse: false }],
      ['application/json', { json: true, sse: false }],
    ];
    for (const [header, want] of cases) expect(parseAccept(header), JSON.stringify(header)).toEqual(want);
    expect(parseAccept('text/html')).toBe(parseAccept('text/html'));
    expect(Object.isFrozen(parseAccept('*/*'))).toBe(true);
  });
});

describe('hostAllowed keeps the last verdict', () => {
  it('answers each Host on its own when Hosts alternate', () => {
    const policy = buildHttpPolicy(server({ host: '127.0.0.1' }));
    for (const [h, want] of [
      ['localhost:1', true],
      ['localhost:1', true],
      ['evil.example', false],
      ['evil.example', false],
      ['127.0.0.1:9', true],
      ['evil.example:80', false],
    ] as const) {
      expect(policy.hostAllowed(h), h).toBe(want);
    }
  });
});
