/**
 * Writes answers to uWS responses in one `tryEnd()` (one syscall in the common
 * case, with Content-Length), assembling bodies in a per-thread scratch
 * buffer: what the socket does not take at once is copied (backpressure.ts),
 * so the scratch is free again as soon as the write returns. This is also where the acceptor
 * wraps a shard's `result`/`error` payload in the JSON-RPC envelope with the
 * id text only it holds.
 */
import { Buffer } from 'node:buffer';
import type { HttpResponse } from 'uWebSockets.js';
import { statusLine, type Reply } from '../shared/protocol/reply.js';
import { writeUtf8 } from '../shared/threads/buffer-text.js';
import { endAnswer } from './backpressure.js';
import { appendTail } from './list-templates.js';

let scratch = Buffer.allocUnsafe(64 * 1024);

function ensure(need: number): Buffer {
  if (need > scratch.length) scratch = Buffer.allocUnsafe(Math.max(need, scratch.length * 2));
  return scratch;
}

/** `body` + `tail`: in the template's own room when it has one (list-templates.ts), else copied into the scratch. */
function joined(body: Uint8Array, tail: string): Uint8Array {
  const inPlace = appendTail(body, tail);
  if (inPlace !== null) return inPlace;
  const buf = ensure(body.length + tail.length * 3);
  buf.set(body, 0);
  const n = buf.write(tail, body.length, 'utf8');
  return buf.subarray(0, body.length + n);
}

/**
 * Writes the whole reply. Call inside `res.cork()` when not in the
 * synchronous part of a handler. `closeConnection` ends the connection after
 * the answer (a body still arriving past the limit is not read; a draining
 * gateway) — uWS then sends `Connection: close`. `requestId`, when given, is
 * returned as `x-request-id`.
 */
export function writeReply(res: HttpResponse, reply: Reply, closeConnection = false, requestId?: string): void {
  res.writeStatus(statusLine(reply.status));
  if (reply.contentType !== undefined) res.writeHeader('content-type', reply.contentType);
  if (requestId !== undefined) res.writeHeader('x-request-id', requestId);
  if (reply.headers) for (const [k, v] of reply.headers) res.writeHeader(k, v);
  if (reply.bodyTail !== undefined && typeof reply.body !== 'string') endAnswer(res, joined(reply.body, reply.bodyTail), closeConnection);
  else if (reply.bodyTail !== undefined) endAnswer(res, reply.body + reply.bodyTail, closeConnection);
  else endAnswer(res, reply.body, closeConnection);
}

const RPC_HEAD = Buffer.from('{"jsonrpc":"2.0","id":');
const RESULT_MEMBER = Buffer.from(',"result":');
const ERROR_MEMBER = Buffer.from(',"error":');
const SSE_PREFIX = Buffer.from('event: message\ndata: ');
const SSE_SUFFIX = Buffer.from('\n\n');

/**
 * `{"jsonrpc":"2.0","id":<idText>,"result"|"error":<payload>}` in the scratch
 * buffer, optionally framed as one SSE `message` event. `payload` is a view
 * that may be valid only until this returns: it is copied here (with
 * `Uint8Array#set`, and the id with `writeUtf8`: see buffer-text.ts).
 */
export function assembleRpcAnswer(idText: string, isError: boolean, payload: Uint8Array, sse: boolean): Uint8Array {
  const member = isError ? ERROR_MEMBER : RESULT_MEMBER;
  const idMax = idText.length * 3;
  const buf = ensure(SSE_PREFIX.length + RPC_HEAD.length + idMax + member.length + payload.length + 1 + SSE_SUFFIX.length);
  let o = 0;
  if (sse) o = put(buf, SSE_PREFIX, 0);
  o = put(buf, RPC_HEAD, o);
  o += writeUtf8(buf, idText, o, idMax);
  o = put(buf, member, o);
  o = put(buf, payload, o);
  buf[o++] = 0x7d; // }
  if (sse) o = put(buf, SSE_SUFFIX, o);
  return buf.subarray(0, o);
}

/** One SSE `message` event around a complete JSON-RPC message (a notification), in the scratch buffer. */
export function assembleSseEvent(message: Uint8Array): Uint8Array {
  const buf = ensure(SSE_PREFIX.length + message.length + SSE_SUFFIX.length);
  let o = put(buf, SSE_PREFIX, 0);
  o = put(buf, message, o);
  o = put(buf, SSE_SUFFIX, o);
  return buf.subarray(0, o);
}

/** Copies `bytes` to `buf` at `at`; the offset after them. */
function put(buf: Uint8Array, bytes: Uint8Array, at: number): number {
  buf.set(bytes, at);
  return at + bytes.length;
}
