/**
 * The acceptor's call slot table (src/main/call-dispatcher.ts) against real
 * rings, with the test playing the shards: it reads the call frames the
 * dispatcher publishes and writes the answer frames a shard would.
 */
import { describe, expect, it } from 'vitest';
import { CallDispatcher } from '../../../src/main/call-dispatcher.js';
import { McpRequest, type RequestSink } from '../../../src/main/mcp-request.js';
import { CALL_GENERATION_MASK, CallKind, callFrameId, callFrameKind, ResultKind, writeResult } from '../../../src/shared/threads/call-frames.js';
import type { CallChannelEnd } from '../../../src/shared/threads/messages.js';
import { createRing, RingReader, RingWriter } from '../../../src/shared/threads/ring.js';

const RING_BYTES = 64 * 1024;
/** Event-loop turns allowed for an answer frame to reach the dispatcher (it wakes on Atomics.waitAsync). */
const MAX_TURNS = 200;

/** The shard end the test plays: the call ids it received, and a writer for its answers. */
interface ShardSide {
  reader: RingReader;
  writer: RingWriter;
  calls: number[];
}

const sink: RequestSink = { onBody: () => {}, onBodyTooLarge: () => {}, onAborted: () => {}, draining: false };

function rig(shards: number): { dispatcher: CallDispatcher; sides: ShardSide[]; done: McpRequest[]; close: () => void } {
  const ends: CallChannelEnd[] = [];
  const sides: ShardSide[] = [];
  for (let i = 0; i < shards; i++) {
    const toShard = createRing(RING_BYTES);
    const toAcceptor = createRing(RING_BYTES);
    ends.push({ send: toShard, receive: toAcceptor });
    const calls: number[] = [];
    const reader = new RingReader(
      toShard,
      (buf, offset) => {
        if (callFrameKind(buf, offset) === CallKind.Call) calls.push(callFrameId(buf, offset));
      },
      { wait: false },
    );
    sides.push({ reader, writer: new RingWriter(toAcceptor), calls });
  }
  const done: McpRequest[] = [];
  const dispatcher = new CallDispatcher(ends, 16, 0, 1, 1 << 20, 1 << 20, (req) => done.push(req));
  const close = (): void => {
    dispatcher.close();
    for (const s of sides) {
      s.reader.close();
      s.writer.close();
    }
  };
  return { dispatcher, sides, done, close };
}

/** Dispatches a call to `shard` and returns it with the id the shard read. */
function call(r: ReturnType<typeof rig>, shard: number): { req: McpRequest; id: number } {
  const req = new McpRequest(sink);
  req.idText = '1';
  req.routeKey = 'core';
  expect(r.dispatcher.dispatch(shard, req)).toBeNull();
  const side = r.sides[shard] as ShardSide;
  side.reader.drain();
  const id = side.calls.pop();
  expect(id).toBeDefined();
  return { req, id: id as number };
}

function answer(r: ReturnType<typeof rig>, shard: number, id: number): void {
  expect(writeResult((r.sides[shard] as ShardSide).writer, ResultKind.Result, id, 0, 200, '{}')).toBe(true);
}

/** Waits (bounded) until `n` calls are done; returns how many are. */
async function settled(r: ReturnType<typeof rig>, n: number): Promise<number> {
  for (let turn = 0; turn < MAX_TURNS && r.done.length < n; turn++) await new Promise((resolve) => setImmediate(resolve));
  return r.done.length;
}

describe('CallDispatcher call ids', () => {
  it('stay small integers (below 2^30) through every generation of a slot, and change with each reuse', async () => {
    // One call at a time: every call takes the same slot, so its generation goes round more than twice.
    // Ids at or above 2^31 (the old 12-bit generation, from the 2,048th reuse) are heap numbers, not Smis.
    const r = rig(1);
    const seen = new Set<number>();
    let previous = -1;
    const rounds = 2 * (CALL_GENERATION_MASK + 1) + 100;
    for (let i = 0; i < rounds; i++) {
      const { req, id } = call(r, 0);
      expect(id).toBe(req.callId);
      expect(Number.isInteger(id) && id >= 0 && id < 2 ** 30).toBe(true);
      expect(id).not.toBe(previous);
      previous = id;
      seen.add(id);
      answer(r, 0, id);
      expect(await settled(r, i + 1)).toBe(i + 1);
      expect(r.done[i]).toBe(req);
    }
    expect(seen.size).toBe(CALL_GENERATION_MASK + 1);
    r.close();
  });

  it("drops an answer that arrives on another shard's ring, and takes it from the call's own shard", async () => {
    const r = rig(2);
    const { req, id } = call(r, 0);
    answer(r, 1, id);
    expect(await settled(r, 1)).toBe(0);
    answer(r, 0, id);
    expect(await settled(r, 1)).toBe(1);
    expect(r.done[0]).toBe(req);
    r.close();
  });

  it("drops a late answer for a released call; the slot's next call gets only its own", async () => {
    const r = rig(1);
    const first = call(r, 0);
    r.dispatcher.abandon(first.req); // client gone: released, cancel sent
    expect(r.done).toEqual([first.req]);
    const second = call(r, 0);
    expect(second.id).not.toBe(first.id);
    answer(r, 0, first.id); // the shard answered before it read the cancel
    answer(r, 0, second.id);
    expect(await settled(r, 2)).toBe(2);
    expect(r.done[1]).toBe(second.req);
    expect(await settled(r, 3)).toBe(2);
    r.close();
  });
});
