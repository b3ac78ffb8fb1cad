import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import { ServiceGuard, serviceGuardOptions, type Admission, type Permit, type ServiceGuardOptions } from '../../../../src/workers/shard/service-guard.js';

const options = (over: Partial<ServiceGuardOptions> = {}): ServiceGuardOptions => ({
  maxConcurrent: 2,
  maxQueued: 2,
  consecutiveFailures: 3,
  failureRatio: 0.5,
  minimumCalls: 10,
  windowMs: 1_000,
  openMs: 5_000,
  halfOpenProbes: 1,
  ...over,
});

function permitOf(a: Admission): Permit {
  if (a.kind !== 'run') throw new Error(`expected run, got ${JSON.stringify(a)}`);
  return a.permit;
}

describe('ServiceGuard bulkhead', () => {
  it('runs up to maxConcurrent, queues up to maxQueued, then refuses as full', () => {
    const g = new ServiceGuard<string>(options());
    const p1 = permitOf(g.admit('a', 0));
    permitOf(g.admit('b', 0));
    expect(g.admit('c', 0)).toEqual({ kind: 'queued' });
    expect(g.admit('d', 0)).toEqual({ kind: 'queued' });
    expect(g.admit('e', 0)).toEqual({ kind: 'refused', reason: 'bulkhead_full', retryAfterMs: 1_000 });
    expect(g.load()).toEqual({ running: 2, queued: 2 });
    expect(g.refused.bulkhead_full).toBe(1);
    // A release starts the oldest waiter (FIFO).
    const handoff = g.release(p1, 'success', 1);
    expect(handoff.start.map((s) => s.waiter)).toEqual(['c']);
    expect(handoff.refuse).toEqual([]);
    expect(g.load()).toEqual({ running: 2, queued: 1 });
  });

  it('keeps FIFO order: a new call queues behind waiters even when a slot is free', () => {
    const g = new ServiceGuard<string>(options({ maxConcurrent: 1 }));
    const p = permitOf(g.admit('a', 0));
    expect(g.admit('b', 0).kind).toBe('queued');
    const { start } = g.release(p, 'success', 0);
    expect(start.map((s) => s.waiter)).toEqual(['b']);
    expect(g.admit('c', 0).kind).toBe('queued');
  });

  it('lets a waiter withdraw, and a queue of 0 refuses at once', () => {
    const g = new ServiceGuard<string>(options({ maxConcurrent: 1 }));
    const p = permitOf(g.admit('a', 0));
    g.admit('b', 0);
    expect(g.cancel('b')).toBe(true);
    expect(g.cancel('b')).toBe(false);
    expect(g.release(p, 'success', 0).start).toEqual([]);
    const none = new ServiceGuard<string>(options({ maxConcurrent: 1, maxQueued: 0 }));
    permitOf(none.admit('a', 0));
    expect(none.admit('b', 0)).toMatchObject({ kind: 'refused', reason: 'bulkhead_full' });
  });
});

