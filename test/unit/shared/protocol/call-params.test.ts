import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callArgumentsValue, mayDeferArguments, parseRequestBody } from '../../../../src/shared/protocol/call-params.js';

/**
 * What the gateway makes of a body: the acceptor's parse (arguments object left
 * out) and, when it was left out, the shard's parse of the arguments' bytes.
 * `undefined` when either refuses, else the message with its arguments put back.
 */
function gatewayVerdict(body: Uint8Array): unknown {
  let message: unknown;
  try {
    message = parseRequestBody(body, true);
  } catch {
    return undefined;
  }
  const params = (message as { params?: unknown } | null)?.params;
  if (params === null || typeof params !== 'object' || Array.isArray(params) || !('arguments' in params)) return message;
  try {
    (params as Record<string, unknown>)['arguments'] = callArgumentsValue(params as Record<string, unknown>, body);
  } catch {
    return undefined;
  }
  return message;
}

function jsonVerdict(body: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(body));
  } catch {
    return undefined;
  }
}

const SEEDS = [
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[true,null,{"c":"}"}]}}}',
  ' { "params" : { "arguments" : {"s":"q\\"uo\\\\te","n":-1.5e3} , "name":"x" } , "id": "params"} ',
  '{"params":{"arguments":{"first":1},"arguments":{"k":"ключ ✓","e":{}}},"id":2}',
  '{"id":3,"params":{"name":"arguments","arguments":{"x":{"arguments":[1,2]}}},"method":"tools/call"}',
];
/** Bytes a mutation inserts: the ones the scan reads as structure, and some that are only text. */
const STRUCTURAL = [...'{}[]":,\\ \n ae1-'].map((c) => c.charCodeAt(0)).concat([0xef, 0xbb, 0xbf, 0x80]);

describe('parseRequestBody (the acceptor parses a tools/call body without its arguments object)', () => {
  it('leaves the arguments object out and finds it again from its bytes', () => {
    const body = Buffer.from(SEEDS[0] as string);
    const message = parseRequestBody(body, true) as { params: Record<string, unknown> };
    expect(message.params['arguments']).toEqual({});
    expect(callArgumentsValue(message.params, body)).toEqual({ a: 1, b: [true, null, { c: '}' }] });
  });

  it('reads the text around the arguments as decoding the whole body would: ASCII, an invalid byte, multi-byte characters', () => {
    const around = (name: Uint8Array, args: string, tail: Uint8Array): Uint8Array =>
      Buffer.concat([Buffer.from('{"params":{"name":"'), name, Buffer.from(`","arguments":${args}`), tail, Buffer.from('}}')]);
    const cases = [
      around(Buffer.from('plain'), '{"k":"v"}', Buffer.from(',"x":"y"')),
      around(Uint8Array.of(0x61, 0xff, 0x62), '{"k":"v"}', Uint8Array.of(0x2c, 0x22, 0x78, 0x22, 0x3a, 0x22, 0x80, 0x22)), // bytes that each become one U+FFFD
      around(Buffer.from('plain'), '{"k":"ключ"}', Buffer.from(',"x":"y"')), // characters of two bytes in the arguments only
      around(Buffer.from('é✓'), '{"k":"v"}', Buffer.from(',"x":"ü"')), // characters of two and three bytes around them
    ];
    for (const body of cases) {
      const value = jsonVerdict(body);
      expect(value).toBeDefined();
      expect(gatewayVerdict(body)).toEqual(value);
      expect((parseRequestBody(body, true) as { params: { arguments: unknown } }).params.arguments).toEqual({});
    }
  });

  it('refuses bytes after the arguments that are not JSON, a byte-order mark included', () => {
    for (const tail of ['\ufeff}}', '}}x', ']}', '}']) {
      expect(() => parseRequestBody(Buffer.from(`{"params":{"arguments":{"a":1}${tail}`), true)).toThrow(SyntaxError);
    }
    // A leading byte-order mark is dropped, as for every body (such a body is parsed whole).
    expect(parseRequestBody(Buffer.from('\ufeff{"params":{"arguments":{"a":1}}}'), true)).toEqual({ params: { arguments: { a: 1 } } });
  });

  it('splits only bodies of 128 bytes or more that may be a tools/call (a 2026-07-28 request says so in Mcp-Method)', () => {
    expect(mayDeferArguments(new Uint8Array(127), null)).toBe(false);
    expect(mayDeferArguments(new Uint8Array(128), null)).toBe(true);
    expect(mayDeferArguments(new Uint8Array(128), ' tools/call\t')).toBe(true);
    for (const header of ['tools/list', '', 'tools/callx']) expect(mayDeferArguments(new Uint8Array(4096), header)).toBe(false);
    // Parsed whole, the arguments are the body's own and nothing is deferred.
    const body = Buffer.from('{"params":{"arguments":{"a":[1,2]}}}');
    const message = parseRequestBody(body, false) as { params: Record<string, unknown> };
    expect(message.params['arguments']).toEqual({ a: [1, 2] });
    expect(callArgumentsValue(message.params, body)).toEqual({ a: [1, 2] });
  });

  it('together with the shard parse of the arguments, accepts exactly the bodies JSON.parse accepts, with the same value (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...SEEDS),
        fc.array(fc.tuple(fc.constantFrom('insert', 'delete', 'replace'), fc.nat(), fc.constantFrom(...STRUCTURAL)), { minLength: 1, maxLength: 3 }),
        (seed, edits) => {
          const b = [...Buffer.from(seed)];
          for (const [kind, at, byte] of edits) {
            const i = at % (b.length + 1);
            if (kind === 'insert') b.splice(i, 0, byte);
            else if (kind === 'delete') b.splice(i, 1);
            else b[Math.min(i, b.length - 1)] = byte;
          }
          const body = Uint8Array.from(b);
          expect(gatewayVerdict(body)).toEqual(jsonVerdict(body));
        },
      ),
      { numRuns: 20000, seed: 20261204 },
    );
  });
});
