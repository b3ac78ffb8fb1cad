/**
 * The acceptor's side of the hand-off to shards. Calls for one shard are
 * appended to that shard's frame batch and the batch is posted once per
 * event-loop turn (`setImmediate`), transferred, not cloned. Results come back
 * the same way and are written inside `res.cork`. In-flight calls per shard
 * are bounded; a full queue is an explicit 503.
 */
import type { MessagePort } from 'node:worker_threads';
import type { HttpResponse } from 'uWebSockets.js';
import { CALL_OUTCOME_LABEL, FrameBatch, forEachResult, type CallContext, type CallOutcome } from '../shared/threads/frames.js';
import type { AcceptorToShard, ShardToAcceptor } from '../shared/threads/messages.js';
import { writeJsonBody } from './reply-writer.js';

/** A request waiting for its shard. `aborted` is set by the uWS abort handler. */
export interface PendingCall {
  res: HttpResponse;
  aborted: boolean;
  routeKey: string;
  startedAt: number;
}

/** Called when a call's answer was written (or dropped because the client left). */
export type CallDone = (call: PendingCall, outcome: string) => void;

class ShardLink {
  readonly batch = new FrameBatch();
  scheduled = false;
  inFlight = 0;
  constructor(readonly port: MessagePort) {}
}

/** Routes `tools/call` requests of one acceptor thread to the shards. */
export class ShardDispatcher {
  private readonly links: ShardLink[];
  private readonly pending = new Map<number, PendingCall>();
  private nextCallId = 1;

  constructor(
    ports: readonly MessagePort[],
    private readonly maxInFlightPerShard: number,
    private readonly onDone: CallDone,
    onPublish: (routeKey: string, shard: number, snapshot: SharedArrayBuffer) => void,
  ) {
    this.links = ports.map((port) => new ShardLink(port));
    this.links.forEach((link, shard) => {
      link.port.on('message', (msg: ShardToAcceptor) => {
        if (msg.type === 'results') this.onResults(link, msg.buffer, msg.length);
        else onPublish(msg.routeKey, shard, msg.snapshot);
      });
    });
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
    if (link === undefined || link.inFlight >= this.maxInFlightPerShard) return false;
    // Ids wrap at 2^32; a call 4 billion calls old cannot still be pending under a bounded queue.
    const callId = this.nextCallId;
    this.nextCallId = (this.nextCallId + 1) >>> 0 || 1;
    link.batch.pushCall(callId, routeKey, ctx, body);
    link.inFlight++;
    this.pending.set(callId, call);
    if (!link.scheduled) {
      link.scheduled = true;
      setImmediate(() => this.flush(link));
    }
    return true;
  }

  private flush(link: ShardLink): void {
    link.scheduled = false;
    const { buffer, length } = link.batch.take();
    const msg: AcceptorToShard = { type: 'calls', buffer, length };
    link.port.postMessage(msg, [buffer]);
  }

  private onResults(link: ShardLink, buffer: ArrayBuffer, length: number): void {
    forEachResult(buffer, length, (callId, status, outcome: CallOutcome, body) => {
      const call = this.pending.get(callId);
      if (call === undefined) return;
      this.pending.delete(callId);
      link.inFlight--;
      if (call.aborted) {
        this.onDone(call, 'aborted');
        return;
      }
      call.res.cork(() => writeJsonBody(call.res, status, body));
      this.onDone(call, CALL_OUTCOME_LABEL[outcome] ?? 'ok');
    });
  }
}
