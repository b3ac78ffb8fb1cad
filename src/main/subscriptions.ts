/**
 * `subscriptions/listen` streams of one acceptor thread (2026-07-28,
 * basic/patterns/subscriptions.mdx): each is the SSE response of the request
 * that opened it, held open until the client closes it, its route goes
 * away, or the gateway shuts down.
 *
 *   POST subscriptions/listen ──► 200 text/event-stream, X-Accel-Buffering: no
 *     data: notifications/subscriptions/acknowledged   (first, always; the filter the gateway honours)
 *     data: notifications/tools/list_changed           (each time the route's tools/list bytes change,
 *                                                       when the filter asked for toolsListChanged)
 *     : keep-alive                                      (every subscriptions.keepAliveMs)
 *     data: the listen request's result                (graceful end: route removed, shutdown)
 *
 * Every message carries `_meta["io.modelcontextprotocol/subscriptionId"]` =
 * the listen request's id. Nothing else travels here (progress and log
 * notifications stay on their own request's stream). The number of open
 * streams is bounded (`subscriptions.maxPerAcceptor`); one more is refused
 * by the caller with 503. One timer serves every stream's keep-alive.
 *
 * List changes arrive from the main thread (`CatalogInstaller` →
 * `AcceptorFanout`) after this thread's route directory already serves the
 * new snapshot, so a client that re-reads `tools/list` on the notification
 * gets the new catalog.
 */
import { Buffer } from 'node:buffer';
import type { HttpResponse } from 'uWebSockets.js';
import { META, SERVER_INFO_META_MEMBER } from '../shared/protocol/modern.js';

/** Stream limits (`subscriptions.*`). */
export interface SubscriptionOptions {
  maxPerAcceptor: number;
  keepAliveMs: number;
}

interface Subscription {
  readonly res: HttpResponse;
  readonly routeKey: string;
  readonly idText: string;
  readonly toolsListChanged: boolean;
  closed: boolean;
}

const KEEP_ALIVE = Buffer.from(': keep-alive\n\n');

function sseEvent(json: string): string {
  return `event: message\ndata: ${json}\n\n`;
}

/** The open `subscriptions/listen` streams of one acceptor thread. */
export class Subscriptions {
  private readonly byRoute = new Map<string, Set<Subscription>>();
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  private closing = false;

  constructor(private readonly options: SubscriptionOptions) {}

  /** Streams open right now. */
  get open(): number {
    return this.count;
  }

  /**
   * Opens a stream on `res` (inside the corked body callback): headers and
   * the acknowledgment. Returns false, writing nothing, when the limit is
   * reached or the thread is closing; the caller answers 503 then.
   */
  listen(res: HttpResponse, routeKey: string, idText: string, toolsListChanged: boolean): boolean {
    if (this.closing || this.count >= this.options.maxPerAcceptor) return false;
    const sub: Subscription = { res, routeKey, idText, toolsListChanged, closed: false };
    // Replaces the pooled request's abort handler: that object goes back to its pool now, the stream stays.
    res.onAborted(() => this.remove(sub));
    res.writeStatus('200 OK');
    res.writeHeader('content-type', 'text/event-stream');
    res.writeHeader('cache-control', 'no-cache');
    res.writeHeader('x-accel-buffering', 'no');
    const filter = toolsListChanged ? '{"toolsListChanged":true}' : '{}';
    res.write(sseEvent(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"${META.subscriptionId}":${idText}},"notifications":${filter}}}`));
    let set = this.byRoute.get(routeKey);
    if (set === undefined) {
      set = new Set();
      this.byRoute.set(routeKey, set);
    }
    set.add(sub);
    this.count++;
    if (this.timer === null && this.options.keepAliveMs > 0) {
      this.timer = setInterval(() => this.keepAlive(), this.options.keepAliveMs);
      this.timer.unref();
    }
    return true;
  }

  /** The route's `tools/list` changed: one notification per stream that asked for it. */
  listChanged(routeKey: string): void {
    const set = this.byRoute.get(routeKey);
    if (set === undefined) return;
    for (const sub of set) {
      if (!sub.toolsListChanged || sub.closed) continue;
      const event = sseEvent(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"${META.subscriptionId}":${sub.idText}}}}`);
      sub.res.cork(() => sub.res.write(event));
    }
  }

  /** The route no longer exists: its streams end gracefully. */
  routeRemoved(routeKey: string): void {
    const set = this.byRoute.get(routeKey);
    if (set === undefined) return;
    for (const sub of [...set]) this.end(sub);
  }

  /** Accepting streams again: the acceptor listens again after a close (gateway.ts re-listens on an ephemeral port to share it). */
  reopen(): void {
    this.closing = false;
  }

  /** Shutdown: every stream gets its graceful-closure response and ends; later listens are refused until {@link reopen}. Idempotent. */
  closeAll(): void {
    this.closing = true;
    for (const set of [...this.byRoute.values()]) for (const sub of [...set]) this.end(sub);
  }

  /** Graceful closure (subscriptions.mdx): the listen request's own result, tagged with the subscription id, then the end of the stream. */
  private end(sub: Subscription): void {
    if (sub.closed) return;
    const result = `{"jsonrpc":"2.0","id":${sub.idText},"result":{"resultType":"complete",${SERVER_INFO_META_MEMBER.slice(0, -1)},"${META.subscriptionId}":${sub.idText}}}}`;
    this.remove(sub);
    sub.res.cork(() => sub.res.end(sseEvent(result)));
  }

  private remove(sub: Subscription): void {
    if (sub.closed) return;
    sub.closed = true;
    const set = this.byRoute.get(sub.routeKey);
    if (set?.delete(sub) && set.size === 0) this.byRoute.delete(sub.routeKey);
    this.count--;
    if (this.count === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private keepAlive(): void {
    for (const set of this.byRoute.values()) {
      for (const sub of set) sub.res.cork(() => sub.res.write(KEEP_ALIVE));
    }
  }
}
