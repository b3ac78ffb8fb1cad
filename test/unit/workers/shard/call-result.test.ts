import { describe, expect, it } from 'vitest';
import { CallOutcome } from '../../../../src/shared/calls.js';
import { SERVER_INFO } from '../../../../src/shared/protocol/mcp.js';
import { ResultKind } from '../../../../src/shared/threads/call-frames.js';
import { finalAnswer, gatewayResult, type CallShape } from '../../../../src/workers/shard/call-result.js';
import { mapJsonAnswer, statusError, toolError } from '../../../../src/workers/shard/tool-result.js';
import { compileArgumentValidator } from '../../../../src/workers/shard/validator-cache.js';

const SERVER_META = { 'io.modelcontextprotocol/serverInfo': SERVER_INFO };
const legacy: CallShape = { modern: false, clientCapabilitiesJson: '', inputResponsesJson: '', requestStateJson: '' };
const modern = (caps: object = {}, over: Partial<CallShape> = {}): CallShape => ({ modern: true, clientCapabilitiesJson: JSON.stringify(caps), inputResponsesJson: '', requestStateJson: '', ...over });
const mapped = (value: unknown) => {
  const text = JSON.stringify(value);
  return mapJsonAnswer(JSON.parse(text), text);
};
const payload = (a: { payload: string }) => JSON.parse(a.payload) as Record<string, unknown>;

describe('finalAnswer: complete results per era', () => {
  it('legacy: the Tool Service bytes as they came; modern: resultType and serverInfo spliced in front', () => {
    const raw = '{"content":[{"type":"text","text":"hi"}]}';
    const m = mapJsonAnswer(JSON.parse(raw), raw);
    expect(finalAnswer(m, legacy, null)).toEqual({ kind: ResultKind.Result, outcome: CallOutcome.Ok, status: 200, payload: raw });
    const a = finalAnswer(m, modern(), null);
    expect(a.payload.startsWith('{"resultType":"complete","_meta":')).toBe(true);
    expect(payload(a)).toEqual({ resultType: 'complete', _meta: SERVER_META, content: [{ type: 'text', text: 'hi' }] });
  });

  it('modern: a Tool Service _meta is kept and serverInfo added; an explicit resultType "complete" is not doubled', () => {
    const a = finalAnswer(mapped({ content: [], _meta: { trace: 'x' }, resultType: 'complete' }), modern(), null);
    expect(payload(a)).toEqual({ resultType: 'complete', _meta: { trace: 'x', ...SERVER_META }, content: [] });
    expect(a.payload.match(/resultType/g)).toHaveLength(1);
  });

  it('an unknown resultType is a malformed answer (isError), in the era of the request', () => {
    const a = finalAnswer(mapped({ content: [], resultType: 'later' }), modern(), null);
    expect(a.outcome).toBe(CallOutcome.ToolError);
    expect(payload(a)).toMatchObject({ resultType: 'complete', isError: true, content: [{ text: expect.stringMatching(/unknown resultType "later"/) }] });
  });

  it('gateway-made results (failures) carry the modern head only on 2026-07-28', () => {
    expect(payload(gatewayResult(toolError('boom'), true))).toMatchObject({ resultType: 'complete', _meta: SERVER_META, isError: true });
    expect(payload(gatewayResult(toolError('boom'), false))).toEqual({ content: [{ type: 'text', text: 'boom' }], isError: true });
  });
});

