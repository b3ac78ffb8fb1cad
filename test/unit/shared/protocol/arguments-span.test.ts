import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { argumentsBytes } from '../../../../src/shared/protocol/arguments-span.js';

const bytes = (text: string): Uint8Array => Buffer.from(text, 'utf8');
const text = (b: Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString('utf8'));

describe('argumentsBytes', () => {
  it('finds the arguments value wherever the members are, with whitespace, nesting and strings that look like keys', () => {
    expect(text(argumentsBytes(bytes('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}')))).toBe('{"a":1}');
    expect(text(argumentsBytes(bytes(' { "params" : { "arguments" :\n [1, {"b":"}"}] , "name":"x" } , "id": "params"} ')))).toBe('[1, {"b":"}"}]');
    expect(text(argumentsBytes(bytes('{"params":{"name":"arguments","x":{"arguments":0},"arguments":"str\\"ing"}}')))).toBe('"str\\"ing"');
    expect(text(argumentsBytes(bytes('{"params":{"arguments":{"k":"ключ ✓"}}}')))).toBe('{"k":"ключ ✓"}');
  });

  it('takes the last of duplicate members, as JSON.parse does', () => {
    expect(text(argumentsBytes(bytes('{"params":{"arguments":{"first":1},"arguments":{"last":2}}}')))).toBe('{"last":2}');
    expect(text(argumentsBytes(bytes('{"params":{"arguments":1},"params":{"arguments":2}}')))).toBe('2');
  });

  it('answers null when there is nothing to splice or a key is escaped', () => {
    expect(argumentsBytes(bytes('{"params":{"name":"x"}}'))).toBeNull();
    expect(argumentsBytes(bytes('{"id":1}'))).toBeNull();
    expect(argumentsBytes(bytes('[1,2]'))).toBeNull();
    expect(argumentsBytes(bytes('{"params":{"\\u0061rguments":{}}}'))).toBeNull();
    expect(argumentsBytes(bytes('{"p\\u0061rams":{"arguments":{}}}'))).toBeNull();
  });

  it('always yields bytes that parse to the value JSON.parse gives (property)', () => {
    const key = fc.constantFrom('params', 'arguments', 'name', 'id', 'x');
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }),
        fc.jsonValue({ maxDepth: 3 }),
        fc.array(fc.tuple(key, fc.jsonValue({ maxDepth: 2 })), { maxLength: 4 }),
        fc.constantFrom('', ' ', '\n  '),
        (args, other, extra, ws) => {
          const params = [...extra.map(([k, v]) => `${ws}${JSON.stringify(k)}${ws}:${ws}${JSON.stringify(v)}`), `"arguments":${ws}${JSON.stringify(args)}`, `"other":${JSON.stringify(other)}`];
          const body = `{${ws}"jsonrpc":"2.0","params":{${params.join(',')}}${ws}}`;
          const expected = (JSON.parse(body) as { params: { arguments: unknown } }).params.arguments;
          const got = argumentsBytes(bytes(body));
          expect(got).not.toBeNull();
          expect(JSON.parse(text(got) as string)).toEqual(expected);
        },
      ),
      { numRuns: 2000, seed: 20261201 },
    );
  });
});
