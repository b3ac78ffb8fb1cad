import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CatalogTool } from '../../../../src/shared/catalog/types.js';
import { answerRequest } from '../../../../src/shared/protocol/answer.js';
import { exactId, idTextInBytes, idTextInString, MAX_ID_TEXT } from '../../../../src/shared/protocol/id-text.js';
import { encodeId } from '../../../../src/shared/protocol/jsonrpc.js';
import { replyText } from '../../../../src/shared/protocol/reply.js';
import { decodeSnapshot, encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const both = (text: string): string | null => {
  const a = idTextInString(text);
  expect(idTextInBytes(utf8(text))).toBe(a);
  return a;
};

describe('idTextInString / idTextInBytes', () => {
  it('finds the exact text of a top-level id wherever it is', () => {
    expect(both('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}')).toBe('9007199254740993');
    expect(both('{"method":"ping","jsonrpc":"2.0","id":9007199254740993}')).toBe('9007199254740993');
    expect(both(' {\n\t"id" :\r -1.50e+3 , "x":1}')).toBe('-1.50e+3');
    expect(both('{"id":"a\\"b\\\\"}')).toBe('"a\\"b\\\\"');
    expect(both('{"id":"🐙 설명"}')).toBe('"🐙 설명"');
  });

  it('skips ids of nested values and strings that look like keys', () => {
    expect(both('{"params":{"id":1,"a":[{"id":2}]},"x":"\\"id\\":3","id":4}')).toBe('4');
    expect(both('{"params":{"id":1}}')).toBeNull();
    expect(both('{"idx":1,"i":2,"":3}')).toBeNull();
  });

  it('decodes escaped keys and, like JSON.parse, takes the last duplicate', () => {
    expect(both('{"\\u0069d":12345678901234567890}')).toBe('12345678901234567890');
    expect(both('{"i\\u0064":1,"\\u0069\\u0064":2}')).toBe('2');
    expect(both('{"id":1,"id":2}')).toBe('2');
    expect(both('{"i\\nd":1}')).toBeNull();
  });

  it('gives null for what is not a JSON object', () => {
    for (const t of ['[{"id":1}]', '1', '"id"', '', '{', '{"id"', '{"id":}', '{"id":1']) expect(both(t), t).toBeNull();
  });

  it('property: for random objects and ids, returns the text written, which parses to the same id', () => {
    const ws = fc.constantFrom('', ' ', '\n', '\t ', '\r\n');
    const key = fc.constantFrom('"id"', '"\\u0069d"', '"i\\u0064"', '"\\u0069\\u0064"');
    const idText = fc.oneof(
      fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
      fc.tuple(fc.integer(), fc.nat(99999), fc.integer({ min: -400, max: 400 })).map(([a, b, e]) => `${a}.${b}e${e}`),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
      fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)),
    );
    const other = fc.dictionary(
      fc.oneof(fc.string({ maxLength: 6 }), fc.constant('idx')).filter((k) => k !== 'id'),
      fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant({ id: 7, nested: [{ id: 8 }] }), fc.constant('"id":9')),
      { maxKeys: 5 },
    );
    fc.assert(
      fc.property(other, key, idText, fc.nat(), fc.array(ws, { minLength: 8, maxLength: 8 }), (members, k, id, pos, w) => {
        const parts = Object.entries(members).map(([mk, v]) => `${w[0]}${JSON.stringify(mk)}${w[1]}:${w[2]}${JSON.stringify(v)}${w[3]}`);
        parts.splice(pos % (parts.length + 1), 0, `${w[4]}${k}${w[5]}:${w[6]}${id}${w[7]}`);
        const text = `${w[7]}{${parts.join(',')}}${w[0]}`;
        const found = both(text);
        expect(found).toBe(id);
        expect(JSON.parse(found as string)).toStrictEqual((JSON.parse(text) as { id: unknown }).id);
      }),
      { numRuns: 3000, seed: 13 },
    );
  });
});

describe('exactId', () => {
  it('keeps ids that serialise exactly and replaces rounded numbers with their text', () => {
    const body = '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}';
    // The id as JSON.parse sees it: rounded to 9007199254740992 (2^53 + 1 is no double).
    const rounded = (JSON.parse(body) as { id: number }).id;
    expect(rounded).toBe(2 ** 53);
    expect(exactId(rounded, body)).toEqual({ json: '9007199254740993' });
    expect(encodeId(exactId(rounded, utf8(body)))).toBe('9007199254740993');
    expect(exactId(42, '{"id":42}')).toBe(42);
    expect(exactId('x', '{"id":"x"}')).toBe('x');
    expect(exactId(null, '{}')).toBeNull();
    expect(encodeId(exactId(1.5, '{"id":1.50}'))).toBe('1.50');
    expect(encodeId(exactId(Infinity, '{"id":1e400}'))).toBe('1e400');
  });

  it('falls back to the parsed id beyond MAX_ID_TEXT characters', () => {
    const long = '1' + '0'.repeat(MAX_ID_TEXT);
    expect(exactId(Number(long), `{"id":${long}}`)).toBe(Number(long));
  });
});

describe('answerRequest echoes ids above 2^53 exactly (issue 11 Low #13)', () => {
  const tool: CatalogTool = { name: 't', version: '1', active: true, serviceId: 's', inputSchema: { type: 'object' }, timeoutMs: 1000, executionUrl: 'http://127.0.0.1:1/t' };
  const route = decodeSnapshot(encodeSnapshot({ routeKey: 'core', revision: 'sha256:00', source: 'static', builtAt: 0, tools: [tool] }));
  const answer = (body: string): string => {
    const d = answerRequest(utf8(body), route);
    if (d.kind !== 'reply') throw new Error('expected a reply');
    return replyText(d.reply);
  };

  it('in tools/list, ping, initialize and error answers', () => {
    for (const method of ['tools/list', 'ping', 'nope', 'initialize']) {
      const text = answer(`{"jsonrpc":"2.0","id":9007199254740993,"method":"${method}","params":{"protocolVersion":"2025-11-25"}}`);
      expect(text, method).toContain('"id":9007199254740993');
      expect(() => JSON.parse(text)).not.toThrow();
    }
    expect(answer('{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping","params":[]}')).toContain('"id":12345678901234567890123');
  });
});
