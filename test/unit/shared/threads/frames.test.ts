import { describe, expect, it } from 'vitest';
import { CALL_OUTCOME_LABEL, CallOutcome, FrameBatch, forEachResult, readCalls, type CallContext } from '../../../../src/shared/threads/frames.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const ctx = (requestId: string, sessionId = '', traceparent = '', sse = false): CallContext => ({ requestId, sessionId, traceparent, sse });

function results(batch: { buffer: ArrayBuffer; length: number }): Array<[number, number, number, string]> {
  const out: Array<[number, number, number, string]> = [];
  forEachResult(batch.buffer, batch.length, (callId, status, outcome, body) => out.push([callId, status, outcome, dec.decode(body)]));
  return out;
}

describe('FrameBatch call frames', () => {
  it('round-trips route, context and body', () => {
    const batch = new FrameBatch();
    const body = enc.encode('{"jsonrpc":"2.0","id":1,"method":"tools/call"}');
    batch.pushCall(7, 'core', ctx('req-1', 'sess-9', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), body);
    batch.pushCall(8, 'process', ctx('req-2'), new Uint8Array(0));
    expect(batch.count).toBe(2);
    const taken = batch.take();
    expect(taken.count).toBe(2);
    const frames = readCalls(taken.buffer, taken.length);
    expect(frames.map((f) => ({ ...f, body: dec.decode(f.body) }))).toEqual([
      { callId: 7, routeKey: 'core', ctx: ctx('req-1', 'sess-9', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'), body: '{"jsonrpc":"2.0","id":1,"method":"tools/call"}' },
      { callId: 8, routeKey: 'process', ctx: ctx('req-2'), body: '' },
    ]);
  });

  it('copies the body: later changes to the caller buffer do not reach the frame', () => {
    const batch = new FrameBatch();
    const body = enc.encode('abc');
    batch.pushCall(1, 'r', ctx('x'), body);
    body[0] = 0x7a;
    const taken = batch.take();
    expect(dec.decode(readCalls(taken.buffer, taken.length)[0]?.body)).toBe('abc');
  });

  it('grows past its initial size without losing earlier frames', () => {
    const batch = new FrameBatch(64);
    const bodies = [enc.encode('a'.repeat(10)), enc.encode('b'.repeat(500)), enc.encode('c'.repeat(5000))];
    bodies.forEach((b, i) => batch.pushCall(i, `route-${i}`, ctx(`id-${i}`), b));
    const taken = batch.take();
    expect(taken.buffer.byteLength).toBeGreaterThanOrEqual(taken.length);
    expect(taken.length).toBe(bodies.reduce((n, b, i) => n + 16 + `route-${i}`.length + `id-${i}`.length + 3 + b.length, 0)); // 3 U+001F separators between the 4 context fields
    const frames = readCalls(taken.buffer, taken.length);
    expect(frames.map((f) => [f.callId, f.routeKey, f.ctx.requestId, dec.decode(f.body)])).toEqual([
      [0, 'route-0', 'id-0', 'a'.repeat(10)],
      [1, 'route-1', 'id-1', 'b'.repeat(500)],
      [2, 'route-2', 'id-2', 'c'.repeat(5000)],
    ]);
  });

  it('carries unicode context and bodies byte-exact', () => {
    const batch = new FrameBatch(32);
    const text = '{"q":"검색 ✓ 😀 \\u0000 ü"}';
    batch.pushCall(0xffffffff, 'core', ctx('r', 'セッション', ''), enc.encode(text));
    const taken = batch.take();
    const [frame] = readCalls(taken.buffer, taken.length);
    expect(frame?.callId).toBe(0xffffffff);
    expect(frame?.ctx).toEqual(ctx('r', 'セッション', ''));
    expect(dec.decode(frame?.body)).toBe(text);
  });

  it('carries many frames in order', () => {
    const batch = new FrameBatch(128);
    for (let i = 0; i < 2000; i++) batch.pushCall(i, `r${i % 7}`, ctx(`q${i}`), enc.encode(`{"i":${i}}`));
    const taken = batch.take();
    const frames = readCalls(taken.buffer, taken.length);
    expect(frames).toHaveLength(2000);
    frames.forEach((f, i) => {
      expect(f.callId).toBe(i);
      expect(f.routeKey).toBe(`r${i % 7}`);
      expect(f.ctx.requestId).toBe(`q${i}`);
      expect(dec.decode(f.body)).toBe(`{"i":${i}}`);
    });
  });
});

describe('FrameBatch result frames', () => {
  it('round-trips id, status, outcome and body', () => {
    const batch = new FrameBatch();
    batch.pushResult(1, 200, CallOutcome.Ok, '{"jsonrpc":"2.0","id":1,"result":{}}');
    batch.pushResult(2, 200, CallOutcome.ToolError, '');
    batch.pushResult(3, 503, CallOutcome.Rejected, '{"error":1}');
    batch.pushResult(4, 400, CallOutcome.RpcError, 'x');
    expect(results(batch.take())).toEqual([
      [1, 200, 0, '{"jsonrpc":"2.0","id":1,"result":{}}'],
      [2, 200, 1, ''],
      [3, 503, 3, '{"error":1}'],
      [4, 400, 2, 'x'],
    ]);
    expect(CALL_OUTCOME_LABEL[CallOutcome.ToolError]).toBe('tool_error');
  });

  it('encodes unicode bodies (multi-byte and surrogate pairs) and grows for them', () => {
    const batch = new FrameBatch(16);
    const bodies = ['한국어 텍스트', '😀'.repeat(1000), 'plain', 'ü\u2028✓'];
    bodies.forEach((b, i) => batch.pushResult(i, 200, CallOutcome.Ok, b));
    const taken = batch.take();
    expect(taken.length).toBe(bodies.reduce((n, b) => n + 16 + enc.encode(b).length, 0));
    expect(results(taken).map((r) => r[3])).toEqual(bodies);
  });

  it('carries many results in order', () => {
    const batch = new FrameBatch(64);
    for (let i = 0; i < 3000; i++) batch.pushResult(i, 200, i % 2 === 0 ? CallOutcome.Ok : CallOutcome.ToolError, `r${i}`);
    const all = results(batch.take());
    expect(all).toHaveLength(3000);
    expect(all[2999]).toEqual([2999, 200, 1, 'r2999']);
    expect(all.every(([id, , outcome, body]) => body === `r${id}` && outcome === id % 2)).toBe(true);
  });
});

describe('FrameBatch.take', () => {
  it('hands over the filled buffer and starts empty with a fresh initial-size buffer', () => {
    const batch = new FrameBatch(64);
    batch.pushResult(1, 200, CallOutcome.Ok, 'y'.repeat(1000));
    const first = batch.take();
    expect(first.count).toBe(1);
    expect(batch.count).toBe(0);
    const empty = batch.take();
    expect(empty).toMatchObject({ length: 0, count: 0 });
    expect(empty.buffer.byteLength).toBe(64);
    expect(empty.buffer).not.toBe(first.buffer);
    expect(results(empty)).toEqual([]);
    batch.pushResult(2, 200, CallOutcome.Ok, 'z');
    const second = batch.take();
    expect(results(second)).toEqual([[2, 200, 0, 'z']]);
    // The first buffer was not reused or overwritten.
    expect(results(first)).toEqual([[1, 200, 0, 'y'.repeat(1000)]]);
  });
});
