import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CallOutcome } from '../../../../src/shared/calls.js';
import { Compile } from '../../../../src/shared/vendor/typebox.js';
import { finalAnswer, type CallShape } from '../../../../src/workers/shard/call-result.js';
import { scanTextResult, TextResultScan } from '../../../../src/workers/shard/text-result-scan.js';
import { CallToolResultSchema, mapJsonAnswer, type MappedResult } from '../../../../src/workers/shard/tool-result.js';
import { compileArgumentValidator } from '../../../../src/workers/shard/validator-cache.js';

const callToolResult = Compile(CallToolResultSchema);

/**
 * The scan's one promise: whatever it accepts, `JSON.parse` accepts and the result is a valid
 * CallToolResult of text blocks whose `isError` is what the scan says.
 */
function agreesWithParse(text: string): void {
  const scan = scanTextResult(text);
  if (scan === TextResultScan.NotText) return;
  const value = JSON.parse(text) as Record<string, unknown>;
  expect(callToolResult.Check(value)).toBe(true);
  expect(Object.keys(value).every((k) => k === 'content' || k === 'isError')).toBe(true);
  for (const block of value['content'] as Array<Record<string, unknown>>) expect(Object.keys(block).sort()).toEqual(['text', 'type']);
  expect(scan === TextResultScan.IsError).toBe(value['isError'] === true);
}

describe('scanTextResult: the text-block results it recognises', () => {
  it.each([
    ['{"content":[{"type":"text","text":"ok"}]}', TextResultScan.Ok],
    ['{"content":[]}', TextResultScan.Ok],
    [' \r\n\t{ "content" : [ { "text" : "a" , "type" : "text" } , {"type":"text","text":""} ] } \n', TextResultScan.Ok],
    ['{"isError":true,"content":[{"type":"text","text":"boom"}]}', TextResultScan.IsError],
    ['{"content":[{"type":"text","text":"no"}],"isError":false}', TextResultScan.Ok],
    ['{"content":[{"type":"text","text":"esc \\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD800 é 😀"}]}', TextResultScan.Ok],
  ])('%s', (text, verdict) => {
    expect(scanTextResult(text)).toBe(verdict);
    agreesWithParse(text);
  });
});

