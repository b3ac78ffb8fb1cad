/**
 * The acceptor's side of `tools/call`: hands each checked call to its
 * route's shard as a frame, and turns the shard's answer frames into HTTP
 * answers. The acceptor owns the JSON-RPC envelope: every final frame —
 * result, tool error, JSON-RPC error, crash — is wrapped here with the id
 * text the request arrived with, and so is the answer to a call whose shard
 * died. One path, one envelope writer.
 *
 * In-flight calls live in a slot table (no per-call Map or Set): a call id
 * is `generation << CALL_SLOT_BITS | slot`, so a frame for a slot that was
 * released (client gone, cancelled) and reused is recognised and dropped.
 * Calls per shard are bounded (`workers.maxPendingCallsPerShard`); a full
 * shard and a shard that is down are refused with distinct 503s.
 *
 * A call whose client accepts SSE may receive streamed events before its
 * final answer: the first (or a stream-start frame) turns the answer into a
 * `text/event-stream`, heartbeats keep it alive, the final answer ends it.
 * A stream whose client stops reading is ended once more than
 * `server.maxBufferedBytesPerConnection` bytes wait unsent (`CLIENT_TOO_SLOW`).
 *
 * ~360 lines: the slot table, the shard links and the stream writes are one
 * state machine per call (every exit — answer, cancel, abort, shard loss,
 * drain, slow client — releases the slot exactly once); split, each part
 * would need the others' invariants.
 */
import { Buffer } from 'node:buffer';
import assert from 'node:assert';
import { callOutcomeLabel } from '../shared/calls.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../shared/errors.js';
import type { ChannelStat } from '../shared/metrics.js';
import {
  CALL_GENERATION_MASK,
  CALL_SLOT_BITS,
  CALL_SLOT_MASK,
  RESULT_HEAD,
  ResultKind,
  resultFrameCallId,
  resultFrameKind,
  resultFrameOutcome,
  resultFramePayloadLength,
  resultFrameStatus,
  writeCall,
  writeCancel,
} from '../shared/threads/call-frames.js';
import type { CallChannelEnd } from '../shared/threads/messages.js';
import { RingReader, RingWriter } from '../shared/threads/ring.js';
import type { McpRequest } from './mcp-request.js';
import { assembleRpcAnswer, assembleSseEvent } from './reply-writer.js';

/** Why a call was not handed to its shard. */
export type DispatchRefusal = 'full' | 'down';

/** Called once per dispatched call when its answer was written (or dropped: client gone, cancelled). */
export type CallDone = (req: McpRequest, outcome: string) => void;

const SSE_HEARTBEAT = Buffer.from(': keep-alive\n\n');
const SHARD_LOST = Buffer.from(JSON.stringify({ code: JsonRpcErrorCode.InternalError, message: 'Internal error: the worker running this call stopped; whether the tool ran is unknown' }));
/** A call still running at the drain deadline: it may have run, so it is not a retryable refusal (docs/contracts/errors.md). */
const SHUTTING_DOWN = Buffer.from(
  JSON.stringify({
    code: JsonRpcErrorCode.InternalError,
    message: 'Internal error: the gateway shut down (server.drainTimeoutMs passed) before the tool answered; whether the tool ran is unknown',
    data: { reason: GatewayErrorCode.ShuttingDown },
  }),
);
/** The last event of a stream whose client stopped reading: the call is cancelled upstream, its outcome unknown. */
const CLIENT_TOO_SLOW = Buffer.from(
  JSON.stringify({
    code: JsonRpcErrorCode.InternalError,
    message: 'Internal error: the client did not read the stream (server.maxBufferedBytesPerConnection bytes unsent); the call was cancelled, whether the tool finished is unknown',
    data: { reason: GatewayErrorCode.ClientTooSlow },
  }),
);
const MAX_SLOTS = 1 << CALL_SLOT_BITS;

/** This acceptor's end of the call channel with one shard: a ring each way. */
class ShardLink {
  readonly writer: RingWriter;
  readonly reader: RingReader;
  /** False from the shard's death until its replacement's channel arrives. */
  up = true;
  inFlight = 0;

