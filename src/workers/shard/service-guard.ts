/**
 * Overload protection for one Tool Service, per shard: a bulkhead and a
 * circuit breaker (issue 11 "Also build"), so a dead or slow service cannot
 * take a shard's whole capacity and every call to it does not wait for its
 * timeout.
 *
 * Pure and clock-injected: no timers, no I/O. Every method takes `now`
 * (ms, monotonic) from the caller; queued waiters are opaque tokens that the
 * guard hands back when they may start (or must be refused), and a caller
 * that stops waiting (client gone, deadline) withdraws its token with
 * {@link ServiceGuard.cancel}.
 *
 *   bulkhead:  ≤ maxConcurrent calls running; ≤ maxQueued waiting (FIFO); beyond → refused "full"
 *
 *   breaker:        failures ≥ consecutiveFailures in a row,
 *                   or ≥ minimumCalls in windowMs with failure share ≥ failureRatio
 *        ┌────────┐ ───────────────────────────────────────────────► ┌──────┐
 *        │ closed │                                                   │ open │ refuses at once
 *        └────────┘ ◄── probe succeeds ── ┌───────────┐ ◄── openMs ── └──────┘ (Retry-After = rest of openMs)
 *                                         │ half_open │ ── probe fails ──► open again
 *                                         └───────────┘ ≤ halfOpenProbes calls at a time
 *
 * The failure window is a ring of 10 buckets of windowMs/10: constant memory
 * and constant time per outcome.
 */
import type { GatewayConfig } from '../../shared/config/schema.js';

/** Limits of one guard; {@link serviceGuardOptions} derives them from the configuration. */
export interface ServiceGuardOptions {
  /** Calls to the service running at once on this shard (`tools.bulkhead.maxConcurrentPerService`). */
  maxConcurrent: number;
  /** Calls waiting for a slot; more are refused (`tools.bulkhead.maxQueuedPerService`, 0 = no queue). */
  maxQueued: number;
  /** Consecutive failures that open the circuit (`tools.circuitBreaker.consecutiveFailures`). */
  consecutiveFailures: number;
  /** Failure share over the window that opens the circuit (`tools.circuitBreaker.failureRatio`, 0–1). */
  failureRatio: number;
  /** Calls the window must hold before the ratio applies (`tools.circuitBreaker.minimumCalls`). */
  minimumCalls: number;
  /** Length of the failure-ratio window (`tools.circuitBreaker.windowMs`). */
  windowMs: number;
  /** How long an open circuit refuses before it lets a probe through (`tools.circuitBreaker.openMs`). */
  openMs: number;
  /** Probe calls allowed at once while half-open (`tools.circuitBreaker.halfOpenProbes`). */
  halfOpenProbes: number;
}

/** The guard's options from the configuration. */
export function serviceGuardOptions(tools: GatewayConfig['tools']): ServiceGuardOptions {
  return {
    maxConcurrent: tools.bulkhead.maxConcurrentPerService,
    maxQueued: tools.bulkhead.maxQueuedPerService,
    consecutiveFailures: tools.circuitBreaker.consecutiveFailures,
    failureRatio: tools.circuitBreaker.failureRatio,
    minimumCalls: tools.circuitBreaker.minimumCalls,
    windowMs: tools.circuitBreaker.windowMs,
    openMs: tools.circuitBreaker.openMs,
    halfOpenProbes: tools.circuitBreaker.halfOpenProbes,
  };
}

/** Circuit state, as exported to metrics and readiness. */
export type CircuitState = 'closed' | 'open' | 'half_open';

/** What a finished call tells the breaker. `neutral` (cancelled by the client) counts for nothing. */
export type CallVerdict = 'success' | 'failure' | 'neutral';

/** A running call's permit; give it back exactly once with {@link ServiceGuard.release}. */
export interface Permit {
  /** The call is a half-open probe: its verdict decides the circuit. */
  readonly probe: boolean;
  /** The circuit generation it was admitted in (verdicts of calls admitted before a state change are ignored). */
  readonly generation: number;
}

/** Why a call was refused without being run. */
export type Refusal = { reason: 'circuit_open' | 'bulkhead_full'; retryAfterMs: number };

/** Outcome of {@link ServiceGuard.admit}. */
export type Admission = { kind: 'run'; permit: Permit } | { kind: 'queued' } | ({ kind: 'refused' } & Refusal);

/** What the caller must do after a release or a state change: start these waiters, refuse those. */
export interface Handoff<T> {
  readonly start: ReadonlyArray<{ waiter: T; permit: Permit }>;
  readonly refuse: ReadonlyArray<{ waiter: T } & Refusal>;
}

/** The handoff of a release with nobody waiting (the usual case), shared: no allocation per call. */
const NOTHING_TO_HAND_OFF: Handoff<never> = Object.freeze({ start: Object.freeze([]), refuse: Object.freeze([]) });

const BUCKETS = 10;
/** Retry-After for a full bulkhead or a half-open circuit: the guard does not know when a slot frees. */
const FULL_RETRY_MS = 1_000;

