import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_BAGGAGE,
  MAX_TRACESTATE,
  sanitizeContextHeaders,
  validBaggage,
  validRequestId,
  validSessionId,
  validTraceparent,
  validTracestate,
} from '../../../../src/shared/protocol/context-headers.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const DEL = '\x7f';

describe('validTraceparent (W3C Trace Context)', () => {
  it('accepts version 00 exactly as sent', () => {
    expect(validTraceparent(TP)).toBe(TP);
    expect(validTraceparent(TP.replace(/-01$/, '-00'))).not.toBeNull();
  });

  it('refuses a DEL byte, uppercase hex, all-zero ids, version ff, wrong lengths and delimiters', () => {
    for (const bad of [
      TP.slice(0, 10) + DEL + TP.slice(11),
      TP.toUpperCase(),
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      'ff' + TP.slice(2),
      TP + '-',
      TP + '-extra',
      TP.slice(0, 54),
      TP.replace(/-/g, '_'),
      '0x' + TP.slice(2),
      '',
      TP.slice(0, 55) + ' ',
    ]) {
      expect(validTraceparent(bad), JSON.stringify(bad)).toBeNull();
    }
  });

  it('reads a higher version by the versioning rules and downgrades it to 00', () => {
    expect(validTraceparent('cc' + TP.slice(2))).toBe(TP);
    expect(validTraceparent('cc' + TP.slice(2) + '-what-the-future-holds')).toBe(TP);
    expect(validTraceparent('cc' + TP.slice(2) + 'x')).toBeNull(); // the 56th character must be a dash
    expect(validTraceparent('cc' + TP.slice(2) + '-' + 'x'.repeat(600))).toBeNull(); // prohibitively large
  });
});

describe('validTracestate', () => {
  it('accepts list-members, empty members and optional white space', () => {
    for (const ok of ['rojo=00f067aa0ba902b7,congo=t61rcWkgMzE', 'congo=t61rcWkgMzE', '', ' , ', 'a@b=1 , c/d*_-e= x y', 'k= leading']) {
      expect(validTracestate(ok), JSON.stringify(ok)).toBe(ok);
    }
  });

  it('refuses bad keys, bad values, duplicates, more than 32 members and more than 512 characters', () => {
    const members = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',');
    expect(validTracestate(members(32))).not.toBeNull();
    for (const bad of ['Rojo=1', '=1', 'a', 'a=', 'a=b=c', 'a=1,a=2', `a=${DEL}`, 'a=\t1', members(33), `a=${'x'.repeat(MAX_TRACESTATE)}`, `a=${'x'.repeat(257)}`, `${'k'.repeat(257)}=1`]) {
      expect(validTracestate(bad), JSON.stringify(bad).slice(0, 80)).toBeNull();
    }
  });
});

describe('validBaggage (W3C Baggage)', () => {
  it('accepts members with properties', () => {
    for (const ok of ['userId=alice', 'userId=alice,serverNode=DF%2028,isProduction=false', 'k = v ; p1 ; p2=x', 'a=']) {
      expect(validBaggage(ok), ok).toBe(ok);
    }
  });

  it('refuses bad tokens, bad octets, more than 64 members and more than 8192 characters', () => {
    const members = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',');
    expect(validBaggage(members(64))).not.toBeNull();
    for (const bad of ['', 'novalue', 'k=v v', 'k="v"', 'k=a\\b', `k=${DEL}`, 'k(=v', 'k=v;p(=1', members(65), `k=${'x'.repeat(MAX_BAGGAGE)}`]) {
      expect(validBaggage(bad), JSON.stringify(bad).slice(0, 80)).toBeNull();
    }
  });
});

describe('validSessionId and validRequestId', () => {
  it('session id: visible ASCII, 1–256 characters', () => {
    expect(validSessionId('1868a90c-3c41-4aef-a9c2-8f5c3b2d7e10')).not.toBeNull();
    expect(validSessionId('!~'.repeat(128))).not.toBeNull();
    for (const bad of ['', 'a b', `a${DEL}`, 'é', 'a\r\nx-injected: 1', 'x'.repeat(257)]) expect(validSessionId(bad), JSON.stringify(bad)).toBeNull();
  });

  it('request id: [A-Za-z0-9._:-], 1–128 characters', () => {
    expect(validRequestId('req-1.a:b_C')).not.toBeNull();
    for (const bad of ['', 'a b', 'a/b', `a${DEL}`, 'x'.repeat(129)]) expect(validRequestId(bad)).toBeNull();
  });
});

describe('sanitizeContextHeaders', () => {
  it('drops each invalid header, and tracestate with an invalid traceparent', () => {
    expect(sanitizeContextHeaders({ traceparent: TP, tracestate: 'a=1', baggage: 'k=v', sessionId: 's', requestId: 'r' })).toEqual({
      traceparent: TP,
      tracestate: 'a=1',
      baggage: 'k=v',
      sessionId: 's',
      requestId: 'r',
    });
    expect(sanitizeContextHeaders({ traceparent: TP + DEL, tracestate: 'a=1', baggage: 'k v', sessionId: `s${DEL}`, requestId: 'r r' })).toEqual({
      traceparent: '',
      tracestate: '',
      baggage: '',
      sessionId: '',
      requestId: '',
    });
  });

  it('fuzz: never throws, and whatever it keeps is visible ASCII (or OWS tabs) that re-validates to itself', () => {
    const chars = fc.oneof(fc.constantFrom('0', 'a', 'f', 'z', '-', '=', ',', ';', ' ', '\t', '@', '/', '*', DEL, '\r', '\n', '\u0000', 'é', '"'), fc.string({ maxLength: 1, unit: 'binary' }));
    const text = fc.oneof(
      fc.array(chars, { maxLength: 80 }).map((c) => c.join('')),
      fc.tuple(fc.nat(54), chars).map(([i, c]) => TP.slice(0, i) + c + TP.slice(i + 1)),
      fc.tuple(fc.nat(54), chars).map(([i, c]) => TP.slice(0, i) + c + TP.slice(i)),
    );
    fc.assert(
      fc.property(fc.record({ traceparent: text, tracestate: text, baggage: text, sessionId: text, requestId: text }), (h) => {
        const out = sanitizeContextHeaders(h);
        // What undici accepts in a header value: no control characters but HTAB (the DEL of issue 11 #12 included).
        for (const v of Object.values(out)) expect(v).toMatch(/^[\t\x20-\x7e]*$/);
        if (out.traceparent !== '') expect(validTraceparent(out.traceparent)).toBe(out.traceparent);
        if (out.tracestate !== '') expect(out.traceparent).not.toBe('');
        if (out.sessionId !== '') expect(out.sessionId).not.toMatch(/[\s\x7f]/);
      }),
      { numRuns: 5000, seed: 12 },
    );
  });
});
