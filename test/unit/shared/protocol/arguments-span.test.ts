import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArgumentsScan, scanArguments } from '../../../../src/shared/protocol/arguments-span.js';

const bytes = (text: string): Uint8Array => Buffer.from(text, 'utf8');
const span = new Int32Array(3);
/** The arguments' text as scanArguments delimits it, or null when it finds none. */
const argumentsText = (body: string): string | null => {
  const b = bytes(body);
  return scanArguments(b, span) === ArgumentsScan.Found ? Buffer.from(b.subarray(span[0], span[1])).toString('utf8') : null;
};
/** How many objects/arrays the found arguments nest. */
const nesting = (body: string): number => {
  expect(scanArguments(bytes(body), span)).toBe(ArgumentsScan.Found);
  return span[2] as number;
};
/** Objects/arrays nested in a parsed JSON value. */
const depthOf = (v: unknown): number => (v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0);

describe('scanArguments', () => {
  it('finds the arguments value wherever the members are, with whitespace, nesting and strings that look like keys', () => {
    expect(argumentsText('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}')).toBe('{"a":1}');
    expect(argumentsText(' { "params" : { "arguments" :\n [1, {"b":"}"}] , "name":"x" } , "id": "params"} ')).toBe('[1, {"b":"}"}]');
    expect(argumentsText('{"params":{"name":"arguments","x":{"arguments":0},"arguments":"str\\"ing"}}')).toBe('"str\\"ing"');
    expect(argumentsText('{"params":{"arguments":{"k":"ключ ✓"}}}')).toBe('{"k":"ключ ✓"}');
    expect(argumentsText('{"x":{"params":{"arguments":1}},"params":{"y":[{"arguments":2}],"arguments":true}}')).toBe('true');
  });

  it('takes the last of duplicate members, as JSON.parse does', () => {
    expect(argumentsText('{"params":{"arguments":{"first":1},"arguments":{"last":2}}}')).toBe('{"last":2}');
    expect(argumentsText('{"params":{"arguments":1},"params":{"arguments":2}}')).toBe('2');
    expect(argumentsText('{"params":{"arguments":{"a":1}},"params":{"name":"x"}}')).toBeNull();
    expect(argumentsText('{"params":{"arguments":{"a":1}},"params":[{"arguments":2}]}')).toBeNull();
  });

  it('answers Absent when there is nothing to splice and Undecidable when a compared key is escaped', () => {
    expect(scanArguments(bytes('{"params":{"name":"x"}}'), span)).toBe(ArgumentsScan.Absent);
    expect(scanArguments(bytes('{"id":1}'), span)).toBe(ArgumentsScan.Absent);
    expect(scanArguments(bytes('[1,2]'), span)).toBe(ArgumentsScan.Absent);
    expect(scanArguments(bytes('{"params":{"\\u0061rguments":{}}}'), span)).toBe(ArgumentsScan.Undecidable);
    expect(scanArguments(bytes('{"p\\u0061rams":{"arguments":{}}}'), span)).toBe(ArgumentsScan.Undecidable);
    // Escapes in keys the scan does not compare do not matter.
    expect(argumentsText('{"params":{"arguments":{"\\u0061":1},"x":{"\\"":2}}}')).toBe('{"\\u0061":1}');
  });

  it('counts the nesting of the arguments alone, not of the members around them', () => {
    expect(nesting('{"params":{"arguments":{}}}')).toBe(1);
    expect(nesting('{"params":{"arguments":{"a":[{"b":[]}]},"_meta":[[[[[[1]]]]]]}}')).toBe(4);
    expect(nesting('{"params":{"arguments":{"s":"[[[{{{"}}}')).toBe(1);
    expect(nesting('{"params":{"arguments":{"a":[[1],[2]],"b":{"c":{}}}}}')).toBe(3);
    expect(nesting('{"params":{"arguments":7}}')).toBe(0);
  });

  it('always yields bytes that parse to the value JSON.parse gives, with their nesting (property)', () => {
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
          const got = argumentsText(body);
          expect(got).not.toBeNull();
          expect(JSON.parse(got as string)).toEqual(expected);
          expect(span[2]).toBe(depthOf(expected));
        },
      ),
      { numRuns: 2000, seed: 20261201 },
    );
  });
});