  constructor(end: CallChannelEnd, maxBacklogBytes: number, onFrame: (buf: Buffer, offset: number, length: number) => void) {
    // Calls beyond the ring wait in a bounded backlog; past it a call is refused (503), never blocking this thread.
    this.writer = new RingWriter(end.send, { maxBacklogBytes });
    this.reader = new RingReader(end.receive, onFrame);
  }

  close(): void {
    this.reader.close();
    this.writer.close();
  }
}

/** Routes `tools/call` requests of one acceptor thread to the shards. */
export class CallDispatcher {
  private readonly links: ShardLink[];
  private readonly slots: Array<McpRequest | undefined> = [];
  private readonly generations: number[] = [];
  private readonly freeSlots: number[] = [];
  /**
   * In-flight calls by id text, chained through `nextSameId`/`prevSameId`: what `notifications/cancelled`
   * can name. Doubly linked so that a call leaves its chain in O(1): ids are unique only per client, and
   * thousands of calls in flight may share one (every client starts at 1).
   */
  private readonly byIdText = new Map<string, McpRequest>();
  private inFlightCalls = 0;
  private readonly maxSlots: number;
  /** Set by the drain: streams opened from now on announce `Connection: close`. */
  draining = false;

  constructor(
    channels: readonly CallChannelEnd[],
    private readonly maxInFlightPerShard: number,
    private readonly heartbeatMs: number,
    private readonly retryAfterSeconds: number,
    private readonly maxBacklogBytes: number,
    /** `server.maxBufferedBytesPerConnection`: an SSE stream with more unsent is ended (`CLIENT_TOO_SLOW`). */
    private readonly maxUnsentBytes: number,
    private readonly onDone: CallDone,
  ) {
    this.maxSlots = Math.min(MAX_SLOTS, channels.length * maxInFlightPerShard);
    this.links = channels.map((end, shard) => this.link(shard, end));
  }

  private link(shard: number, end: CallChannelEnd): ShardLink {
    return new ShardLink(end, this.maxBacklogBytes, (buf, offset, length) => this.onFrame(shard, buf, offset, length));
  }

  /** The call rings toward each shard, as their writers count them (metrics read this at scrape time). */
  channelStats(acceptor: number): ChannelStat[] {
    return this.links.map((link, shard) => ({ acceptor, shard, stats: link.writer.stats }));
  }

  /** Calls waiting for a shard's answer. */
  get inFlight(): number {
    return this.inFlightCalls;
  }

  /** Hands a checked call to `shard`; a refusal is answered by the caller (it has the request's id). */
  dispatch(shard: number, req: McpRequest): DispatchRefusal | null {
    const link = this.links[shard];
    if (link === undefined || !link.up) return 'down';
    if (link.inFlight >= this.maxInFlightPerShard) return 'full';
    const slot = this.freeSlots.pop() ?? (this.slots.length < this.maxSlots ? this.slots.length : -1);
    if (slot < 0) return 'full';
    const generation = ((this.generations[slot] ?? 0) + 1) & CALL_GENERATION_MASK;
    const callId = (generation << CALL_SLOT_BITS) | slot;
    req.callId = callId;
    req.shard = shard;
    if (!writeCall(link.writer, callId, req, req.argumentsBytes)) {
      this.freeSlots.push(slot);
      return 'full';
    }
    this.generations[slot] = generation;
    this.slots[slot] = req;
    req.state = 'calling';
    link.inFlight++;
    this.inFlightCalls++;
    const sameId = this.byIdText.get(req.idText) ?? null;
    req.nextSameId = sameId;
    req.prevSameId = null;
    if (sameId !== null) sameId.prevSameId = req;
    this.byIdText.set(req.idText, req);
    return null;
  }

  /** The client disconnected: nothing can be written any more; the shard aborts the upstream call. */
  abandon(req: McpRequest): void {
    if (this.release(req)) {
      this.sendCancel(req);
      this.onDone(req, 'aborted');
    }
  }

