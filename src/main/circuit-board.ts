/**
 * Which Tool Services have an open circuit, on which shard (each shard keeps
 * its own breaker per service): shown in `/health/ready` under
 * `toolServices`. Main thread only; fed by the shards' `circuit` messages,
 * which report open/closed transitions — an open circuit is shown
 * `half_open` once `tools.circuitBreaker.openMs` has passed (the next call
 * is a probe).
 */

/** One service's circuits as readiness shows them. */
export interface ServiceCircuits {
  /** The worst state over the shards: open, else half_open, else closed. */
  circuit: 'closed' | 'open' | 'half_open';
  /** Shards whose circuit for this service is not closed, with when it opened. */
  shards: Record<string, { circuit: 'open' | 'half_open'; openedAt: string }>;
}

/** Circuit states of every Tool Service on every shard. */
export class CircuitBoard {
  /** service → shard → epoch ms the circuit opened. */
  private readonly open = new Map<string, Map<number, number>>();

  constructor(
    private readonly openMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Applies a shard's report. */
  set(shard: number, service: string, state: 'open' | 'closed' | 'half_open', at: number): void {
    let shards = this.open.get(service);
    if (state === 'closed') {
      shards?.delete(shard);
      if (shards?.size === 0) this.open.delete(service);
      return;
    }
    if (shards === undefined) {
      shards = new Map();
      this.open.set(service, shards);
    }
    shards.set(shard, at);
  }

  /** A restarted shard starts with every circuit closed. */
  forgetShard(shard: number): void {
    for (const [service, shards] of this.open) {
      shards.delete(shard);
      if (shards.size === 0) this.open.delete(service);
    }
  }

  /** Services with a circuit that is not closed on some shard (the rest are closed everywhere). */
  render(): Record<string, ServiceCircuits> {
    const out: Record<string, ServiceCircuits> = {};
    const now = this.now();
    for (const [service, shards] of this.open) {
      const entry: ServiceCircuits = { circuit: 'half_open', shards: {} };
      for (const [shard, openedAt] of shards) {
        const circuit = now - openedAt >= this.openMs ? 'half_open' : 'open';
        if (circuit === 'open') entry.circuit = 'open';
        entry.shards[String(shard)] = { circuit, openedAt: new Date(openedAt).toISOString() };
      }
      out[service] = entry;
    }
    return out;
  }
}
