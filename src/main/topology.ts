/**
 * The call-channel matrix: one channel per (acceptor, shard) pair, and its
 * rewiring when a thread is replaced. A restarted shard gets fresh channels
 * with every acceptor; a restarted acceptor gets fresh channels with every
 * shard; the old ends are closed by their owners. Main creates every
 * channel (two rings, one per direction) and hands each end to exactly one
 * thread.
 *
 * ```
 *            shard 0        shard 1       …
 * acceptor 0 [0][0]         [0][1]
 * acceptor 1 [1][0]         [1][1]
 *    …
 * ```
 */
import type { CallChannelEnd } from '../shared/threads/messages.js';
import { createRing } from '../shared/threads/ring.js';

/** Both ends of one pair's channel. */
interface Pair {
  acceptorEnd: CallChannelEnd;
  shardEnd: CallChannelEnd;
}

/** Owns the channel matrix of one gateway process. */
export class Topology {
  private readonly pairs: Pair[][];

  /** `ringBytes`: capacity of each ring (`workers.channelRingBytes`). */
  constructor(
    readonly acceptors: number,
    readonly shards: number,
    private readonly ringBytes: number,
  ) {
    this.pairs = Array.from({ length: acceptors }, () => Array.from({ length: shards }, () => this.pair()));
  }

  /**
   * A fresh pair of rings. Never reused across thread lifetimes: a ring's
   * reader and writer roles are claimed in its shared memory, and a dead
   * thread never gives its claim back.
   */
  private pair(): Pair {
    const toShard = createRing(this.ringBytes);
    const toAcceptor = createRing(this.ringBytes);
    return { acceptorEnd: { send: toShard, receive: toAcceptor }, shardEnd: { send: toAcceptor, receive: toShard } };
  }

  /** Acceptor `a`'s ends, index = shard. */
  acceptorEnds(a: number): CallChannelEnd[] {
    return (this.pairs[a] ?? []).map((p) => p.acceptorEnd);
  }

  /** Shard `s`'s ends, index = acceptor. */
  shardEnds(s: number): CallChannelEnd[] {
    return this.pairs.map((row) => (row[s] as Pair).shardEnd);
  }

  /** Fresh channels between shard `s` and every acceptor (the shard was replaced). */
  rewireShard(s: number): void {
    for (const row of this.pairs) row[s] = this.pair();
  }

  /** Fresh channels between acceptor `a` and every shard (the acceptor was replaced). */
  rewireAcceptor(a: number): void {
    this.pairs[a] = Array.from({ length: this.shards }, () => this.pair());
  }
}
