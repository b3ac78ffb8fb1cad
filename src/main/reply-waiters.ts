/**
 * Request/response over a worker's parent port for the rare control queries
 * (metrics scrape), with a timeout so a stuck thread cannot hang a scrape.
 */

/** Pending replies keyed by request id. */
export class ReplyWaiters<T> {
  private readonly waiting = new Map<number, { resolve(v: T): void; timer: NodeJS.Timeout }>();
  private nextId = 1;

  /** Registers a waiter and returns its id and promise; resolves with `fallback` after `timeoutMs`. */
  create(timeoutMs: number, fallback: T): { id: number; promise: Promise<T> } {
    const id = this.nextId++;
    const promise = new Promise<T>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(fallback);
      }, timeoutMs);
      timer.unref();
      this.waiting.set(id, { resolve, timer });
    });
    return { id, promise };
  }

  /** Completes a waiter; unknown ids (late replies after a timeout) are ignored. */
  settle(id: number, value: T): void {
    const w = this.waiting.get(id);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiting.delete(id);
    w.resolve(value);
  }
}