  /**
   * `notifications/cancelled` for `idText` on `routeKey` + `sessionId`:
   * cancels the call when exactly one in-flight call of this thread matches
   * (ids are only unique per client, and a stateless server cannot tell two
   * sessionless clients apart, so an ambiguous cancel is ignored). Returns
   * true when a call was cancelled.
   */
  cancel(routeKey: string, sessionId: string, idText: string): boolean {
    let match: McpRequest | null = null;
    for (let r = this.byIdText.get(idText) ?? null; r !== null; r = r.nextSameId) {
      if (r.routeKey !== routeKey || r.sessionId !== sessionId) continue;
      if (match !== null) return false;
      match = r;
    }
    if (match === null || !this.release(match)) return false;
    this.sendCancel(match);
    const res = match.res;
    if (res !== null && !match.aborted) {
      // Nothing more is sent for a cancelled request: a stream ends without its response; a plain JSON answer cannot, so the connection closes.
      const streaming = match.streaming;
      res.cork(() => {
        if (streaming) res.end();
        else res.close();
      });
    }
    this.onDone(match, 'cancelled');
    return true;
  }

  /**
   * The shard died: every call it held is answered with an internal error
   * (its outcome is unknown, so it is not retried for the client), and new
   * calls are refused until {@link shardReplaced}.
   */
  shardDown(shard: number): void {
    const link = this.links[shard];
    if (link === undefined || !link.up) return;
    link.up = false;
    // Answers the shard finished before it died are still in the ring: deliver them first.
    link.reader.drain();
    link.close();
    for (const req of this.slots) {
      if (req === undefined || req.state !== 'calling' || req.shard !== shard) continue;
      this.finish(req, true, SHARD_LOST, 200, 'shard_lost');
    }
  }

  /**
   * The drain deadline passed: every call still in flight is answered with
   * `SHUTTING_DOWN` (never cut silently) and cancelled on its shard, which
   * aborts the Tool Service request. Returns how many were answered.
   */
  failAll(): number {
    let failed = 0;
    for (const req of this.slots) {
      if (req === undefined || req.state !== 'calling') continue;
      this.sendCancel(req);
      this.finish(req, true, SHUTTING_DOWN, 200, 'shutdown');
      failed++;
    }
    return failed;
  }

  /** The restarted shard's channel. */
  shardReplaced(shard: number, end: CallChannelEnd): void {
    const old = this.links[shard];
    if (old === undefined) return;
    old.close(); // idempotent: already closed when the shard went down
    this.links[shard] = this.link(shard, end);
  }

  /** Closes every link (the acceptor is closing). */
  close(): void {
    for (const link of this.links) link.close();
  }

  /**
   * A frame from `shard`'s ring. A late frame (its call released: client gone, cancelled) is dropped by
   * its id and shard: it could match only a later call in its slot on the same shard with the same
   * generation, i.e. after all {@link CALL_GENERATION_MASK} + 1 generations. On that shard the late frame
   * is ahead of the answer to any later call in the slot (FIFO rings; the shard reads the cancel before
   * that call), and this thread drains every ring each turn: it is dropped long before 1,024 reuses.
   */
  private onFrame(shard: number, buf: Buffer, offset: number, length: number): void {
    assert(length >= RESULT_HEAD, 'result frame shorter than its header');
    const callId = resultFrameCallId(buf, offset);
    const req = this.slots[callId & CALL_SLOT_MASK];
    if (req === undefined || req.callId !== callId || req.shard !== shard || req.state !== 'calling') return; // released: client gone or cancelled
    const kind = resultFrameKind(buf, offset);
    const start = offset + RESULT_HEAD;
    const payload = buf.subarray(start, start + resultFramePayloadLength(buf, offset));
    if (kind === ResultKind.Event || kind === ResultKind.StreamStart) {
      this.streamEvent(req, kind === ResultKind.Event ? payload : null);
      return;
    }
    this.finish(req, kind === ResultKind.Error, payload, resultFrameStatus(buf, offset), callOutcomeLabel(resultFrameOutcome(buf, offset)));
  }

