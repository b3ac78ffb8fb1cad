/**
 * The acceptor's side of the hand-off to shards. Calls for one shard are
 * appended to that shard's frame batch and the batch is posted once per
 * event-loop turn (`setImmediate`), transferred, not cloned. Results come back
 * the same way and are written inside `res.cork`. In-flight calls per shard
 * are bounded; a full queue is an explicit 503.
 *
 * A call whose client accepts SSE may receive streamed events (progress, log)
 * before its final answer: the first (an empty one when the Tool Service
 * starts an NDJSON stream) turns the answer into a `text/event-stream`,
 * heartbeats keep it alive, the final answer ends it. A
 * client that disconnects, or that sends `notifications/cancelled` for the
 * call, gets nothing more, and the shard aborts the upstream request.
 */
import type { MessagePort } from 'node:worker_threads';
import type { HttpResponse } from 'uWebSockets.js';
import { CALL_OUTCOME_LABEL, FrameBatch, forEachResult, PARTIAL_FRAME, type CallContext, type CallOutcome } from '../shared/threads/frames.js';
import type { AcceptorToShard, ShardToAcceptor } from '../shared/threads/messages.js';
import { writeJsonBody } from './reply-writer.js';

/** A request waiting for its shard. `aborted` is set by the uWS abort handler. */
export interface PendingCall {
  res: HttpResponse;
  aborted: boolean;
  routeKey: string;
  startedAt: number;
  /** Key for `notifications/cancelled`: route, session and JSON-RPC id. */
  cancelKey: string;
  /** The JSON-RPC id as JSON text, for an error answered by the acceptor itself. */
  rpcIdJson?: string;
  /** Set by the dispatcher. */
  callId?: number;
  shard?: number;
  /** SSE headers were sent. */
  streaming?: boolean;
  heartbeat?: NodeJS.Timeout | null;
}

/** Called when a call's answer was written (or dropped because the client left or cancelled). */
export type CallDone = (call: PendingCall, outcome: string) => void;

const SSE_HEARTBEAT = ': keep-alive\n\n';

class ShardLink {
  readonly batch = new FrameBatch();
  scheduled = false;
  inFlight = 0;
  /** False from the shard's death until its replacement's port arrives: calls are refused meanwhile. */
  up = true;
  constructor(public port: MessagePort) {}
}

/** Answer to a call whose shard died: the Tool Service may or may not have run it. */
function shardLost(call: PendingCall): Uint8Array {
  return new TextEncoder().encode(
    `{"jsonrpc":"2.0","id":${call.rpcIdJson ?? 'null'},"error":{"code":-32603,"message":"Internal error: the worker running this call stopped; whether the tool ran is unknown"}}`,
  );
}

/** Routes `tools/call` requests of one acceptor thread to the shards. */
export class ShardDispatcher {
  private readonly links: ShardLink[];
  private readonly pending = new Map<number, PendingCall>();
  private readonly byCancelKey = new Map<string, Set<number>>();
  private nextCallId = 1;

  constructor(
    ports: readonly MessagePort[],
    private readonly maxInFlightPerShard: number,
    private readonly heartbeatMs: number,
    private readonly onDone: CallDone,
    private readonly onPublish: (routeKey: string, shard: number, snapshot: SharedArrayBuffer) => void,
  ) {
    this.links = ports.map((port) => new ShardLink(port));
    this.links.forEach((link, shard) => this.listen(link, shard));
  }

  private listen(link: ShardLink, shard: number): void {
    link.port.on('message', (msg: ShardToAcceptor) => {
      if (msg.type === 'results') this.onResults(link, msg.buffer, msg.length);
      else this.onPublish(msg.routeKey, shard, msg.snapshot);
    });
  }

  /**
   * The shard died: every call it held is answered with an internal error
   * (its outcome is unknown, so it is not retried for the client), and new
   * calls are refused until {@link shardReplaced}.
   */
  shardDown(shard: number): void {
    const link = this.links[shard];
    if (link === undefined) return;
    link.up = false;
    for (const call of [...this.pending.values()]) {
      if (call.shard !== shard) continue;
      this.forget(call);
      if (!call.aborted) {
        const body = shardLost(call);
        call.res.cork(() => {
          if (call.streaming) {
            call.res.write(SSE_EVENT_PREFIX);
            call.res.write(body);
            call.res.end(SSE_EVENT_SUFFIX);
          } else writeJsonBody(call.res, 200, body);
        });
      }
      this.onDone(call, 'shard_lost');
    }
  }

  /** The restarted shard's port. */
  shardReplaced(shard: number, port: MessagePort): void {
    const old = this.links[shard];
    if (old === undefined) return;
    old.port.close();
    const link = new ShardLink(port);
    this.links[shard] = link;
    this.listen(link, shard);
  }

