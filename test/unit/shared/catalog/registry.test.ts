import { describe, expect, it } from 'vitest';
import { parseRegistry, staticRegistry } from '../../../../src/shared/catalog/registry.js';
import { GatewayError } from '../../../../src/shared/errors.js';

const hr = { id: 'hr-tools', baseUrl: 'http://hr-tools:8080', manifestPath: '/manifest' };
const erp = { id: 'erp-tools', baseUrl: 'https://erp.internal:9443/api/' };

function unreadable(doc: unknown): GatewayError {
  try {
    parseRegistry(doc);
  } catch (err) {
    if (GatewayError.is(err)) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(doc)}`);
}

describe('parseRegistry: the document as a whole', () => {
  it('reads revision and routes; entries keep their fields, manifestPath stays optional', () => {
    const r = parseRegistry({ revision: '2026-11-30T10:00:00Z#42', routes: { core: [hr], process: [erp] } });
    expect(r).toEqual({ revision: '2026-11-30T10:00:00Z#42', routes: { core: [hr], process: [erp] }, rejected: {} });
    expect('manifestPath' in (r.routes['process']?.[0] ?? {})).toBe(false);
  });

  it('accepts an empty routes object (the mass-removal guard, not the parser, judges it)', () => {
    expect(parseRegistry({ revision: 'r', routes: {} })).toEqual({ revision: 'r', routes: {}, rejected: {} });
  });

  it('copies entries: changing the input afterwards does not change the registry', () => {
    const doc = { revision: 'r', routes: { core: [{ ...hr }] } };
    const r = parseRegistry(doc);
    (doc.routes.core[0] as { baseUrl: string }).baseUrl = 'http://evil:1';
    expect(r.routes['core']?.[0]?.baseUrl).toBe('http://hr-tools:8080');
  });

  it('ignores unknown top-level members', () => {
    expect(parseRegistry({ revision: 'r', routes: { core: [hr] }, generatedBy: 'portal 3' }).routes).toEqual({ core: [hr] });
  });

  it.each([
    ['an array', [], '/ must be object'],
    ['null', null, '/ must be object'],
    ['a string', 'core', '/ must be object'],
    ['no revision', { routes: {} }, 'must have required properties revision'],
    ['an empty revision', { revision: '', routes: {} }, '/revision must not have fewer than 1 characters'],
    ['a revision longer than 256', { revision: 'x'.repeat(257), routes: {} }, '/revision'],
    ['a numeric revision', { revision: 42, routes: {} }, '/revision must be string'],
    ['no routes', { revision: 'r' }, 'must have required properties routes'],
    ['routes as an array', { revision: 'r', routes: [] }, '/routes must be object'],
    ['routes null', { revision: 'r', routes: null }, '/routes must be object'],
  ])('an unreadable document (%s) is PORTAL_INVALID, not an empty registry', (_name, doc, problem) => {
    const err = unreadable(doc);
    expect(err.code).toBe('PORTAL_INVALID');
    expect(err.message).toContain('registry document is not a v1 registry');
    expect(err.message).toContain(problem);
  });

  it('a revision of exactly 256 characters is fine', () => {
    expect(parseRegistry({ revision: 'x'.repeat(256), routes: {} }).revision).toHaveLength(256);
  });
});

describe('parseRegistry: one invalid route rejects that route only', () => {
  const reject = (routes: Record<string, unknown>): Record<string, string> => {
    const r = parseRegistry({ revision: 'r', routes: { core: [hr], ...routes } });
    expect(r.routes).toEqual({ core: [hr] });
    return r.rejected;
  };

  it.each(['Core', '', '-core', 'core-', 'core_x', 'core.x', 'a'.repeat(64), 'cöre', 'core/x', ' core'])('route key %j is not a lowercase DNS label', (key) => {
    expect(reject({ [key]: [hr] })).toEqual({ [key]: 'route key is not a lowercase DNS label' });
  });

  it.each(['a', '0', 'a-b', 'hr-core-2', 'a'.repeat(63)])('route key %j is fine', (key) => {
    expect(Object.keys(parseRegistry({ revision: 'r', routes: { [key]: [hr] } }).routes)).toEqual([key]);
  });

  it.each([
    ['an empty entry list', [], '/ must not have fewer than 1 items'],
    ['more than 256 entries', Array.from({ length: 257 }, (_, i) => ({ id: `s${i}`, baseUrl: 'http://x' })), '/ must not have more than 256 items'],
    ['a single entry object', hr, '/ must be array'],
    ['an entry without baseUrl', [{ id: 'a' }], '/0 must have required properties baseUrl'],
    ['an entry without id', [{ baseUrl: 'http://a' }], '/0 must have required properties id'],
    ['an id with a space', [{ id: 'a b', baseUrl: 'http://a' }], '/0/id must match pattern'],
    ['an empty id', [{ id: '', baseUrl: 'http://a' }], '/0/id'],
    ['an id of 129 characters', [{ id: 'a'.repeat(129), baseUrl: 'http://a' }], '/0/id'],
    ['an ftp baseUrl', [{ id: 'a', baseUrl: 'ftp://a' }], '/0/baseUrl must be an absolute http(s) URL'],
    ['a relative baseUrl', [{ id: 'a', baseUrl: '/a' }], '/0/baseUrl must be an absolute http(s) URL'],
    ['a javascript: baseUrl', [{ id: 'a', baseUrl: 'javascript:alert(1)' }], '/0/baseUrl must be an absolute http(s) URL'],
    ['a manifestPath without /', [{ id: 'a', baseUrl: 'http://a', manifestPath: 'manifest' }], '/0/manifestPath must match pattern'],
    ['an empty manifestPath', [{ id: 'a', baseUrl: 'http://a', manifestPath: '' }], '/0/manifestPath'],
    ['a non-string baseUrl', [{ id: 'a', baseUrl: 8080 }], '/0/baseUrl'],
    ['a duplicate id', [hr, { id: 'hr-tools', baseUrl: 'http://other:1' }], '/1/id duplicate Tool Service id "hr-tools"'],
    ['a bad second entry', [hr, { id: 'b', baseUrl: 'file:///etc/passwd' }], '/1/baseUrl must be an absolute http(s) URL'],
  ])('%s', (_name, entries, problem) => {
    const rejected = reject({ broken: entries });
    expect(Object.keys(rejected)).toEqual(['broken']);
    expect(rejected['broken']).toContain('invalid registry entry: ');
    expect(rejected['broken']).toContain(problem);
  });

  it('the same Tool Service id in two routes is fine', () => {
    expect(Object.keys(parseRegistry({ revision: 'r', routes: { core: [hr], people: [hr] } }).routes)).toEqual(['core', 'people']);
  });

  it('rejects several routes independently and keeps every valid one', () => {
    const r = parseRegistry({ revision: 'r', routes: { a: [hr], B: [hr], c: [], d: [erp] } });
    expect(Object.keys(r.routes).sort()).toEqual(['a', 'd']);
    expect(Object.keys(r.rejected).sort()).toEqual(['B', 'c']);
  });

  it('ignores unknown members of an entry (SPEC §7: extend compatibly)', () => {
    const r = parseRegistry({ revision: 'r', routes: { core: [{ ...hr, owner: 'team-hr' }] } });
    expect(r.rejected).toEqual({});
    expect(r.routes['core']?.[0]).toMatchObject(hr);
  });
});

describe('staticRegistry', () => {
  it('is revision "static", rejects nothing, and copies the config entries', () => {
    const routes = { core: [{ ...hr }], process: [{ ...erp }] };
    const r = staticRegistry(routes);
    expect(r).toEqual({ revision: 'static', routes, rejected: {} });
    expect(r.routes['core']).not.toBe(routes.core);
    expect(r.routes['core']?.[0]).not.toBe(routes.core[0]);
  });
});
