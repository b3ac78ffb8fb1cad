import { describe, expect, it } from 'vitest';
import type { CallRequest } from '../../../../src/shared/calls.js';
import {
  CallKind,
  callFrameId,
  callFrameKind,
  readCall,
  RESULT_HEAD,
  ResultKind,
  resultFrameCallId,
  resultFrameKind,
  resultFrameOutcome,
  resultFramePayloadLength,
  resultFrameStatus,
  writeCall,
  writeCancel,
  writeResult,
  type FrameSink,
} from '../../../../src/shared/threads/call-frames.js';

/** Frames laid end to end in one buffer, as a ring or a batch holds them. */
class Sink implements FrameSink {
  buf = Buffer.alloc(1 << 16, 0xee);
  frames: Array<{ offset: number; length: number }> = [];
  refuse = false;
  private at = 0;
  private reserved = 0;
  reserve(length: number): number {
    if (this.refuse) return -1;
    this.reserved = length;
    return this.at;
  }
  commit(): void {
    this.frames.push({ offset: this.at, length: this.reserved });
    this.at += this.reserved;
  }
}

const request = (over: Partial<CallRequest> = {}): CallRequest => ({
  routeKey: 'core',
  toolName: 'employee_search',
  argumentsJson: '{"query":"김","n":[1,2]}',
  requestId: 'req-1',
  sessionId: 'sess-9',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  progressTokenJson: '"tok-✓"',
  logLevel: 3,
  sse: true,
  modern: false,
  tracestate: '',
  baggage: '',
  clientCapabilitiesJson: '',
  inputResponsesJson: '',
  requestStateJson: '',
  identity: '',
  ...over,
});

const blank = (): CallRequest => request({ routeKey: '', toolName: '', argumentsJson: '', requestId: '', sessionId: '', traceparent: '', progressTokenJson: '', logLevel: 7, sse: false });