/** Bulkhead and circuit breaker of one Tool Service on one shard. */
export class ServiceGuard<T> {
  private running = 0;
  private probesRunning = 0;
  private readonly queue: T[] = [];
  private circuit: 'closed' | 'open' = 'closed';
  private openedAt = 0;
  private consecutive = 0;
  private readonly calls = new Array<number>(BUCKETS).fill(0);
  private readonly failures = new Array<number>(BUCKETS).fill(0);
  private readonly bucketOf = new Array<number>(BUCKETS).fill(-1);
  /**
   * The permit of an ordinary call in the current circuit generation, which it
   * also records (a state change starts a new one). Permits are immutable: one
   * per generation, not one per call.
   */
  private runPermit: Permit = { probe: false, generation: 0 };
  private runAdmission: Admission = { kind: 'run', permit: this.runPermit };
  /** Calls refused since creation, by reason (metrics). */
  readonly refused = { circuit_open: 0, bulkhead_full: 0 };

  constructor(private readonly options: ServiceGuardOptions) {}

  /** The circuit state at `now`: an open circuit whose cool-down has passed is half-open. */
  state(now: number): CircuitState {
    if (this.circuit === 'closed') return 'closed';
    return now - this.openedAt >= this.options.openMs ? 'half_open' : 'open';
  }

  /** Calls running and waiting (metrics). */
  load(): { running: number; queued: number } {
    return { running: this.running, queued: this.queue.length };
  }

  /** Admits a call: run now, wait (its token comes back from a later {@link release}), or refused. */
  admit(waiter: T, now: number): Admission {
    const state = this.state(now);
    if (state === 'open') return this.refuse('circuit_open', now);
    if (state === 'half_open') {
      // Probes bypass the queue: they decide whether anything should run at all.
      if (this.probesRunning >= this.options.halfOpenProbes || this.running >= this.options.maxConcurrent) return this.refuse('circuit_open', now);
      this.probesRunning++;
      this.running++;
      return { kind: 'run', permit: { probe: true, generation: this.runPermit.generation } };
    }
    if (this.running < this.options.maxConcurrent && this.queue.length === 0) {
      this.running++;
      return this.runAdmission;
    }
    if (this.queue.length < this.options.maxQueued) {
      this.queue.push(waiter);
      return { kind: 'queued' };
    }
    return this.refuse('bulkhead_full', now);
  }

  /** Withdraws a waiter that no longer waits; false when it is not queued (already started or refused). */
  cancel(waiter: T): boolean {
    const i = this.queue.indexOf(waiter);
    if (i < 0) return false;
    this.queue.splice(i, 1);
    return true;
  }

  /** Gives a permit back with the call's verdict; returns the waiters to start or refuse now. */
  release(permit: Permit, verdict: CallVerdict, now: number): Handoff<T> {
    this.running--;
    if (permit.probe) this.probesRunning--;
    if (permit.generation === this.runPermit.generation && verdict !== 'neutral') {
      if (permit.probe) {
        if (verdict === 'success') this.close();
        else this.open(now);
      } else if (this.circuit === 'closed') this.record(verdict === 'failure', now);
    }
    return this.drain(now);
  }

  /** Starts queued waiters while slots are free; refuses them all while the circuit is not closed. */
  private drain(now: number): Handoff<T> {
    if (this.queue.length === 0) return NOTHING_TO_HAND_OFF;
    const out = { start: [] as Array<{ waiter: T; permit: Permit }>, refuse: [] as Array<{ waiter: T } & Refusal> };
    if (this.state(now) !== 'closed') {
      for (const waiter of this.queue.splice(0)) {
        const { reason, retryAfterMs } = this.refuse('circuit_open', now);
        out.refuse.push({ waiter, reason, retryAfterMs });
      }
      return out;
    }
    while (this.queue.length > 0 && this.running < this.options.maxConcurrent) {
      this.running++;
      out.start.push({ waiter: this.queue.shift() as T, permit: this.runPermit });
    }
    return out;
  }

  private record(failed: boolean, now: number): void {
    this.consecutive = failed ? this.consecutive + 1 : 0;
    const width = this.options.windowMs / BUCKETS;
    const bucket = Math.floor(now / width);
    const slot = bucket % BUCKETS;
    if (this.bucketOf[slot] !== bucket) {
      this.bucketOf[slot] = bucket;
      this.calls[slot] = 0;
      this.failures[slot] = 0;
    }
    (this.calls[slot] as number)++;
    if (failed) (this.failures[slot] as number)++;
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < BUCKETS; i++) {
      if (bucket - (this.bucketOf[i] as number) < BUCKETS) {
        calls += this.calls[i] as number;
        failures += this.failures[i] as number;
      }
    }
    const ratioTripped = calls >= this.options.minimumCalls && failures / calls >= this.options.failureRatio;
    if (this.consecutive >= this.options.consecutiveFailures || (failed && ratioTripped)) this.open(now);
  }

  private open(now: number): void {
    this.circuit = 'open';
    this.openedAt = now;
    this.nextGeneration();
  }

  private close(): void {
    this.circuit = 'closed';
    this.nextGeneration();
    this.consecutive = 0;
    this.bucketOf.fill(-1);
  }

  private nextGeneration(): void {
    this.runPermit = { probe: false, generation: this.runPermit.generation + 1 };
    this.runAdmission = { kind: 'run', permit: this.runPermit };
  }

  private refuse(reason: Refusal['reason'], now: number): { kind: 'refused' } & Refusal {
    this.refused[reason]++;
    // Open: the rest of the cool-down. Half-open (a probe is deciding) or full: a short, fixed wait.
    const coolDownLeft = this.options.openMs - (now - this.openedAt);
    const retryAfterMs = reason === 'circuit_open' && coolDownLeft > 0 ? coolDownLeft : FULL_RETRY_MS;
    return { kind: 'refused', reason, retryAfterMs };
  }
}
