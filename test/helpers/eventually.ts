/**
 * The one polling helper of the test suite, for tests that wait on another
 * thread or process (a gateway's worker threads, a redis-server, a socket
 * closing): every wait is bounded and fails with what it waited for. Never a
 * wall-clock assertion: a slow machine makes a test slower, not red.
 *
 * Code that runs on the test's own thread with timers of its own (the
 * refresher's backoff) takes an injected clock instead of being waited for.
 */

/** Resolves after `ms`. Only for pacing a loop, never to "let something happen": wait for the thing instead. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Default bound of a wait: long enough for a busy 2-core machine, short of vitest's 20 s test timeout. */
export const WAIT_MS = 10_000;

/**
 * Polls `condition` every `intervalMs` until it holds; throws
 * `timed out waiting until <what>` after `timeoutMs`. `what` may be a function
 * so the message can describe the state at the deadline.
 */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string | (() => string), timeoutMs = WAIT_MS, intervalMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${typeof what === 'string' ? what : what()}`);
    await sleep(intervalMs);
  }
}

/** Retries `fn` (typically a block of `expect`s) every 25 ms until it stops throwing; rethrows its last error at the deadline. */
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
