/**
 * The refresh worker's counting semaphore. Task durations run on vitest fake
 * timers: the interleavings are the same on every machine, and nothing waits
 * in real time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Semaphore } from '../../../../src/workers/refresh/semaphore.js';
import { sleep } from '../../../helpers/eventually.js';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Runs every timer (and what they start) until none is left, then returns `work`'s result. */
async function drive<T>(work: Promise<T>): Promise<T> {
  await vi.runAllTimersAsync();
  return work;
}

/** Runs tasks through `sem`, recording the highest number running at once. */
function tracker(): { task: <T>(body: () => Promise<T>) => () => Promise<T>; readonly max: number; readonly running: number } {
  let running = 0;
  let max = 0;
  return {
    task: (body) => async () => {
      running++;
      max = Math.max(max, running);
      try {
        return await body();
      } finally {
        running--;
      }
    },
    get max() {
      return max;
    },
    get running() {
      return running;
    },
  };
}

describe('Semaphore', () => {
  it.each([1, 2, 3, 8])('never runs more than %i tasks at once, and runs them all', async (limit) => {
    const sem = new Semaphore(limit);
    const t = tracker();
    const delays = Array.from({ length: 40 }, (_, i) => (i * 7) % 5); // 0–4 ms, 0 included (immediately settled tasks)
    const results = await drive(
      Promise.all(
        delays.map((ms, i) =>
          sem.run(
            t.task(async () => {
              if (ms !== 0) await sleep(ms);
              return i;
            }),
          ),
        ),
      ),
    );
    expect(results).toEqual(delays.map((_, i) => i));
    expect(t.max).toBeLessThanOrEqual(limit);
    expect(t.max).toBe(limit); // and it does use its slots
    expect(t.running).toBe(0);
  });

  it('stays bounded when tasks are started from the completions of others', async () => {
    const sem = new Semaphore(2);
    const t = tracker();
    let started = 0;
    const chain = async (): Promise<void> => {
      if (started >= 60) return;
      started++;
      await sem.run(t.task(() => sleep(started % 3)));
      // Starting the next run the moment a slot frees must not squeeze past a waiter.
      await Promise.all([chain(), chain()]);
    };
    await drive(Promise.all([chain(), chain(), chain()]));
    expect(started).toBe(60);
    expect(t.max).toBeLessThanOrEqual(2);
  });

  it('starts waiting tasks in FIFO order', async () => {
    const sem = new Semaphore(1);
    const order: number[] = [];
    let release!: () => void;
    const first = sem.run(() => new Promise<void>((r) => (release = r)));
    const rest = [1, 2, 3, 4].map((n) => sem.run(async () => void order.push(n)));
    await vi.advanceTimersByTimeAsync(5);
    expect(order).toEqual([]); // all wait behind the first
    release();
    await Promise.all([first, ...rest]);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it('releases the slot of a task that fails, and passes the failure on', async () => {
    const sem = new Semaphore(1);
    await expect(sem.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(
      sem.run(() => {
        throw new Error('sync boom');
      }),
    ).rejects.toThrow('sync boom');
    await expect(sem.run(async () => 'next')).resolves.toBe('next');
  });
});