  /** Writes the final answer in the request's envelope and releases the call. */
  private finish(req: McpRequest, isError: boolean, payload: Uint8Array, status: number, outcome: string): void {
    if (!this.release(req)) return;
    const res = req.res;
    if (res !== null && !req.aborted) {
      req.stagedBody = assembleRpcAnswer(req.idText, isError, payload, req.streaming);
      req.stagedStatus = status;
      req.stagedRetryAfter = status === 503 ? String(this.retryAfterSeconds) : null;
      req.stagedEnd = true;
      res.cork(req.writeStaged);
    }
    this.onDone(req, outcome);
  }

  private streamEvent(req: McpRequest, message: Uint8Array | null): void {
    const res = req.res;
    if (res === null || req.aborted) return;
    if (!req.streaming) {
      req.streaming = true;
      res.cork(() => {
        res.writeStatus('200 OK');
        res.writeHeader('content-type', 'text/event-stream');
        res.writeHeader('cache-control', 'no-cache');
        res.writeHeader('x-request-id', req.requestId);
        // Draining: the client closes this connection after the stream (ending a stream with uWS's close flag corrupts it).
        if (this.draining) res.writeHeader('connection', 'close');
        // streamable-http.mdx: SSE answers ask proxies (nginx) not to buffer them.
        res.writeHeader('x-accel-buffering', 'no');
      });
      if (this.heartbeatMs > 0) {
        req.heartbeat = setInterval(() => {
          if (req.aborted || req.state !== 'calling') return;
          res.cork(() => req.noteStreamWrite(res.write(SSE_HEARTBEAT), SSE_HEARTBEAT.length));
          if (req.unsentBytes > this.maxUnsentBytes) this.tooSlow(req);
        }, this.heartbeatMs);
      }
    }
    // A stream-start frame only opens the stream (the Tool Service started streaming; nothing to forward yet).
    if (message === null) return;
    req.stagedBody = assembleSseEvent(message);
    req.stagedEnd = false;
    res.cork(req.writeStaged);
    if (req.unsentBytes > this.maxUnsentBytes) this.tooSlow(req);
  }

  /**
   * The stream's client is not reading: ends the stream with a `CLIENT_TOO_SLOW`
   * error event (after what is already buffered) and cancels the call at its
   * shard, which aborts the Tool Service request — rather than let uWS buffer
   * up to `tools.maxResponseBytes` for it (issue 11 #2).
   */
  private tooSlow(req: McpRequest): void {
    if (!this.release(req)) return;
    this.sendCancel(req);
    const res = req.res;
    if (res !== null && !req.aborted) {
      req.stagedBody = assembleRpcAnswer(req.idText, true, CLIENT_TOO_SLOW, true);
      req.stagedEnd = true;
      res.cork(req.writeStaged);
    }
    this.onDone(req, 'client_too_slow');
  }

  /** Frees the call's slot; false when it was already released. */
  private release(req: McpRequest): boolean {
    if (req.state !== 'calling') return false;
    const slot = req.callId & CALL_SLOT_MASK;
    assert(this.slots[slot] === req, 'a calling request owns its slot');
    this.slots[slot] = undefined;
    this.freeSlots.push(slot);
    const link = this.links[req.shard];
    if (link !== undefined) link.inFlight--;
    this.inFlightCalls--;
    this.unindex(req);
    if (req.heartbeat !== null) {
      clearInterval(req.heartbeat);
      req.heartbeat = null;
    }
    req.state = 'answered'; // the owner returns it to the pool in onDone
    return true;
  }

  private unindex(req: McpRequest): void {
    const next = req.nextSameId;
    const prev = req.prevSameId;
    if (next !== null) next.prevSameId = prev;
    if (prev !== null) prev.nextSameId = next;
    else if (next !== null) this.byIdText.set(req.idText, next);
    else this.byIdText.delete(req.idText);
    req.nextSameId = null;
    req.prevSameId = null;
  }

  private sendCancel(req: McpRequest): void {
    const link = this.links[req.shard];
    if (link?.up) writeCancel(link.writer, req.callId);
  }
}
