/**
 * Byte layout of the frames an acceptor and a shard exchange for
 * `tools/call` (carried by the rings of `ring.ts`; see docs/architecture.md
 * "A tools/call, hop by hop"). Encoders write straight into the space a
 * {@link FrameSink} reserved, decoders read straight out of the view a ring
 * reader hands over: no intermediate objects, and the only allocations are
 * the strings the receiving side keeps.
 *
 * Call frame, acceptor → shard (all integers little-endian):
 * ```
 *  0      1      2      3      4             8
 *  +------+------+------+------+-------------+--------------------------------+
 *  | kind | flags| level| nflds| callId u32  | byteLength[0..nflds-1], u32 each|
 *  |  =1  | b0=sse| +1  | = 12 |             |                                |
 *  |      | b1=2026-07-28      |             |                                |
 *  |      | b2=extended        |             |                                |
 *  +------+------+------+------+-------------+--------------------------------+
 *  | route | tool name | arguments JSON | x-request-id | session id | traceparent | progressToken JSON |
 *  | tracestate | baggage | clientCapabilities JSON | inputResponses JSON | requestState JSON |
 *  +-----------------------------------------------------------------------------------------------+
 * ```
 * Fields are in {@link CallField} order; route key, request id, session id,
 * traceparent, tracestate and baggage are ASCII (validated at the edge) and
 * travel as latin1, the rest as UTF-8. `level` is the request's log level
 * index + 1 (0 = none).
 * A decoder reads the `nflds` it knows and skips the rest, so fields can be
 * appended compatibly. `extended` is set when any of the five fields after
 * the first version's seven is non-empty: the legacy call leaves it clear and
 * its decoder reads none of them (the legacy path keeps its cost).
 *
 * Cancel frame, acceptor → shard: `kind = 2`, three zero bytes, `callId` —
 * it travels in the same ring as the call, so it can never overtake it.
 *
 * Result frame, shard → acceptor:
 * ```
 *  0      1        2          4             8               12
 *  +------+--------+----------+-------------+---------------+-----------------+
 *  | kind | outcome| status u16| callId u32 | payloadLen u32| payload (UTF-8) |
 *  +------+--------+----------+-------------+---------------+-----------------+
 * ```
 * `kind` is {@link ResultKind}: the payload of `Result` is the JSON-RPC
 * `result` member, of `Error` the `error` member — the acceptor wraps either
 * with the request's id, which only it holds. `Event` carries one complete
 * notification for an SSE answer; `StreamStart` (no payload) turns the answer
 * into an SSE stream before any event qualifies. Events precede their call's
 * final frame in the same ring, so they can never arrive after it.
 */
import assert from 'node:assert';
import type { CallRequest } from '../calls.js';
import type { RingWriter } from './ring-writer.js';

/** Where an encoder writes one frame: a {@link RingWriter} (tests use a plain buffer). */
export interface FrameSink {
  /**
   * Reserves `length` bytes for one frame: returns the offset in
   * {@link FrameSink.buf} to write them at, or -1 when the frame is
   * refused (a bounded backlog is full). Nothing is published until `commit`.
   */
  reserve(length: number): number;
  /** The buffer the last successful `reserve` points into. */
  readonly buf: Buffer;
  /** Publishes the frame reserved last. */
  commit(): void;
}

/** Frame kinds on the acceptor → shard direction. */
export const CallKind = { Call: 1, Cancel: 2 } as const;

/** Frame kinds on the shard → acceptor direction. */
export const ResultKind = { Result: 1, Error: 2, Event: 3, StreamStart: 4 } as const;
export type ResultKind = (typeof ResultKind)[keyof typeof ResultKind];

/** Field order of a call frame. */
const enum CallField {
  Route = 0,
  Tool = 1,
  Arguments = 2,
  RequestId = 3,
  SessionId = 4,
  Traceparent = 5,
  ProgressToken = 6,
  Tracestate = 7,
  Baggage = 8,
  ClientCapabilities = 9,
  InputResponses = 10,
  RequestState = 11,
}
const CALL_FIELDS = 12;
/** Fields of the first frame version: a decoder still reads a frame that has only these. */
const CALL_FIELDS_V1 = 7;
const CALL_HEAD = 8 + 4 * CALL_FIELDS;
const FLAG_SSE = 1;
const FLAG_MODERN = 2;
/** Set when any field after the first version's seven is non-empty; a decoder skips them all when it is clear. */
const FLAG_EXTENDED = 4;
const CANCEL_BYTES = 8;
/** Result frame header bytes. */
export const RESULT_HEAD = 12;

