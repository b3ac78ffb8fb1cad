/**
 * The call-channel matrix: one channel per (acceptor, shard) pair, and its
 * rewiring when a thread is replaced. A restarted shard gets fresh channels
 * with every acceptor; a restarted acceptor gets fresh channels with every
 * shard; the old ends are closed by their owners. Main creates every
 * channel and hands each end to exactly one thread.
 *
 * ```
 *            shard 0        shard 1       …
 * acceptor 0 [0][0]         [0][1]
 * acceptor 1 [1][0]         [1][1]
 *    …
 * ```
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { CallChannelEnd } from '../shared/threads/messages.js';

/** Both ends of one pair's channel. */
interface Pair {
  acceptorEnd: CallChannelEnd;
  shardEnd: CallChannelEnd;
}

function pair(): Pair {
  const { port1, port2 } = new MessageChannel();
  return { acceptorEnd: { port: port1 }, shardEnd: { port: port2 } };
}

/** Channel ends to transfer with a postMessage or a Worker's workerData. */
export function transferList(ends: readonly CallChannelEnd[]): MessagePort[] {
  return ends.map((e) => e.port);
}

/** Owns the channel matrix of one gateway process. */
export class Topology {
  private readonly pairs: Pair[][];

  constructor(
    readonly acceptors: number,
    readonly shards: number,
  ) {
    this.pairs = Array.from({ length: acceptors }, () => Array.from({ length: shards }, pair));
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
    for (const row of this.pairs) row[s] = pair();
  }

  /** Fresh channels between acceptor `a` and every shard (the acceptor was replaced). */
  rewireAcceptor(a: number): void {
    this.pairs[a] = Array.from({ length: this.shards }, pair);
  }
}