describe('scanTextResult: everything else is left to JSON.parse', () => {
  it.each([
    ['another member', '{"content":[],"structuredContent":{"a":1}}'],
    ['_meta', '{"content":[],"_meta":{}}'],
    ['resultType', '{"resultType":"input_required","requestState":"x"}'],
    ['content twice (JSON.parse keeps the last)', '{"content":[],"content":5}'],
    ['content twice, both valid (a client might read either)', '{"content":[{"type":"text","text":"a"}],"content":[]}'],
    ['isError twice', '{"content":[],"isError":false,"isError":true}'],
    ['no content', '{"isError":true}'],
    ['an empty object', '{}'],
    ['a key written with escapes', '{"\\u0063ontent":[]}'],
    ['a block member more', '{"content":[{"type":"text","text":"a","annotations":{}}]}'],
    ['another block type', '{"content":[{"type":"image","data":"","mimeType":"image/png"}]}'],
    ['type not exactly "text"', '{"content":[{"type":"textual","text":"a"}]}'],
    ['a raw control character in a string', '{"content":[{"type":"text","text":"a\nb"}]}'],
    ['an escape JSON does not have', '{"content":[{"type":"text","text":"\\x41"}]}'],
    ['a short \\u escape', '{"content":[{"type":"text","text":"\\u00g1"}]}'],
    ['an unterminated string', '{"content":[{"type":"text","text":"a}]}'],
    ['isError not a boolean', '{"content":[],"isError":1}'],
    ['a trailing comma in the object', '{"content":[],}'],
    ['a trailing comma in the array', '{"content":[{"type":"text","text":"a"},]}'],
    ['bytes after the object', '{"content":[]} x'],
    ['a second object', '{"content":[]}{}'],
    ['a byte-order mark', '\uFEFF{"content":[]}'],
    ['truncated', '{"content":[{"type":"text","text":"a"}]'],
    ['an array', '[]'],
    ['nothing', ''],
  ])('%s', (_why, text) => {
    expect(scanTextResult(text)).toBe(TextResultScan.NotText);
  });

  it('what it accepts, JSON.parse and the CallToolResult schema accept, with the same isError (generated and mutated answers)', () => {
    const ws = fc.constantFrom('', ' ', '\n', '\t', ' \r\n ');
    const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('\\"', '\\u0041', '\\uD800', '\\n'));
    const block = fc.tuple(ws, text, fc.boolean()).map(([w, t, typeFirst]) => {
      const s = JSON.stringify(t);
      return typeFirst ? `{${w}"type"${w}:${w}"text"${w},${w}"text"${w}:${w}${s}${w}}` : `{${w}"text":${s},"type":"text"${w}}`;
    });
    const answer = fc.tuple(ws, fc.array(block, { maxLength: 3 }), fc.constantFrom(undefined, true, false), fc.boolean()).map(([w, blocks, isError, errorFirst]) => {
      const content = `"content"${w}:${w}[${w}${blocks.join(`${w},${w}`)}${w}]`;
      if (isError === undefined) return `${w}{${w}${content}${w}}${w}`;
      const flag = `"isError"${w}:${w}${String(isError)}`;
      return `{${errorFirst ? `${flag},${content}` : `${content},${flag}`}}`;
    });
    // A valid answer is recognised.
    fc.assert(
      fc.property(answer, (a) => {
        expect(scanTextResult(a)).not.toBe(TextResultScan.NotText);
        agreesWithParse(a);
      }),
      { numRuns: 500 },
    );
    // A mutated one is either refused or still valid.
    const mutation = fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.constantFrom('"', '\\', ',', '}', ']', '{', '[', ':', 'u', '0', ' ', '\u0001', 'x', 'true', '"type"'));
    fc.assert(
      fc.property(answer, fc.array(mutation, { minLength: 1, maxLength: 3 }), (a, edits) => {
        let s = a;
        for (const [at, cut, insert] of edits) {
          const i = at % (s.length + 1);
          s = s.slice(0, i) + insert + s.slice(i + cut);
        }
        let parsed = true;
        try {
          JSON.parse(s);
        } catch {
          parsed = false;
        }
        if (!parsed) expect(scanTextResult(s)).toBe(TextResultScan.NotText);
        agreesWithParse(s);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('scanTextResult on hostile sizes', () => {
  it("finishes on long failing shapes, and leaves a text past the engine's backtrack stack to JSON.parse", () => {
    const block = '{"type":"text","text":"a"}';
    const blocks = Array.from({ length: 40_000 }, () => block).join(' , ');
    // Each would take hours on a pattern that backtracks quadratically or worse; linear, they take milliseconds.
    expect(scanTextResult(`{${' '.repeat(1_000_000)}x`)).toBe(TextResultScan.NotText);
    expect(scanTextResult(`{"content":[{"type":"text","text":"${'a'.repeat(1_000_000)}`)).toBe(TextResultScan.NotText);
    expect(scanTextResult(`{"content":[${blocks} , x]}`)).toBe(TextResultScan.NotText);
    expect(scanTextResult(`{"content":[${blocks}]}`)).toBe(TextResultScan.Ok);
    const huge = `{"content":[{"type":"text","text":"${'a'.repeat(40_000_000)}"}]}`;
    expect(scanTextResult(huge)).toBe(TextResultScan.NotText);
    expect(callToolResult.Check(JSON.parse(huge))).toBe(true);
  });
});

describe('finalAnswer of an unparsed text-block result', () => {
  const legacy: CallShape = { modern: false, clientCapabilitiesJson: '', inputResponsesJson: '', requestStateJson: '' };
  const modern: CallShape = { ...legacy, modern: true };
  const raw = '{"content":[{"type":"text","text":"hi"}]}';
  const unparsed: MappedResult = { json: raw, isError: false, unparsed: true };
  const parsed = mapJsonAnswer(JSON.parse(raw), raw);

  it('is the answer the parsed result gets, in both eras', () => {
    expect(finalAnswer(unparsed, legacy, null)).toEqual(finalAnswer(parsed, legacy, null));
    expect(finalAnswer(unparsed, modern, null)).toEqual(finalAnswer(parsed, modern, null));
    const failed: MappedResult = { json: '{"content":[],"isError":true}', isError: true, unparsed: true };
    expect(finalAnswer(failed, legacy, null).outcome).toBe(CallOutcome.ToolError);
  });

  it('breaks a tool outputSchema as the parsed one does (no structuredContent), unless it is an error', () => {
    const schema = compileArgumentValidator({ type: 'object' });
    const a = finalAnswer(unparsed, legacy, schema);
    expect(a).toEqual(finalAnswer(parsed, legacy, schema));
    expect(a.outcome).toBe(CallOutcome.ToolError);
    expect(a.payload).toContain('\\"structuredContent\\" is missing');
    const failed: MappedResult = { json: '{"content":[],"isError":true}', isError: true, unparsed: true };
    expect(finalAnswer(failed, modern, schema).outcome).toBe(CallOutcome.ToolError);
    expect(finalAnswer(failed, modern, schema).payload).not.toContain('outputSchema');
  });
});
