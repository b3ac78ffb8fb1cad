/**
 * A one-shot cancellation flag for one call: set by a client disconnect or a
 * `notifications/cancelled`, observed by the upstream exchange (which aborts
 * the Tool Service request) and by the shard (which then sends nothing more).
 * Lighter than an AbortController, which a call would otherwise allocate
 * on the hot path for the rare cancel.
 */
export class CancelSignal {
  private listener: (() => void) | null = null;
  cancelled = false;

  /** Cancels once; later calls do nothing. */
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const l = this.listener;
    this.listener = null;
    l?.();
  }

  /** Runs `fn` on cancel (at most one listener: the call's exchange). */
  onCancel(fn: () => void): void {
    if (this.cancelled) fn();
    else this.listener = fn;
  }
}