describe('ServiceGuard circuit breaker (clock injected)', () => {
  const fail = (g: ServiceGuard<string>, now: number, n: number) => {
    for (let i = 0; i < n; i++) g.release(permitOf(g.admit(`f${i}`, now)), 'failure', now);
  };

  it('opens after N consecutive failures; a success in between resets the count', () => {
    const g = new ServiceGuard<string>(options());
    fail(g, 0, 2);
    g.release(permitOf(g.admit('ok', 0)), 'success', 0);
    fail(g, 0, 2);
    expect(g.state(0)).toBe('closed');
    fail(g, 0, 1);
    expect(g.state(0)).toBe('open');
    expect(g.admit('x', 100)).toEqual({ kind: 'refused', reason: 'circuit_open', retryAfterMs: 4_900 });
    expect(g.refused.circuit_open).toBe(1);
  });

  it('opens on the failure ratio over the window once minimumCalls were seen, and forgets old buckets', () => {
    const g = new ServiceGuard<string>(options({ consecutiveFailures: 1_000 }));
    // 9 calls, all failing but interleaved with successes: 4 failures / 9 calls, under the minimum.
    for (let i = 0; i < 9; i++) g.release(permitOf(g.admit('c', 0)), i % 2 === 0 ? 'success' : 'failure', 0);
    expect(g.state(0)).toBe('closed');
    // A window later those are gone: 9 more calls at 40% failures keep it closed.
    for (let i = 0; i < 10; i++) g.release(permitOf(g.admit('c', 2_000)), i < 4 ? 'failure' : 'success', 2_000);
    expect(g.state(2_000)).toBe('closed');
    // Failures inside the same window push it to 50%: open.
    g.release(permitOf(g.admit('c', 2_100)), 'failure', 2_100);
    expect(g.state(2_100)).toBe('closed'); // 5/11 = 45%
    g.release(permitOf(g.admit('c', 2_100)), 'failure', 2_100);
    expect(g.state(2_100)).toBe('open'); // 6/12 = 50%
  });

  it('half-opens after openMs, lets halfOpenProbes probes through, closes on a probe success', () => {
    const g = new ServiceGuard<string>(options());
    fail(g, 0, 3);
    expect(g.state(4_999)).toBe('open');
    expect(g.state(5_000)).toBe('half_open');
    const probe = permitOf(g.admit('probe', 5_000));
    expect(probe.probe).toBe(true);
    expect(g.admit('other', 5_001)).toEqual({ kind: 'refused', reason: 'circuit_open', retryAfterMs: 1_000 });
    g.release(probe, 'success', 5_100);
    expect(g.state(5_100)).toBe('closed');
    // Closed again with a clean slate: two failures do not reopen it.
    fail(g, 5_200, 2);
    expect(g.state(5_200)).toBe('closed');
  });

  it('reopens for another openMs when the probe fails', () => {
    const g = new ServiceGuard<string>(options());
    fail(g, 0, 3);
    g.release(permitOf(g.admit('probe', 6_000)), 'failure', 6_500);
    expect(g.state(6_500)).toBe('open');
    expect(g.state(11_499)).toBe('open');
    expect(g.state(11_500)).toBe('half_open');
  });

  it('refuses every queued waiter when the circuit opens, and ignores verdicts of calls admitted before', () => {
    const g = new ServiceGuard<string>(options({ maxConcurrent: 3, maxQueued: 5, consecutiveFailures: 2 }));
    const early = permitOf(g.admit('early', 0));
    const a = permitOf(g.admit('a', 0));
    const b = permitOf(g.admit('b', 0));
    g.admit('w1', 0);
    g.admit('w2', 0);
    g.admit('w3', 0);
    expect(g.release(a, 'failure', 10).start.map((s) => s.waiter)).toEqual(['w1']);
    // The second failure opens the circuit: the release hands back every waiter as refused.
    const handoff = g.release(b, 'failure', 20);
    expect(handoff.start).toEqual([]);
    expect(handoff.refuse).toEqual([
      { waiter: 'w2', reason: 'circuit_open', retryAfterMs: 5_000 },
      { waiter: 'w3', reason: 'circuit_open', retryAfterMs: 5_000 },
    ]);
    expect(g.load()).toEqual({ running: 2, queued: 0 });
    // A call admitted while closed finishes after the circuit half-opened: it is no probe and decides nothing.
    const probe = permitOf(g.admit('probe', 5_020));
    g.release(early, 'success', 5_030);
    expect(g.state(5_030)).toBe('half_open');
    g.release(probe, 'failure', 5_040);
    expect(g.state(5_040)).toBe('open');
  });

  it('a neutral verdict (client cancelled) counts for nothing', () => {
    const g = new ServiceGuard<string>(options({ consecutiveFailures: 1 }));
    g.release(permitOf(g.admit('c', 0)), 'neutral', 0);
    expect(g.state(0)).toBe('closed');
    fail(g, 0, 1);
    const probe = permitOf(g.admit('p', 5_000));
    g.release(probe, 'neutral', 5_001);
    expect(g.state(5_001)).toBe('half_open');
    expect(permitOf(g.admit('p2', 5_002)).probe).toBe(true);
  });

  it('takes its limits from the configuration defaults', () => {
    expect(serviceGuardOptions(DEFAULTS.tools)).toEqual({
      maxConcurrent: 64,
      maxQueued: 512,
      consecutiveFailures: 5,
      failureRatio: 0.5,
      minimumCalls: 20,
      windowMs: 10_000,
      openMs: 5_000,
      halfOpenProbes: 1,
    });
  });
});
