/**
 * Token-bucket arithmetic for rate limits (pure: the caller passes the
 * clock). A bucket holds at most `burst` tokens and refills at `rate` per
 * second; a request takes one. Exactly at the limit a request passes; one
 * past it waits `(1 − tokens) / rate` seconds.
 *
 * Plus a concurrency counter for calls in flight. Both live per caller or
 * per route on each acceptor thread (`src/main/auth/rate-limiter.ts`).
 */

/** One bucket's mutable state. */
export class TokenBucket {
  tokens: number;
  updatedAt: number;
  /** `tools/call` in flight. */
  inFlight = 0;

  constructor(burst: number, now: number) {
    this.tokens = burst;
    this.updatedAt = now;
  }

  /**
   * Takes one token at `nowMs`; returns 0 when granted, else the seconds until
   * one is available. `rate` 0 means no rate limit (always granted).
   */
  take(nowMs: number, rate: number, burst: number): number {
    if (rate <= 0) return 0;
    const elapsed = (nowMs - this.updatedAt) / 1000;
    if (elapsed > 0) {
      this.tokens = Math.min(burst, this.tokens + elapsed * rate);
      this.updatedAt = nowMs;
    }
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return (1 - this.tokens) / rate;
  }
}