  /** Number of calls waiting for a shard answer. */
  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * Queues a call. Returns false, without queuing, when the shard already has
   * `workers.maxPendingCallsPerShard` calls in flight.
   */
  dispatch(shard: number, routeKey: string, ctx: CallContext, body: Uint8Array, call: PendingCall): boolean {
    const link = this.links[shard];
    if (link === undefined || !link.up || link.inFlight >= this.maxInFlightPerShard) return false;
    // Ids wrap at 2^32; a call 4 billion calls old cannot still be pending under a bounded queue.
    const callId = this.nextCallId;
    this.nextCallId = (this.nextCallId + 1) >>> 0 || 1;
    call.callId = callId;
    call.shard = shard;
    link.batch.pushCall(callId, routeKey, ctx, body);
    link.inFlight++;
    this.pending.set(callId, call);
    let ids = this.byCancelKey.get(call.cancelKey);
    if (ids === undefined) this.byCancelKey.set(call.cancelKey, (ids = new Set()));
    ids.add(callId);
    if (!link.scheduled) {
      link.scheduled = true;
      setImmediate(() => this.flush(link));
    }
    return true;
  }

  /** The client disconnected: nothing can be written any more; the shard aborts the upstream call. */
  abandon(call: PendingCall): void {
    if (call.callId === undefined || !this.pending.has(call.callId)) return;
    this.finish(call, 'aborted');
  }

  /**
   * `notifications/cancelled` for `cancelKey`: cancels the call when exactly
   * one in-flight call of this thread matches (ids are only unique per
   * client, and a stateless server cannot tell two sessionless clients apart,
   * so an ambiguous cancel is ignored). Returns true when a call was cancelled.
   */
  cancel(cancelKey: string): boolean {
    const ids = this.byCancelKey.get(cancelKey);
    if (ids === undefined || ids.size !== 1) return false;
    const [callId] = ids;
    const call = callId === undefined ? undefined : this.pending.get(callId);
    if (call === undefined) return false;
    this.finish(call, 'cancelled');
    if (!call.aborted) {
      // Nothing more is sent for a cancelled request: a stream ends without its response; a plain JSON answer cannot, so the connection closes.
      call.res.cork(() => {
        if (call.streaming) call.res.end();
        else call.res.close();
      });
    }
    return true;
  }

  private finish(call: PendingCall, outcome: string): void {
    const callId = call.callId as number;
    this.forget(call);
    const link = this.links[call.shard as number];
    link?.port.postMessage({ type: 'cancel', callIds: [callId] } satisfies AcceptorToShard);
    this.onDone(call, outcome);
  }

  private forget(call: PendingCall): void {
    const callId = call.callId as number;
    if (!this.pending.delete(callId)) return;
    const link = this.links[call.shard as number];
    if (link) link.inFlight--;
    const ids = this.byCancelKey.get(call.cancelKey);
    ids?.delete(callId);
    if (ids?.size === 0) this.byCancelKey.delete(call.cancelKey);
    if (call.heartbeat) clearInterval(call.heartbeat);
    call.heartbeat = null;
  }

  private flush(link: ShardLink): void {
    link.scheduled = false;
    const { buffer, length } = link.batch.take();
    const msg: AcceptorToShard = { type: 'calls', buffer, length };
    link.port.postMessage(msg, [buffer]);
  }

  private onResults(_link: ShardLink, buffer: ArrayBuffer, length: number): void {
    forEachResult(buffer, length, (callId, status, outcome: CallOutcome, body) => {
      const call = this.pending.get(callId);
      if (call === undefined) return;
      if ((outcome & PARTIAL_FRAME) !== 0) {
        if (!call.aborted) this.streamEvent(call, body);
        return;
      }
      this.forget(call);
      if (call.aborted) {
        this.onDone(call, 'aborted');
        return;
      }
      if (call.streaming) {
        call.res.cork(() => {
          call.res.write(SSE_EVENT_PREFIX);
          call.res.write(body);
          call.res.end(SSE_EVENT_SUFFIX);
        });
      } else call.res.cork(() => writeJsonBody(call.res, status, body));
      this.onDone(call, CALL_OUTCOME_LABEL[outcome] ?? 'ok');
    });
  }

  private streamEvent(call: PendingCall, body: Uint8Array): void {
    const res = call.res;
    res.cork(() => {
      if (!call.streaming) {
        call.streaming = true;
        res.writeStatus('200 OK');
        res.writeHeader('content-type', 'text/event-stream');
        res.writeHeader('cache-control', 'no-cache');
        if (this.heartbeatMs > 0) {
          call.heartbeat = setInterval(() => {
            if (!call.aborted) res.cork(() => res.write(SSE_HEARTBEAT));
          }, this.heartbeatMs);
        }
      }
      // An empty event only opens the stream (the Tool Service started streaming; nothing to forward yet).
      if (body.length === 0) return;
      res.write(SSE_EVENT_PREFIX);
      res.write(body);
      res.write(SSE_EVENT_SUFFIX);
    });
  }
}

const SSE_EVENT_PREFIX = 'event: message\ndata: ';
const SSE_EVENT_SUFFIX = '\n\n';