/** Appends a call frame; false when the sink refused it (nothing was written). */
export function writeCall(sink: FrameSink, callId: number, req: CallRequest): boolean {
  const routeLen = req.routeKey.length;
  const toolLen = Buffer.byteLength(req.toolName, 'utf8');
  const argsLen = Buffer.byteLength(req.argumentsJson, 'utf8');
  const ridLen = req.requestId.length;
  const sidLen = req.sessionId.length;
  const tpLen = req.traceparent.length;
  const ptLen = Buffer.byteLength(req.progressTokenJson, 'utf8');
  const tsLen = req.tracestate.length;
  const bgLen = req.baggage.length;
  // Empty on legacy calls: byteLength of '' is skipped.
  const capLen = req.clientCapabilitiesJson === '' ? 0 : Buffer.byteLength(req.clientCapabilitiesJson, 'utf8');
  const irLen = req.inputResponsesJson === '' ? 0 : Buffer.byteLength(req.inputResponsesJson, 'utf8');
  const rsLen = req.requestStateJson === '' ? 0 : Buffer.byteLength(req.requestStateJson, 'utf8');
  const at = sink.reserve(CALL_HEAD + routeLen + toolLen + argsLen + ridLen + sidLen + tpLen + ptLen + tsLen + bgLen + capLen + irLen + rsLen);
  if (at < 0) return false;
  const b = sink.buf;
  b[at] = CallKind.Call;
  b[at + 1] = (req.sse ? FLAG_SSE : 0) | (req.modern ? FLAG_MODERN : 0);
  b[at + 2] = req.logLevel + 1;
  b[at + 3] = CALL_FIELDS;
  b.writeUInt32LE(callId, at + 4);
  b.writeUInt32LE(routeLen, at + 8);
  b.writeUInt32LE(toolLen, at + 12);
  b.writeUInt32LE(argsLen, at + 16);
  b.writeUInt32LE(ridLen, at + 20);
  b.writeUInt32LE(sidLen, at + 24);
  b.writeUInt32LE(tpLen, at + 28);
  b.writeUInt32LE(ptLen, at + 32);
  let o = at + CALL_HEAD;
  o += b.write(req.routeKey, o, routeLen, 'latin1');
  o += b.write(req.toolName, o, toolLen, 'utf8');
  o += b.write(req.argumentsJson, o, argsLen, 'utf8');
  o += b.write(req.requestId, o, ridLen, 'latin1');
  o += b.write(req.sessionId, o, sidLen, 'latin1');
  o += b.write(req.traceparent, o, tpLen, 'latin1');
  o += b.write(req.progressTokenJson, o, ptLen, 'utf8');
  if ((tsLen | bgLen | capLen | irLen | rsLen) === 0) {
    // The common legacy call: zero lengths, byte by byte (cheaper than five u32 writes), and no FLAG_EXTENDED.
    for (let i = at + 36; i < at + CALL_HEAD; i++) b[i] = 0;
  } else {
    b[at + 1] = (b[at + 1] as number) | FLAG_EXTENDED;
    b.writeUInt32LE(tsLen, at + 36);
    b.writeUInt32LE(bgLen, at + 40);
    b.writeUInt32LE(capLen, at + 44);
    b.writeUInt32LE(irLen, at + 48);
    b.writeUInt32LE(rsLen, at + 52);
    if (tsLen > 0) o += b.write(req.tracestate, o, tsLen, 'latin1');
    if (bgLen > 0) o += b.write(req.baggage, o, bgLen, 'latin1');
    if (capLen > 0) o += b.write(req.clientCapabilitiesJson, o, capLen, 'utf8');
    if (irLen > 0) o += b.write(req.inputResponsesJson, o, irLen, 'utf8');
    if (rsLen > 0) o += b.write(req.requestStateJson, o, rsLen, 'utf8');
  }
  sink.commit();
  return true;
}

/** Appends a cancel frame for `callId`; false when the sink refused it. */
export function writeCancel(sink: FrameSink, callId: number): boolean {
  const at = sink.reserve(CANCEL_BYTES);
  if (at < 0) return false;
  const b = sink.buf;
  b.writeUInt32LE(CallKind.Cancel, at);
  b.writeUInt32LE(callId, at + 4);
  sink.commit();
  return true;
}

/** Kind of the call-direction frame at `offset`. */
export function callFrameKind(buf: Buffer, offset: number): number {
  return buf[offset] as number;
}

/** Call id of a call or cancel frame. */
export function callFrameId(buf: Buffer, offset: number): number {
  return buf.readUInt32LE(offset + 4);
}

/**
 * Decodes a call frame into `into` (reused by the caller: the only
 * allocations are the field strings, which outlive the ring view).
 */
