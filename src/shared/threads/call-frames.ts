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
 *  |  =1  | b0=sse| +1  | = 13 |             |                                |
 *  |      | b1=2026-07-28      |             |                                |
 *  |      | b2=extended        |             |                                |
 *  +------+------+------+------+-------------+--------------------------------+
 *  | route | x-request-id | session id | traceparent | tool name | progressToken JSON | arguments JSON | identity JSON |
 *  | tracestate | baggage | clientCapabilities JSON | inputResponses JSON | requestState JSON |
 *  +--------------------------------------------------------------------------------------------------------------+
 * ```
 * Fields are in {@link CallField} order; route key, request id, session id and traceparent are ASCII
 * (validated at the edge) and travel as one latin1 block, the rest as UTF-8; the arguments are the client's own bytes when
 * the acceptor could splice them (`arguments-span.ts`). `level` is the request's log level index + 1 (0 = none).
 * A decoder reads the `nflds` it knows and skips the rest, so fields can be
 * appended compatibly. The five fields after identity (ADR-0014: trace
 * context from `_meta`, MRTR pass-through) are present in the header of
 * every frame, but `extended` is set only when one of them is non-empty: the
 * common legacy call leaves it clear and its decoder reads none of them.
 * tracestate and baggage are ASCII (latin1), the rest UTF-8.
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
import { Buffer } from 'node:buffer';
import assert from 'node:assert';
import type { CallRequest } from '../calls.js';
import { readLatin1, readUtf8, writeLatin1, writeUtf8 } from './buffer-text.js';
import { getU16, getU32, putU16, putU32 } from './frame-ints.js';
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

/**
 * Field order of a call frame: the ASCII fields first and contiguous (one
 * latin1 write, one latin1 read), then the UTF-8 ones.
 */
const enum CallField {
  Route = 0,
  RequestId = 1,
  SessionId = 2,
  Traceparent = 3,
  Tool = 4,
  ProgressToken = 5,
  Arguments = 6,
  /** Caller identity for Tool Services that opt in (`CallRequest.identity`); appended, so 7-field frames still decode. */
  Identity = 7,
  /** W3C tracestate / baggage (SEP-414), then the MRTR members; appended by ADR-0014. */
  Tracestate = 8,
  Baggage = 9,
  ClientCapabilities = 10,
  InputResponses = 11,
  RequestState = 12,
}
const CALL_FIELDS = 13;
/** Frames written before the identity field existed carry 7 fields. */
const CALL_FIELDS_V1 = 7;
const CALL_HEAD = 8 + 4 * CALL_FIELDS;
const FLAG_SSE = 1;
const FLAG_MODERN = 2;
/** Set when a field after identity is non-empty; a decoder skips them all when it is clear. */
const FLAG_EXTENDED = 4;
const CANCEL_BYTES = 8;
/** Result frame header bytes. */
export const RESULT_HEAD = 12;

/**
 * Appends a call frame; false when the sink refused it (nothing was
 * written). `argumentsBytes`, when given, are the arguments' JSON bytes as
 * the client sent them (copied as they are); else `req.argumentsJson` is
 * encoded.
 */
export function writeCall(sink: FrameSink, callId: number, req: CallRequest, argumentsBytes: Uint8Array | null = null): boolean {
  const ascii = req.routeKey.length + req.requestId.length + req.sessionId.length + req.traceparent.length;
  const toolLen = Buffer.byteLength(req.toolName, 'utf8');
  const ptLen = req.progressTokenJson.length === 0 ? 0 : Buffer.byteLength(req.progressTokenJson, 'utf8');
  const argsLen = argumentsBytes !== null ? argumentsBytes.length : Buffer.byteLength(req.argumentsJson, 'utf8');
  const identity = req.identity ?? '';
  const idLen = identity.length === 0 ? 0 : Buffer.byteLength(identity, 'utf8');
  const tsLen = req.tracestate.length;
  const bgLen = req.baggage.length;
  // The MRTR members exist only on 2026-07-28 calls: a legacy call measures none of them.
  const modern = req.modern;
  const capLen = modern && req.clientCapabilitiesJson.length !== 0 ? Buffer.byteLength(req.clientCapabilitiesJson, 'utf8') : 0;
  const irLen = modern && req.inputResponsesJson.length !== 0 ? Buffer.byteLength(req.inputResponsesJson, 'utf8') : 0;
  const rsLen = modern && req.requestStateJson.length !== 0 ? Buffer.byteLength(req.requestStateJson, 'utf8') : 0;
  const extended = (tsLen | bgLen | capLen | irLen | rsLen) !== 0;
  const at = sink.reserve(CALL_HEAD + ascii + toolLen + ptLen + argsLen + idLen + tsLen + bgLen + capLen + irLen + rsLen);
  if (at < 0) return false;
  const b = sink.buf;
  b[at] = CallKind.Call;
  b[at + 1] = (req.sse ? FLAG_SSE : 0) | (modern ? FLAG_MODERN : 0) | (extended ? FLAG_EXTENDED : 0);
  b[at + 2] = req.logLevel + 1;
  b[at + 3] = CALL_FIELDS;
  putU32(b, at + 4, callId);
  putU32(b, at + 8, req.routeKey.length);
  putU32(b, at + 12, req.requestId.length);
  putU32(b, at + 16, req.sessionId.length);
  putU32(b, at + 20, req.traceparent.length);
  putU32(b, at + 24, toolLen);
  putU32(b, at + 28, ptLen);
  putU32(b, at + 32, argsLen);
  putU32(b, at + 36, idLen);
  let o = at + CALL_HEAD;
  o += writeLatin1(b, req.routeKey + req.requestId + req.sessionId + req.traceparent, o);
  o += writeUtf8(b, req.toolName, o, toolLen);
  if (ptLen > 0) o += writeUtf8(b, req.progressTokenJson, o, ptLen);
  if (argumentsBytes !== null) b.set(argumentsBytes, o);
  else writeUtf8(b, req.argumentsJson, o, argsLen);
  o += argsLen;
  if (idLen > 0) o += writeUtf8(b, identity, o, idLen);
  if (!extended) {
    // The common legacy call: zero lengths byte by byte (cheaper than five u32 writes).
    for (let i = at + 40; i < at + CALL_HEAD; i++) b[i] = 0;
  } else {
    putU32(b, at + 40, tsLen);
    putU32(b, at + 44, bgLen);
    putU32(b, at + 48, capLen);
    putU32(b, at + 52, irLen);
    putU32(b, at + 56, rsLen);
    if (tsLen > 0) o += writeLatin1(b, req.tracestate, o);
    if (bgLen > 0) o += writeLatin1(b, req.baggage, o);
    if (capLen > 0) o += writeUtf8(b, req.clientCapabilitiesJson, o, capLen);
    if (irLen > 0) o += writeUtf8(b, req.inputResponsesJson, o, irLen);
    if (rsLen > 0) writeUtf8(b, req.requestStateJson, o, rsLen);
  }
  sink.commit();
  return true;
}

/** Appends a cancel frame for `callId`; false when the sink refused it. */
export function writeCancel(sink: FrameSink, callId: number): boolean {
  const at = sink.reserve(CANCEL_BYTES);
  if (at < 0) return false;
  const b = sink.buf;
  putU32(b, at, CallKind.Cancel);
  putU32(b, at + 4, callId);
  sink.commit();
  return true;
}

/** Kind of the call-direction frame at `offset`. */
export function callFrameKind(buf: Buffer, offset: number): number {
  return buf[offset] as number;
}

/** Call id of a call or cancel frame. */
export function callFrameId(buf: Buffer, offset: number): number {
  return getU32(buf, offset + 4);
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
  const routeLen = getU32(buf, lengths + 4 * CallField.Route);
  const ridLen = getU32(buf, lengths + 4 * CallField.RequestId);
  const sidLen = getU32(buf, lengths + 4 * CallField.SessionId);
  const tpLen = getU32(buf, lengths + 4 * CallField.Traceparent);
  const toolLen = getU32(buf, lengths + 4 * CallField.Tool);
  const ptLen = getU32(buf, lengths + 4 * CallField.ProgressToken);
  const argsLen = getU32(buf, lengths + 4 * CallField.Arguments);
  const idLen = fields > CallField.Identity ? getU32(buf, lengths + 4 * CallField.Identity) : 0;
  let o = lengths + 4 * fields;
  assert(o + routeLen + ridLen + sidLen + tpLen + toolLen + ptLen + argsLen + idLen <= offset + length, 'call frame fields overrun the frame');
  const asciiLen = routeLen + ridLen + sidLen + tpLen;
  const ascii = readLatin1(buf, o, o + asciiLen);
  o += asciiLen;
  into.routeKey = ascii.slice(0, routeLen);
  into.requestId = ascii.slice(routeLen, routeLen + ridLen);
  into.sessionId = ascii.slice(routeLen + ridLen, routeLen + ridLen + sidLen);
  into.traceparent = ascii.slice(routeLen + ridLen + sidLen);
  into.toolName = readUtf8(buf, o, o + toolLen);
  o += toolLen;
  into.progressTokenJson = ptLen === 0 ? '' : readUtf8(buf, o, o + ptLen);
  o += ptLen;
  into.argumentsJson = readUtf8(buf, o, o + argsLen);
  o += argsLen;
  into.identity = idLen === 0 ? '' : readUtf8(buf, o, o + idLen);
  o += idLen;
  if (fields < CALL_FIELDS || (flags & FLAG_EXTENDED) === 0) {
    into.tracestate = into.baggage = into.clientCapabilitiesJson = into.inputResponsesJson = into.requestStateJson = '';
    return;
  }
  const tsLen = getU32(buf, lengths + 4 * CallField.Tracestate);
  const bgLen = getU32(buf, lengths + 4 * CallField.Baggage);
  const capLen = getU32(buf, lengths + 4 * CallField.ClientCapabilities);
  const irLen = getU32(buf, lengths + 4 * CallField.InputResponses);
  const rsLen = getU32(buf, lengths + 4 * CallField.RequestState);
  assert(o + tsLen + bgLen + capLen + irLen + rsLen <= offset + length, 'call frame fields overrun the frame');
  into.tracestate = tsLen === 0 ? '' : readLatin1(buf, o, o + tsLen);
  o += tsLen;
  into.baggage = bgLen === 0 ? '' : readLatin1(buf, o, o + bgLen);
  o += bgLen;
  into.clientCapabilitiesJson = capLen === 0 ? '' : readUtf8(buf, o, o + capLen);
  o += capLen;
  into.inputResponsesJson = irLen === 0 ? '' : readUtf8(buf, o, o + irLen);
  o += irLen;
  into.requestStateJson = rsLen === 0 ? '' : readUtf8(buf, o, o + rsLen);
}

/** Appends a result-direction frame; false when the sink refused it. */
export function writeResult(sink: FrameSink, kind: ResultKind, callId: number, outcome: number, status: number, payload: string): boolean {
  const payloadLen = payload.length === 0 ? 0 : Buffer.byteLength(payload, 'utf8');
  const at = sink.reserve(RESULT_HEAD + payloadLen);
  if (at < 0) return false;
  const b = sink.buf;
  b[at] = kind;
  b[at + 1] = outcome;
  putU16(b, at + 2, status);
  putU32(b, at + 4, callId);
  putU32(b, at + 8, payloadLen);
  if (payloadLen > 0) writeUtf8(b, payload, at + RESULT_HEAD, payloadLen);
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
  return getU16(buf, offset + 2);
}

/** Call id of a result frame. */
export function resultFrameCallId(buf: Buffer, offset: number): number {
  return getU32(buf, offset + 4);
}

/** Payload length of a result frame; the payload starts at `offset + RESULT_HEAD`. */
export function resultFramePayloadLength(buf: Buffer, offset: number): number {
  return getU32(buf, offset + 8);
}

/**
 * A call id: the acceptor's slot in the low bits, the slot's reuse generation above (a late frame for a reused slot is dropped).
 * Below 2^30, a Smi on every V8 build: ids up to 2^32 became heap numbers at a slot's 2,048th reuse and deoptimised both
 * threads' call path (why 1,024 generations suffice: call-dispatcher onFrame).
 */
export const CALL_SLOT_BITS = 20;
export const CALL_SLOT_MASK = (1 << CALL_SLOT_BITS) - 1;
export const CALL_GENERATION_MASK = (1 << (30 - CALL_SLOT_BITS)) - 1;
