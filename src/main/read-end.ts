/**
 * Work held back until uWS has parsed everything of the read it came from.
 *
 * uWS (20.30 and 20.57 alike, ADR-0001) parses every request of one socket
 * read synchronously, and when a request follows one whose answer is still
 * pending it closes the connection at once and reports the pending one
 * aborted. A side effect started from inside that parse (a `tools/call`
 * handed to its shard) would then run with no one to answer. Queued here,
 * it runs from `setImmediate` — after the event loop's poll phase, so after
 * uWS has finished every read of this iteration — and its owner sees the
 * abort first (issue 11 #3).
 *
 * ```
 *   poll phase:  read → parse req 1 (body complete → enqueue) → parse req 2 → uWS closes, req 1 aborted
 *   check phase: flush → req 1 aborted: dropped, nothing ran
 * ```
 *
 * One queue per consumer; a flush takes the items queued so far (items
 * queued while it runs wait for the next flush). No allocation per item
 * beyond the array slot.
 */
export class ReadEndQueue<T> {
  private items: T[] = [];
  private spare: T[] = [];
  private scheduled = false;

  /** `run` is called once per queued item, in queue order. */
  constructor(private readonly run: (item: T) => void) {}

  /** Runs `item` once the current socket reads are fully parsed. */
  push(item: T): void {
    this.items.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Items waiting for the next flush. */
  get size(): number {
    return this.items.length;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batch = this.items;
    this.items = this.spare;
    try {
      for (let i = 0; i < batch.length; i++) this.run(batch[i] as T);
    } finally {
      batch.length = 0;
      this.spare = batch;
    }
  };
}
