import { describe, expect, it } from 'vitest';
import { mapCallToolResult, mapJsonAnswer, statusError, toolError } from '../../../../src/workers/shard/tool-result.js';

const parsed = (r: { json: string }) => JSON.parse(r.json) as unknown;
const answer = (value: unknown) => mapJsonAnswer(value, JSON.stringify(value));

describe('toolError', () => {
  it('is isError with one text block', () => {
    const r = toolError('it broke "badly"');
    expect(r.isError).toBe(true);
    expect(parsed(r)).toEqual({ content: [{ type: 'text', text: 'it broke "badly"' }], isError: true });
  });
});

describe('mapJsonAnswer', () => {
  it('passes a valid CallToolResult through as the bytes received', () => {
    const raw = '{ "content": [ {"type":"text","text":"hi"} ],  "structuredContent": {"a": 1}, "_meta": {"x": true} }';
    const r = mapJsonAnswer(JSON.parse(raw), raw);
    expect(r).toEqual({ json: raw, isError: false, value: JSON.parse(raw) });
  });

  it('keeps a Tool Service isError: true', () => {
    const value = { content: [{ type: 'text', text: 'no such employee' }], isError: true };
    expect(answer(value)).toEqual({ json: JSON.stringify(value), isError: true, value });
  });

  it('passes an input_required result (MRTR) through as the bytes received, for call-result.ts to check', () => {
    const raw = '{"resultType":"input_required","requestState":"s1"}';
    expect(mapJsonAnswer(JSON.parse(raw), raw)).toEqual({ json: raw, isError: false, value: { resultType: 'input_required', requestState: 's1' } });
  });

  it('accepts structuredContent of any JSON type (SEP-2106); the value is kept for the era shaping', () => {
    const value = { content: [], structuredContent: [1, 2] };
    expect(answer(value)).toEqual({ json: JSON.stringify(value), isError: false, value });
  });

  it('accepts every MCP content block type', () => {
    const value = {
      content: [
        { type: 'text', text: 't', annotations: { audience: ['user'] } },
        { type: 'image', data: 'aGk=', mimeType: 'image/png' },
        { type: 'audio', data: 'aGk=', mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///a', name: 'a', description: 'extra fields are allowed' },
        { type: 'resource', resource: { uri: 'file:///b', text: 'b' } },
        { type: 'resource', resource: { uri: 'file:///c', blob: 'YQ==', mimeType: 'application/octet-stream' } },
      ],
    };
    expect(answer(value).isError).toBe(false);
  });

  it('wraps a plain object as text plus structuredContent', () => {
    const raw = '{"sum":42.5,"unit":"€"}';
    expect(parsed(mapJsonAnswer(JSON.parse(raw), raw))).toEqual({ content: [{ type: 'text', text: raw }], structuredContent: { sum: 42.5, unit: '€' } });
    expect(mapJsonAnswer(JSON.parse(raw), raw).isError).toBe(false);
  });

  it('wraps arrays, numbers, strings, booleans and null as text only (contract v1); the value rides along for 2026-07-28', () => {
    for (const raw of ['[1,2,3]', '42', '"hello"', 'true', 'null', '[]']) {
      const r = mapJsonAnswer(JSON.parse(raw), raw);
      expect(r.isError, raw).toBe(false);
      expect(parsed(r), raw).toEqual({ content: [{ type: 'text', text: raw }] });
      expect(r.wrapped, raw).toBe(true);
      expect(r.value, raw).toEqual({ content: [{ type: 'text', text: raw }], structuredContent: JSON.parse(raw) });
    }
  });

  it('refuses a content array with an invalid block, naming the block', () => {
    const r = answer({
      content: [
        { type: 'text', text: 'ok' },
        { type: 'video', url: 'x' },
      ],
    });
    expect(r.isError).toBe(true);
    expect(parsed(r)).toEqual({
      content: [{ type: 'text', text: 'Tool Service answer is malformed: content block 1 (type "video") is not a valid MCP content block' }],
      isError: true,
    });
    expect(parsed(answer({ content: [{ type: 'text' }] }))).toMatchObject({ isError: true });
    expect(parsed(answer({ content: [null] }))).toMatchObject({
      content: [{ text: 'Tool Service answer is malformed: content block 0 (type null) is not a valid MCP content block' }],
    });
  });

  it('refuses a CallToolResult whose isError or _meta has the wrong type', () => {
    for (const value of [
      { content: [], isError: 'yes' },
      { content: [], _meta: [] },
    ]) {
      expect(parsed(answer(value))).toEqual({
        content: [{ type: 'text', text: 'Tool Service answer is malformed: "isError" must be a boolean and "_meta" an object' }],
        isError: true,
      });
    }
  });

  // SPEC §7: only "a content array" makes a CallToolResult; any other shape is wrapped.
  it('wraps an object whose content member is not an array as plain JSON', () => {
    const raw = '{"content":"Quarterly report text","author":"kim"}';
    const r = mapJsonAnswer(JSON.parse(raw), raw);
    expect(r.isError).toBe(false);
    expect(parsed(r)).toEqual({ content: [{ type: 'text', text: raw }], structuredContent: { content: 'Quarterly report text', author: 'kim' } });
  });
});

describe('mapCallToolResult', () => {
  it('serialises a valid value when no raw text is given', () => {
    const value = { content: [{ type: 'text', text: 'done' }] };
    expect(mapCallToolResult(value)).toEqual({ json: JSON.stringify(value), isError: false, value });
  });
});

describe('statusError', () => {
  it('reads a 422 refusal of MRTR input (contract v1.1) without changing the v1 message', () => {
    const body = '{"code":"invalid_request_state","message":"requestState failed its integrity check"}';
    const r = statusError(422, body);
    expect(r.inputRejected).toBe('requestState failed its integrity check');
    expect(parsed(r)).toEqual({ content: [{ type: 'text', text: `Tool Service failed with HTTP 422: ${body}` }], isError: true });
    expect(statusError(422, '{"code":"other"}').inputRejected).toBeUndefined();
    expect(statusError(400, body).inputRejected).toBeUndefined();
    expect(statusError(422, 'not json').inputRejected).toBeUndefined();
  });

  it('names the status and a trimmed snippet of the body', () => {
    expect(parsed(statusError(500, '  {"error":"db down"}\n'))).toEqual({
      content: [{ type: 'text', text: 'Tool Service failed with HTTP 500: {"error":"db down"}' }],
      isError: true,
    });
    expect(parsed(statusError(502, ''))).toEqual({ content: [{ type: 'text', text: 'Tool Service failed with HTTP 502' }], isError: true });
    const long = (parsed(statusError(500, 'x'.repeat(1000))) as { content: Array<{ text: string }> }).content[0]?.text ?? '';
    expect(long).toBe(`Tool Service failed with HTTP 500: ${'x'.repeat(200)}`);
  });

  it('says "permission denied" for 401 and 403', () => {
    for (const status of [401, 403]) {
      const text = (parsed(statusError(status, 'nope')) as { content: Array<{ text: string }> }).content[0]?.text;
      expect(text).toBe(`Tool Service refused the call: permission denied (HTTP ${status}): nope`);
    }
  });
});
