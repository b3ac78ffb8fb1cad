/** `x-mcp-header` scanning: where an annotation may sit, what it may annotate, and the path each problem names. */
import { describe, expect, it } from 'vitest';
import { scanHeaderParams } from '../../../../src/shared/catalog/x-mcp-header.js';

const problem = (schema: Record<string, unknown>): string => {
  const scan = scanHeaderParams(schema);
  if (scan.ok) throw new Error('expected a problem');
  return scan.problem;
};

describe('scanHeaderParams', () => {
  it('finds annotations along properties chains, in order, with their paths and header names', () => {
    const scan = scanHeaderParams({
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        filter: { type: 'object', properties: { limit: { type: 'integer', 'x-mcp-header': 'Limit' }, exact: { type: 'boolean', 'x-mcp-header': 'Exact' } } },
        note: { type: 'string' },
      },
    });
    expect(scan).toEqual({
      ok: true,
      params: [
        { name: 'Region', header: 'mcp-param-region', path: ['region'], type: 'string' },
        { name: 'Limit', header: 'mcp-param-limit', path: ['filter', 'limit'], type: 'integer' },
        { name: 'Exact', header: 'mcp-param-exact', path: ['filter', 'exact'], type: 'boolean' },
      ],
    });
  });

  it('a schema without annotations scans clean, whatever subschemas it has', () => {
    expect(scanHeaderParams({ type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, $defs: { x: { type: 'string' } }, items: true })).toEqual({
      ok: true,
      params: [],
    });
  });

  it.each([
    ['the root', { type: 'string', 'x-mcp-header': 'Root' }, '/: x-mcp-header is only allowed on properties'],
    ['items', { type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } } }, '/a/items: x-mcp-header is only allowed'],
    ['a combinator', { type: 'object', properties: { a: { anyOf: [{ type: 'null' }, { type: 'string', 'x-mcp-header': 'A' }] } } }, '/a/anyOf/1: x-mcp-header is only allowed'],
    ['$defs', { type: 'object', $defs: { d: { type: 'string', 'x-mcp-header': 'D' } } }, '/$defs/d: x-mcp-header is only allowed'],
    ['properties below $defs', { type: 'object', $defs: { d: { type: 'object', properties: { p: { type: 'string', 'x-mcp-header': 'P' } } } } }, '/$defs/d/p: x-mcp-header is only allowed'],
    ['a conditional', { type: 'object', if: { properties: { a: { type: 'string', 'x-mcp-header': 'A' } } } }, '/if/a: x-mcp-header is only allowed'],
  ])('refuses an annotation under %s, naming its path', (_where, schema, message) => {
    expect(problem(schema)).toContain(message);
  });

  it('refuses a number property, a non-token name and a case-insensitive duplicate', () => {
    expect(problem({ type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } })).toContain('/n: x-mcp-header is only allowed on string, integer or boolean');
    expect(problem({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': '' } } })).toContain('/a: x-mcp-header must be a non-empty HTTP token');
    expect(problem({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Dup' }, b: { type: 'string', 'x-mcp-header': 'DUP' } } })).toContain(
      '/b: x-mcp-header "DUP" is not unique (also declared as "Dup")',
    );
  });
});
