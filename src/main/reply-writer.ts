/**
 * Writes a {@link Reply} to a uWS response in one `end()` (one syscall in the
 * common case, with Content-Length). A snapshot template and its tail are
 * joined in a per-thread scratch buffer: uWS copies what it cannot send at
 * once, so the scratch is free again when `end` returns.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { statusLine, type Reply } from '../shared/protocol/reply.js';

let scratch = Buffer.allocUnsafe(64 * 1024);

function joined(body: Uint8Array, tail: string): Uint8Array {
  const need = body.length + tail.length * 3;
  if (need > scratch.length) scratch = Buffer.allocUnsafe(Math.max(need, scratch.length * 2));
  scratch.set(body, 0);
  const n = scratch.write(tail, body.length, 'utf8');
  return scratch.subarray(0, body.length + n);
}

/**
 * Writes the whole reply. Call inside `res.cork()` when not in the
 * synchronous part of a handler. `closeConnection` ends the connection after
 * the answer (a body still arriving past the limit is not read).
 */
export function writeReply(res: HttpResponse, reply: Reply, closeConnection = false): void {
  res.writeStatus(statusLine(reply.status));
  if (reply.contentType !== undefined) res.writeHeader('content-type', reply.contentType);
  if (reply.headers) for (const [k, v] of reply.headers) res.writeHeader(k, v);
  if (reply.bodyTail !== undefined && typeof reply.body !== 'string') res.end(joined(reply.body, reply.bodyTail), closeConnection);
  else if (reply.bodyTail !== undefined) res.end(reply.body + reply.bodyTail, closeConnection);
  else res.end(reply.body, closeConnection);
}

/** Writes a raw result body that arrived from a shard (already a complete JSON-RPC response). */
export function writeJsonBody(res: HttpResponse, status: number, body: Uint8Array): void {
  res.writeStatus(statusLine(status));
  if (body.length > 0) res.writeHeader('content-type', 'application/json');
  res.end(body);
}
