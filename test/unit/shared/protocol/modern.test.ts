import { describe, expect, it } from 'vitest';
import { scanHeaderParams } from '../../../../src/shared/catalog/x-mcp-header.js';
import { decodeHeaderValue, mcpNameField, paramHeaderMismatch } from '../../../../src/shared/protocol/header-values.js';
import { COMPLETE_RESULT_HEAD, completeResultJson, protocolEra, stripOws } from '../../../../src/shared/protocol/modern.js';
import { SERVER_INFO } from '../../../../src/shared/protocol/mcp.js';

describe('protocolEra (MCP-Protocol-Version → era)', () => {
  it('absent or a legacy revision is legacy, 2026-07-28 is modern, anything else unsupported; OWS is ignored', () => {
    expect(protocolEra('')).toBe('legacy');
    for (const v of ['2025-11-25', '2025-06-18', '2025-03-26', ' 2025-11-25\t']) expect(protocolEra(v)).toBe('legacy');
    for (const v of ['2026-07-28', ' 2026-07-28 ']) expect(protocolEra(v)).toBe('modern');
    for (const v of ['2024-11-05', '2026-07-29', 'latest', '2026-07-28,2025-11-25']) expect(protocolEra(v)).toBe('unsupported');
    expect(protocolEra('   ')).toBe('legacy');
  });

  it('stripOws strips only SP and HTAB at both ends, returning the same string when there is none', () => {
    const s = 'a b';
    expect(stripOws(s)).toBe(s);
    expect(stripOws('\t a b \t')).toBe('a b');
    expect(stripOws('\na\n')).toBe('\na\n');
  });
});

describe('complete results', () => {
  it('lead with resultType and the serverInfo _meta; an explicit _meta replaces the serverInfo-only one', () => {
    expect(JSON.parse(completeResultJson(''))).toEqual({ resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO } });
    expect(JSON.parse(completeResultJson('"tools":[]'))).toEqual({ resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO }, tools: [] });
    expect(JSON.parse(completeResultJson('"a":1', { x: 1 }))).toEqual({ resultType: 'complete', _meta: { x: 1 }, a: 1 });
    expect(COMPLETE_RESULT_HEAD.endsWith(',')).toBe(true);
  });
});

describe('mirrored header values (SEP-2243)', () => {
  it('decodes literals and canonical Base64 sentinels; refuses bad padding, bad UTF-8 and control characters', () => {
    expect(decodeHeaderValue(' us-west1 ')).toBe('us-west1');
    expect(decodeHeaderValue(`=?base64?${Buffer.from('Hello, 世界').toString('base64')}?=`)).toBe('Hello, 世界');
    expect(decodeHeaderValue('=?base64??=')).toBe('');
    expect(decodeHeaderValue('=?base64?SGVsbG8?=')).toBeNull(); // missing padding
    expect(decodeHeaderValue('=?base64?SGVsbG8===?=')).toBeNull();
    expect(decodeHeaderValue('=?base64?/w==?=')).toBeNull(); // 0xff is not UTF-8
    expect(decodeHeaderValue('a\u0001b')).toBeNull();
    expect(decodeHeaderValue('ünïcode')).toBeNull();
    // A value that merely looks like the sentinel's start is a literal.
    expect(decodeHeaderValue('=?base64?abc')).toBe('=?base64?abc');
  });

  it('names the body field Mcp-Name mirrors', () => {
    expect(mcpNameField('tools/call')).toBe('name');
    expect(mcpNameField('prompts/get')).toBe('name');
    expect(mcpNameField('resources/read')).toBe('uri');
    expect(mcpNameField('tools/list')).toBeNull();
  });

  const declared = (schema: Record<string, unknown>) => {
    const scan = scanHeaderParams(schema);
    if (!scan.ok) throw new Error(scan.problem);
    return scan.params;
  };

  it('checks Mcp-Param-* against the arguments: required when the body has a value, equal after decoding, numbers numerically', () => {
    const params = declared({
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        limit: { type: 'integer', 'x-mcp-header': 'Limit' },
        dry: { type: 'boolean', 'x-mcp-header': 'Dry' },
        nested: { type: 'object', properties: { tenant: { type: 'string', 'x-mcp-header': 'Tenant' } } },
      },
    });
    const args = { region: 'eu', limit: 42, dry: false, nested: { tenant: '김' } };
    const ok: Array<[string, string]> = [
      ['mcp-param-region', 'eu'],
      ['mcp-param-limit', '42.0'],
      ['mcp-param-dry', 'false'],
      ['mcp-param-tenant', `=?base64?${Buffer.from('김').toString('base64')}?=`],
    ];
    expect(paramHeaderMismatch(params, args, ok)).toBeNull();
    expect(paramHeaderMismatch(params, args, ok.slice(1))).toMatch(/Mcp-Param-Region header is absent/);
    expect(paramHeaderMismatch(params, { ...args, region: 'us' }, ok)).toMatch(/Mcp-Param-Region header is "eu" but the body carries region="us"/);
    expect(paramHeaderMismatch(params, args, [...ok.slice(0, 3), ['mcp-param-tenant', '=?base64?***?=']])).toMatch(/malformed/);
    // No value in the body: no header expected, one sent anyway is ignored.
    expect(
      paramHeaderMismatch(params, { region: 'eu' }, [
        ['mcp-param-region', 'eu'],
        ['mcp-param-limit', '7'],
      ]),
    ).toBeNull();
    expect(paramHeaderMismatch(params, { region: 'eu', limit: null }, [['mcp-param-region', 'eu']])).toBeNull();
  });
});

describe('x-mcp-header declarations', () => {
  it('collects properties reached through "properties", with lowercase header names', () => {
    const scan = scanHeaderParams({
      type: 'object',
      properties: { a: { type: 'string', 'x-mcp-header': 'My-Region' }, b: { type: 'object', properties: { c: { type: 'boolean', 'x-mcp-header': 'C' } } } },
    });
    expect(scan).toEqual({
      ok: true,
      params: [
        { name: 'My-Region', header: 'mcp-param-my-region', path: ['a'], type: 'string' },
        { name: 'C', header: 'mcp-param-c', path: ['b', 'c'], type: 'boolean' },
      ],
    });
    expect(scanHeaderParams({ type: 'object' })).toEqual({ ok: true, params: [] });
  });

  it('refuses annotations that break the constraints, saying where', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ type: 'object', properties: { a: { type: 'number', 'x-mcp-header': 'A' } } }, /\/a: .*string, integer or boolean/],
      [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': '' } } }, /non-empty HTTP token/],
      [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'has space' } } }, /HTTP token/],
      [{ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'X' }, b: { type: 'string', 'x-mcp-header': 'x' } } }, /not unique/],
      [{ type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'X' } } } }, /\/a\/items: .*only allowed on properties/],
      [{ type: 'object', anyOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'X' } } }] }, /\/anyOf\/0\/a/],
      [{ type: 'object', $defs: { d: { type: 'string', 'x-mcp-header': 'X' } } }, /\$defs\/d/],
      [{ type: 'object', 'x-mcp-header': 'Root' }, /^\/: /],
    ];
    for (const [schema, why] of bad) {
      const scan = scanHeaderParams(schema);
      expect(scan.ok, JSON.stringify(schema)).toBe(false);
      if (!scan.ok) expect(scan.problem).toMatch(why);
    }
  });
});