describe('finalAnswer: structuredContent and outputSchema', () => {
  const objectSchema = compileArgumentValidator({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] });
  const arraySchema = compileArgumentValidator({ type: 'array', items: { type: 'string' } });

  it('conforming structuredContent passes; a violation or a missing one becomes isError naming it', () => {
    expect(finalAnswer(mapped({ content: [], structuredContent: { n: 1 } }), legacy, objectSchema).outcome).toBe(CallOutcome.Ok);
    const bad = finalAnswer(mapped({ content: [], structuredContent: { n: 'one' } }), legacy, objectSchema);
    expect(bad.outcome).toBe(CallOutcome.ToolError);
    expect(payload(bad)).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/breaks the tool's outputSchema:\n- \/n: /) }] });
    expect(payload(finalAnswer(mapped({ content: [] }), modern(), objectSchema))).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/"structuredContent" is missing/) }] });
    // An isError result is not checked against the schema.
    expect(finalAnswer(mapped({ content: [{ type: 'text', text: 'no' }], isError: true }), legacy, objectSchema).outcome).toBe(CallOutcome.ToolError);
  });

  it('a non-object structuredContent reaches a 2026-07-28 client as is, and is adapted (text block) for a legacy one', () => {
    const value = { content: [], structuredContent: ['a', 'b'] };
    expect(payload(finalAnswer(mapped(value), modern(), arraySchema))).toEqual({ resultType: 'complete', _meta: SERVER_META, content: [], structuredContent: ['a', 'b'] });
    expect(payload(finalAnswer(mapped(value), legacy, arraySchema))).toEqual({ content: [{ type: 'text', text: '["a","b"]' }] });
    // Already carried by a text block: not added twice.
    const carried = { content: [{ type: 'text', text: '["a","b"]' }], structuredContent: ['a', 'b'] };
    expect(payload(finalAnswer(mapped(carried), legacy, arraySchema))).toEqual({ content: [{ type: 'text', text: '["a","b"]' }] });
  });

  it('a plain JSON answer (wrapped) keeps any value as structuredContent on 2026-07-28 only', () => {
    const m = mapJsonAnswer([1, 2], '[1,2]');
    expect(payload(finalAnswer(m, legacy, null))).toEqual({ content: [{ type: 'text', text: '[1,2]' }] });
    expect(payload(finalAnswer(m, modern(), null))).toEqual({ resultType: 'complete', _meta: SERVER_META, content: [{ type: 'text', text: '[1,2]' }], structuredContent: [1, 2] });
  });
});

describe('finalAnswer: MRTR input_required', () => {
  const ask = {
    resultType: 'input_required',
    inputRequests: { who: { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } } },
    requestState: 's1',
  };

  it('passes back unchanged to a 2026-07-28 client that declared the capability', () => {
    const raw = JSON.stringify(ask);
    const a = finalAnswer(mapJsonAnswer(JSON.parse(raw), raw), modern({ elicitation: {} }), null);
    expect(a).toEqual({ kind: ResultKind.Result, outcome: CallOutcome.Ok, status: 200, payload: raw });
  });

  it('-32021 (HTTP 400) naming the missing capabilities when the client did not declare them', () => {
    const needs = {
      resultType: 'input_required',
      inputRequests: {
        a: { method: 'elicitation/create', params: { mode: 'url', url: 'https://x', message: 'm', elicitationId: 'e' } },
        b: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 5, tools: [] } },
        c: { method: 'roots/list' },
      },
    };
    const a = finalAnswer(mapped(needs), modern({ elicitation: {} }), null);
    expect(a).toMatchObject({ kind: ResultKind.Error, outcome: CallOutcome.RpcError, status: 400 });
    expect(payload(a)).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { url: {} }, sampling: { tools: {} }, roots: {} } } });
    expect(finalAnswer(mapped(needs), modern({ elicitation: { url: {} }, sampling: { tools: {} }, roots: {} }), null).kind).toBe(ResultKind.Result);
  });

  it('a malformed input_required is a tool error; a legacy client is told it cannot receive one', () => {
    expect(payload(finalAnswer(mapped({ resultType: 'input_required' }), modern(), null))).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/needs inputRequests or requestState/) }],
    });
    expect(payload(finalAnswer(mapped({ resultType: 'input_required', inputRequests: { x: { method: 'tools/call' } } }), modern(), null))).toMatchObject({ isError: true });
    expect(payload(finalAnswer(mapped(ask), legacy, null))).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/2025-11-25 cannot carry/) }] });
  });

  it('a 422 refusing the request state is -32602 when the call carried MRTR input, else an ordinary tool error', () => {
    const refused = statusError(422, '{"code":"invalid_request_state","message":"state expired"}');
    const withState = modern({}, { requestStateJson: '"s1"' });
    expect(payload(finalAnswer(refused, withState, null))).toMatchObject({ code: -32602, message: expect.stringMatching(/state expired/) });
    expect(finalAnswer(refused, modern(), null)).toMatchObject({ kind: ResultKind.Result, outcome: CallOutcome.ToolError });
  });
});
