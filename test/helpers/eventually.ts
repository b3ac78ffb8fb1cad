/** Polling helpers for tests that wait on another thread or process: bounded, never a wall-clock assertion. */

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Retries `fn` every 25 ms until it stops throwing; rethrows its last error at the deadline. */
export async function eventually<T>(fn: () => T | Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
    await sleep(25);
  }
}
