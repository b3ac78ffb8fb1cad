/**
 * The SPSC ring between real worker threads (the built dist/ code, as the
 * gateway runs it): ordered, byte-exact delivery under backlog and chunking,
 * no lost wake-up in a ping-pong, and threads that can exit. Every wait is
 * bounded; a stall fails the test instead of hanging it.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createRing, RingField } from '../../dist/src/shared/threads/ring.js';
import type { RingWorkerData, RingWorkerResult } from '../../dist/test/fixtures/ring-worker.js';

const SCRIPT = new URL('../../dist/test/fixtures/ring-worker.js', import.meta.url);
const STALL_MS = 60_000;
const workers: Worker[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()));
});

function spawn(data: RingWorkerData): { worker: Worker; result: Promise<RingWorkerResult>; ready: Promise<void>; exited: Promise<number> } {
  const worker = new Worker(SCRIPT, { workerData: data });
  workers.push(worker);
  const exited = once(worker, 'exit').then(([code]) => code as number);
  const failure = new Promise<never>((_, reject) => {
    worker.once('error', reject);
  });
  const ready = Promise.race([new Promise<void>((resolve) => worker.on('message', (m: RingWorkerResult) => m.type === 'ready' && resolve())), failure]);
  const result = Promise.race([
    new Promise<RingWorkerResult>((resolve) => worker.on('message', (m: RingWorkerResult) => m.type !== 'ready' && resolve(m))),
    failure,
    exited.then((code) => {
      throw new Error(`worker ${data.role} exited (${code}) before its result`);
    }),
  ]);
  // Avoid unhandled rejections from the races nobody awaits.
  result.catch(() => undefined);
  ready.catch(() => undefined);
  return { worker, result, ready, exited };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms (lost wake-up?)`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

describe('ring between two worker threads', () => {
  it(
    'delivers 200k frames of random sizes (chunked, backlogged, refused and retried) in order and byte-exact',
    async () => {
      const ring = createRing(16 * 1024);
      const count = 200_000;
      const consumer = spawn({ role: 'consume', ring, count, seed: 42 });
      await consumer.ready;
      const producer = spawn({ role: 'produce', ring, count, seed: 42, maxBacklogBytes: 64 * 1024 });
      const [sent, received] = await within(Promise.all([producer.result, consumer.result]), STALL_MS, 'the 200k-frame stream');
      expect(received).toMatchObject({ type: 'done', frames: count });
      expect(sent).toMatchObject({ type: 'done', frames: count });
      if (sent.type !== 'done' || received.type !== 'done') return;
      expect(received.bytes).toBe(sent.bytes);
      // The run exercised what it claims to: oversized frames and a backlog (the ring is small).
      expect(sent.chunked).toBeGreaterThan(1000);
      expect(sent.backlogged).toBeGreaterThan(0);
      producer.worker.postMessage('stop');
      consumer.worker.postMessage('stop');
      expect(await within(Promise.all([producer.exited, consumer.exited]), STALL_MS, 'worker exit')).toEqual([0, 0]);
    },
    2 * STALL_MS,
  );

  it(
    'ping-pong over a request ring and an answer ring loses no wake-up (1 in flight, then random windows)',
    async () => {
      const requests = createRing(4096);
      const answers = createRing(4096);
      const echo = spawn({ role: 'echo', requests, answers });
      await echo.ready;
      const ping = spawn({ role: 'ping', requests, answers, rounds: 40_000, seed: 7 });
      const result = await within(ping.result, STALL_MS, 'the ping-pong');
      expect(result).toMatchObject({ type: 'done', frames: 40_000 });
      echo.worker.postMessage('stop');
      ping.worker.postMessage('stop');
      expect(await within(Promise.all([echo.exited, ping.exited]), STALL_MS, 'worker exit')).toEqual([0, 0]);
    },
    2 * STALL_MS,
  );

  it('a thread whose reader was closed exits, and leaves no waiter on the ring', async () => {
    const ring = createRing(4096);
    const idle = spawn({ role: 'idle-reader', ring, keepPort: true });
    await idle.ready;
    idle.worker.postMessage('stop');
    expect(await within(idle.exited, STALL_MS, 'worker exit')).toBe(0);
    expect(Atomics.notify(new Int32Array(ring.control), RingField.Tail)).toBe(0);
  });

  it('an armed reader does not keep its thread alive: the owner must (its port or sockets do)', async () => {
    const ring = createRing(4096);
    const idle = spawn({ role: 'idle-reader', ring, keepPort: false });
    expect(await within(idle.exited, STALL_MS, 'worker exit')).toBe(0);
  });
});
