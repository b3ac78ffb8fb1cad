/**
 * `tools/list` answers written into the room after an acceptor's template
 * copy (src/main/list-templates.ts), as the answer writer uses them: every
 * answer must be exactly template + its own tail, whatever the answer before
 * it wrote there, and nothing outside the room may change.
 */
import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { appendTail, templateWithRoom } from '../../../src/main/list-templates.js';

const TEMPLATE = '{"jsonrpc":"2.0","result":{"tools":[{"name":"echo"}]},"id":';
const text = (bytes: Uint8Array | null): string | null => (bytes === null ? null : Buffer.from(bytes).toString('utf8'));

describe('list templates with tail room', () => {
  it('is a copy of the bytes, not a view of them', () => {
    const source = Buffer.from(TEMPLATE);
    const template = templateWithRoom(source);
    source[0] = 0x5b;
    expect(text(template)).toBe(TEMPLATE);
  });

  it('appends each answer its own tail, a short one after a long one included', () => {
    const template = templateWithRoom(Buffer.from(TEMPLATE));
    const tails = ['"a-rather-long-request-id-0123456789"}', '7}', '"é→😀"}', `${Number.MAX_SAFE_INTEGER}}`];
    for (const tail of tails) expect(text(appendTail(template, tail))).toBe(TEMPLATE + tail);
    // The template itself never changes: answers only write after it.
    expect(text(template)).toBe(TEMPLATE);
  });

  it('two templates keep their rooms apart', () => {
    const a = templateWithRoom(Buffer.from('{"a":'));
    const b = templateWithRoom(Buffer.from('{"b":'));
    const first = appendTail(a, '1}');
    expect(text(appendTail(b, '22}'))).toBe('{"b":22}');
    expect(text(first)).toBe('{"a":1}');
  });

  it('a tail that fills the room exactly fits; one byte more does not', () => {
    const template = templateWithRoom(Buffer.from(TEMPLATE));
    const fits = `"${'x'.repeat(254)}}`; // 256 bytes
    expect(text(appendTail(template, fits))).toBe(TEMPLATE + fits);
    expect(appendTail(template, `"${'x'.repeat(255)}}`)).toBeNull();
    // Measured in UTF-8 bytes, not characters: 86 characters of 3 bytes are 258.
    expect(appendTail(template, '€'.repeat(86))).toBeNull();
    expect(text(appendTail(template, '€'.repeat(85)))).toBe(TEMPLATE + '€'.repeat(85));
  });

  it('bytes that did not come from templateWithRoom have no room (the writer copies them)', () => {
    expect(appendTail(Buffer.from(TEMPLATE), '1}')).toBeNull();
    expect(appendTail(templateWithRoom(Buffer.from(TEMPLATE)).subarray(0, 10), '1}')).toBeNull();
  });
});
