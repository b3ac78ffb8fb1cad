/**
 * Rate limits of one acceptor thread: a token bucket (requests/s with a
 * burst) and a concurrent-call counter per caller identity and per route,
 * as the route's policy sets them (`auth.policies.*.rateLimit`).
 *
 * Cluster-wide meaning (ADR-0011): every acceptor thread of every replica
 * enforces the configured numbers on its own, with no coordination, so the
 * effective ceiling is `limit × replicas × workers.acceptors`. Connections
 * stick to one acceptor thread (the kernel's SO_REUSEPORT hash), so a
 * keep-alive client meets one bucket; operators who want a cluster-wide
 * number N configure N ÷ (replicas × acceptors).
 *
 * State is bounded (`auth.maxTrackedCallers`): when full, buckets that have
 * refilled and have no call in flight are forgotten (forgetting them changes
 * no answer); if none is idle the least recently created go.
 */
import type { BucketConfig } from '../../shared/auth/config-schema.js';
import { TokenBucket } from '../../shared/auth/token-bucket.js';

/** Why a request was limited, for the 429 and the metrics. */
export interface Limited {
  what: 'caller' | 'route';
  limit: 'rate' | 'concurrency';
  retryAfterSeconds: number;
}

/** Buckets keyed by caller or route. */
class BucketMap {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly max: number) {}

  get(key: string, burst: number, now: number): TokenBucket {
    let b = this.buckets.get(key);
    if (b === undefined) {
      if (this.buckets.size >= this.max) this.evict(now);
      b = new TokenBucket(burst, now);
      this.buckets.set(key, b);
    }
    return b;
  }

  private evict(now: number): void {
    // One pass drops every bucket that is full again; it runs only when the map is full.
    for (const [k, b] of this.buckets) if (b.inFlight === 0 && b.tokens >= 1 && now - b.updatedAt > 60_000) this.buckets.delete(k);
    if (this.buckets.size < this.max) return;
    for (const [k, b] of this.buckets) {
      if (b.inFlight === 0) {
        this.buckets.delete(k);
        if (this.buckets.size < this.max) return;
      }
    }
  }
}

/** What a `tools/call` holds while in flight (released once when it ends). */
export interface CallSlots {
  caller: TokenBucket | null;
  route: TokenBucket | null;
}

/** The rate limiter of one acceptor thread. */
export class RateLimiter {
  private readonly callers: BucketMap;
  private readonly routes: BucketMap;

  constructor(maxTracked: number) {
    this.callers = new BucketMap(maxTracked);
    this.routes = new BucketMap(maxTracked);
  }

  /** Takes one request token from the caller's and the route's bucket; null = allowed. */
  admit(callerKey: string, routeKey: string, perCaller: BucketConfig | null, perRoute: BucketConfig | null, now: number): Limited | null {
    if (perCaller !== null && perCaller.requestsPerSecond > 0) {
      const wait = this.callers.get(callerKey, perCaller.burst, now).take(now, perCaller.requestsPerSecond, perCaller.burst);
      if (wait > 0) return { what: 'caller', limit: 'rate', retryAfterSeconds: wait };
    }
    if (perRoute !== null && perRoute.requestsPerSecond > 0) {
      const wait = this.routes.get(routeKey, perRoute.burst, now).take(now, perRoute.requestsPerSecond, perRoute.burst);
      if (wait > 0) return { what: 'route', limit: 'rate', retryAfterSeconds: wait };
    }
    return null;
  }

  /** Reserves a concurrent-call slot for the caller and the route; null = limited (nothing reserved). */
  acquireCall(callerKey: string, routeKey: string, perCaller: BucketConfig | null, perRoute: BucketConfig | null, now: number, slots: CallSlots): Limited | null {
    const c = perCaller !== null && perCaller.maxConcurrentCalls > 0 ? this.callers.get(callerKey, perCaller.burst, now) : null;
    const r = perRoute !== null && perRoute.maxConcurrentCalls > 0 ? this.routes.get(routeKey, perRoute.burst, now) : null;
    // Retry-After for a concurrency limit: calls have no known end; 1 s is the smallest honest hint.
    if (c !== null && c.inFlight >= (perCaller as BucketConfig).maxConcurrentCalls) return { what: 'caller', limit: 'concurrency', retryAfterSeconds: 1 };
    if (r !== null && r.inFlight >= (perRoute as BucketConfig).maxConcurrentCalls) return { what: 'route', limit: 'concurrency', retryAfterSeconds: 1 };
    if (c !== null) c.inFlight++;
    if (r !== null) r.inFlight++;
    slots.caller = c;
    slots.route = r;
    return null;
  }

  /** Ends a call that {@link acquireCall} admitted. Idempotent per `slots`. */
  releaseCall(slots: CallSlots): void {
    if (slots.caller !== null) slots.caller.inFlight--;
    if (slots.route !== null) slots.route.inFlight--;
    slots.caller = null;
    slots.route = null;
  }
}