export function readCall(buf: Buffer, offset: number, length: number, into: CallRequest): void {
  const fields = buf[offset + 3] as number;
  assert(fields >= CALL_FIELDS_V1 && length >= 8 + 4 * fields, 'call frame header is truncated');
  const flags = buf[offset + 1] as number;
  into.sse = (flags & FLAG_SSE) !== 0;
  into.modern = (flags & FLAG_MODERN) !== 0;
  into.logLevel = (buf[offset + 2] as number) - 1;
  const lengths = offset + 8;
  let o = lengths + 4 * fields;
  let n = buf.readUInt32LE(lengths + 4 * CallField.Route);
  into.routeKey = buf.toString('latin1', o, (o += n));
  n = buf.readUInt32LE(lengths + 4 * CallField.Tool);
  into.toolName = buf.toString('utf8', o, (o += n));
  n = buf.readUInt32LE(lengths + 4 * CallField.Arguments);
  into.argumentsJson = buf.toString('utf8', o, (o += n));
  n = buf.readUInt32LE(lengths + 4 * CallField.RequestId);
  into.requestId = buf.toString('latin1', o, (o += n));
  n = buf.readUInt32LE(lengths + 4 * CallField.SessionId);
  into.sessionId = buf.toString('latin1', o, (o += n));
  n = buf.readUInt32LE(lengths + 4 * CallField.Traceparent);
  into.traceparent = buf.toString('latin1', o, (o += n));
  n = buf.readUInt32LE(lengths + 4 * CallField.ProgressToken);
  into.progressTokenJson = buf.toString('utf8', o, (o += n));
  // Fields appended after the first version: absent in an older frame, '' when empty (no string is built).
  if (fields < CALL_FIELDS || (flags & FLAG_EXTENDED) === 0) {
    into.tracestate = into.baggage = into.clientCapabilitiesJson = into.inputResponsesJson = into.requestStateJson = '';
  } else {
    n = buf.readUInt32LE(lengths + 4 * CallField.Tracestate);
    into.tracestate = n === 0 ? '' : buf.toString('latin1', o, (o += n));
    n = buf.readUInt32LE(lengths + 4 * CallField.Baggage);
    into.baggage = n === 0 ? '' : buf.toString('latin1', o, (o += n));
    n = buf.readUInt32LE(lengths + 4 * CallField.ClientCapabilities);
    into.clientCapabilitiesJson = n === 0 ? '' : buf.toString('utf8', o, (o += n));
    n = buf.readUInt32LE(lengths + 4 * CallField.InputResponses);
    into.inputResponsesJson = n === 0 ? '' : buf.toString('utf8', o, (o += n));
    n = buf.readUInt32LE(lengths + 4 * CallField.RequestState);
    into.requestStateJson = n === 0 ? '' : buf.toString('utf8', o, (o += n));
  }
  assert(o <= offset + length, 'call frame fields overrun the frame');
}

/** Appends a result-direction frame; false when the sink refused it. */
export function writeResult(sink: FrameSink, kind: ResultKind, callId: number, outcome: number, status: number, payload: string): boolean {
  const payloadLen = payload.length === 0 ? 0 : Buffer.byteLength(payload, 'utf8');
  const at = sink.reserve(RESULT_HEAD + payloadLen);
  if (at < 0) return false;
  const b = sink.buf;
  b[at] = kind;
  b[at + 1] = outcome;
  b.writeUInt16LE(status, at + 2);
  b.writeUInt32LE(callId, at + 4);
  b.writeUInt32LE(payloadLen, at + 8);
  if (payloadLen > 0) b.write(payload, at + RESULT_HEAD, payloadLen, 'utf8');
  sink.commit();
  return true;
}

/** Kind of the result-direction frame at `offset`. */
export function resultFrameKind(buf: Buffer, offset: number): ResultKind {
  return buf[offset] as ResultKind;
}

/** Outcome byte of a result frame. */
export function resultFrameOutcome(buf: Buffer, offset: number): number {
  return buf[offset + 1] as number;
}

/** HTTP status of a result frame. */
export function resultFrameStatus(buf: Buffer, offset: number): number {
  return buf.readUInt16LE(offset + 2);
}

/** Call id of a result frame. */
export function resultFrameCallId(buf: Buffer, offset: number): number {
  return buf.readUInt32LE(offset + 4);
}

/** Payload length of a result frame; the payload starts at `offset + RESULT_HEAD`. */
export function resultFramePayloadLength(buf: Buffer, offset: number): number {
  return buf.readUInt32LE(offset + 8);
}

/**
 * A call id is an acceptor's slot index in its low {@link CALL_SLOT_BITS}
 * bits and the slot's reuse generation above them, so a late frame for a
 * slot that was released and reused is recognised and dropped.
 */
export const CALL_SLOT_BITS = 20;
export const CALL_SLOT_MASK = (1 << CALL_SLOT_BITS) - 1;
