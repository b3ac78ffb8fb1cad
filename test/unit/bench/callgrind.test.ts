/**
 * bench/callgrind.ts on fixed inputs: self cost from a callgrind dump (the
 * inclusive cost line after `calls=` is not the caller's own), name
 * compression, JIT code named from a perf map, and the groups of the report.
 */
import { describe, expect, it } from 'vitest';
import { breakdown, groupOf, jitName, parseCallgrind, parsePerfMap } from '../../../dist/bench/callgrind.js';

const DUMP = [
  'version: 1',
  'creator: callgrind-3.19.0',
  'events: Ir',
  'ob=(1) /usr/bin/node',
  'fn=(1) v8::internal::JsonParser<unsigned char>::ParseJsonValue<false>()',
  '10 100',
  '+2 50',
  'cob=(2) ???',
  'cfn=(2) 0x0000000000001010',
  'calls=3 0',
  '12 9999',
  'ob=(2)',
  'fn=(2)',
  '0 70',
  'fn=(3) 0x0000000000002000',
  '0 5',
  'ob=(3) /usr/lib/x86_64-linux-gnu/libc.so.6',
  'fn=(4) __memcpy_avx_unaligned_erms',
  '* 20',
  '',
].join('\n');

const MAP = ['1000 40 JS:*memberSpan file:///x/dist/src/shared/protocol/arguments-span.js:66:20', '1800 10 JS:^other file:///x/dist/a.js:1:1', ''].join('\n');

describe('callgrind dump', () => {
  it('counts self cost: the line after calls= is the callee inclusive cost, not the caller own', () => {
    const cost = parseCallgrind(DUMP);
    expect(cost.total).toBe(100 + 50 + 70 + 5 + 20);
    expect(cost.byFunction.get('/usr/bin/node\u0000v8::internal::JsonParser<unsigned char>::ParseJsonValue<false>()')).toBe(150);
    // (2) was named on the cfn= line and reused later as fn=(2) in object (2) "???".
    expect(cost.byFunction.get('???\u00000x0000000000001010')).toBe(70);
    expect(cost.byFunction.get('/usr/lib/x86_64-linux-gnu/libc.so.6\u0000__memcpy_avx_unaligned_erms')).toBe(20);
  });

  it('names JIT code by the perf map range that holds its address, else null', () => {
    const map = parsePerfMap(MAP);
    expect(jitName(map, 0x1000)).toMatch(/memberSpan/);
    expect(jitName(map, 0x103f)).toMatch(/memberSpan/);
    expect(jitName(map, 0x1040)).toBeNull();
    expect(jitName(map, 0xfff)).toBeNull();
    expect(jitName(map, 0x1809)).toMatch(/other/);
  });

  it('groups functions and sums JavaScript by name', () => {
    expect(groupOf('???', '0x1')).toBe('JavaScript (JIT)');
    expect(groupOf('/usr/bin/node', 'v8::internal::compiler::GraphReducer::ReduceTop()')).toBe('V8 compiler');
    expect(groupOf('/usr/bin/node', 'v8::internal::Scavenger::Process()')).toBe('V8 GC');
    expect(groupOf('/usr/bin/node', 'Builtins_LoadIC')).toBe('V8 builtins');
    expect(groupOf('/usr/bin/node', 'node::StreamBase::WriteBuffer()')).toBe('Node and libuv');
    expect(groupOf('/w/uws_linux_x64_115.node', '0x00000000000eb2e0')).toBe('uWS');
    expect(groupOf('/usr/lib/x86_64-linux-gnu/libc.so.6', 'malloc')).toBe('libc');
    const b = breakdown(parseCallgrind(DUMP), parsePerfMap(MAP));
    expect(b.groups.get('JSON parse/stringify')).toBe(150);
    expect(b.groups.get('JavaScript (JIT)')).toBe(75);
    expect([...b.javascript]).toEqual([
      ['JS:*memberSpan file:///x/dist/src/shared/protocol/arguments-span.js:66:20', 70],
      ['(unnamed JIT code)', 5],
    ]);
  });
});