describe('call frames', () => {
  it('round-trips every field of a call, UTF-8 included, between other frames', () => {
    const sink = new Sink();
    const cases = [
      request(),
      request({ sse: false, logLevel: -1, progressTokenJson: '', sessionId: '', traceparent: '' }),
      request({ argumentsJson: '{}', toolName: 'ид-✓' }),
      request({ identity: '{"sub":"김","claims":{"groups":["hr"]}}' }),
    ];
    writeCancel(sink, 99);
    cases.forEach((c, i) => {
      expect(writeCall(sink, 1000 + i, c)).toBe(true);
    });
    writeCancel(sink, 7);
    expect(sink.frames).toHaveLength(cases.length + 2);
    const [first, ...rest] = sink.frames;
    expect(callFrameKind(sink.buf, first?.offset ?? -1)).toBe(CallKind.Cancel);
    expect(callFrameId(sink.buf, first?.offset ?? -1)).toBe(99);
    cases.forEach((c, i) => {
      const f = rest[i] as { offset: number; length: number };
      expect(callFrameKind(sink.buf, f.offset)).toBe(CallKind.Call);
      expect(callFrameId(sink.buf, f.offset)).toBe(1000 + i);
      const into = blank();
      readCall(sink.buf, f.offset, f.length, into);
      expect(into).toEqual(c);
    });
    const last = rest.at(-1) as { offset: number };
    expect(callFrameKind(sink.buf, last.offset)).toBe(CallKind.Cancel);
    expect(callFrameId(sink.buf, last.offset)).toBe(7);
  });

  it('round-trips the 2026-07-28 fields, and a legacy frame clears what a reused request held', () => {
    const sink = new Sink();
    const modern = request({
      modern: true,
      tracestate: 'vendor=opaque',
      baggage: 'k=v',
      clientCapabilitiesJson: '{"elicitation":{}}',
      inputResponsesJson: '{"ask":{"action":"accept","content":{"name":"✓"}}}',
      requestStateJson: '"state-1"',
    });
    const onlyState = request({ modern: true, requestStateJson: '"s"' });
    const legacy = request();
    [modern, onlyState, legacy].forEach((c, i) => {
      writeCall(sink, i, c);
    });
    const into = blank();
    sink.frames.forEach((f, i) => {
      readCall(sink.buf, f.offset, f.length, into);
      expect({ ...into }).toEqual([modern, onlyState, legacy][i]);
    });
    // The legacy frame does not set the extended flag (its decoder reads none of the appended fields).
    expect((sink.buf[(sink.frames[2] as { offset: number }).offset + 1] as number) & 4).toBe(0);
    expect((sink.buf[(sink.frames[0] as { offset: number }).offset + 1] as number) & 4).toBe(4);
  });

  it('decodes the frames of earlier versions (seven fields; eight, with identity)', () => {
    const frameOf = (fields: string[]): Buffer => {
      const bytes = fields.map((f) => Buffer.from(f, 'utf8'));
      const head = Buffer.alloc(8 + 4 * fields.length);
      head[0] = CallKind.Call;
      head[1] = 1;
      head[2] = 0;
      head[3] = fields.length;
      head.writeUInt32LE(42, 4);
      bytes.forEach((b, i) => {
        head.writeUInt32LE(b.length, 8 + 4 * i);
      });
      return Buffer.concat([head, ...bytes]);
    };
    const v1 = ['core', 'req-7', '', '', 'echo', '"p"', '{}'];
    for (const fields of [v1, [...v1, '{"sub":"a"}']]) {
      const frame = frameOf(fields);
      const into = request({ modern: true, tracestate: 'stale', requestStateJson: '"stale"' });
      readCall(frame, 0, frame.length, into);
      expect(into).toMatchObject({
        routeKey: 'core',
        toolName: 'echo',
        argumentsJson: '{}',
        requestId: 'req-7',
        progressTokenJson: '"p"',
        sse: true,
        modern: false,
        logLevel: -1,
        tracestate: '',
        requestStateJson: '',
        identity: fields[7] ?? '',
      });
      expect(callFrameId(frame, 0)).toBe(42);
    }
  });

  it('writes nothing when the sink refuses the frame', () => {
    const sink = new Sink();
    sink.refuse = true;
    expect(writeCall(sink, 1, request())).toBe(false);
    expect(writeCancel(sink, 1)).toBe(false);
    expect(writeResult(sink, ResultKind.Result, 1, 0, 200, '{}')).toBe(false);
    expect(sink.frames).toHaveLength(0);
  });

  it('refuses to decode a call frame whose fields overrun it', () => {
    const sink = new Sink();
    writeCall(sink, 1, request());
    const f = sink.frames[0] as { offset: number; length: number };
    expect(() => readCall(sink.buf, f.offset, f.length - 5, blank())).toThrow(/overrun/);
    expect(() => readCall(sink.buf, f.offset, 10, blank())).toThrow(/truncated/);
    writeCall(sink, 2, request({ modern: true, requestStateJson: '"abcdef"' }));
    const g = sink.frames[1] as { offset: number; length: number };
    expect(() => readCall(sink.buf, g.offset, g.length - 3, blank())).toThrow(/overrun/);
  });
});

describe('result frames', () => {
  it('round-trips kind, outcome, status, call id and payload', () => {
    const sink = new Sink();
    const payloads = ['{"content":[{"type":"text","text":"héllo ✓"}]}', '', '{"code":-32602,"message":"Unknown tool: \\"x\\""}'];
    writeResult(sink, ResultKind.Result, 0xffffffff, 1, 200, payloads[0] as string);
    writeResult(sink, ResultKind.StreamStart, 5, 0, 0, payloads[1] as string);
    writeResult(sink, ResultKind.Error, 6, 2, 503, payloads[2] as string);
    const read = sink.frames.map((f) => ({
      kind: resultFrameKind(sink.buf, f.offset),
      outcome: resultFrameOutcome(sink.buf, f.offset),
      status: resultFrameStatus(sink.buf, f.offset),
      callId: resultFrameCallId(sink.buf, f.offset),
      payload: sink.buf.toString('utf8', f.offset + RESULT_HEAD, f.offset + RESULT_HEAD + resultFramePayloadLength(sink.buf, f.offset)),
      complete: f.length === RESULT_HEAD + resultFramePayloadLength(sink.buf, f.offset),
    }));
    expect(read).toEqual([
      { kind: ResultKind.Result, outcome: 1, status: 200, callId: 0xffffffff, payload: payloads[0], complete: true },
      { kind: ResultKind.StreamStart, outcome: 0, status: 0, callId: 5, payload: '', complete: true },
      { kind: ResultKind.Error, outcome: 2, status: 503, callId: 6, payload: payloads[2], complete: true },
    ]);
  });
});
