/**
 * The connections to one origin: at most `connections` sockets, a bounded
 * FIFO of calls waiting for one, keep-alive reuse (most recently used first,
 * so surplus sockets go idle and are reaped), and every timeout checked by the
 * agent's one sweeping timer instead of a timer per call.
 *
 * Retry policy: nothing that may have reached the server is ever sent again.
 * The only "retry" is invisible: an idle socket found closed before anything
 * is written on it is dropped and the call takes another (or a new) one. A
 * refused or failed connect fails the call that was waiting for it; a reset,
 * a timeout or a bad response after the write fails the call with
 * `mayHaveReachedServer: true`. Deciding to repeat a call is the caller's
 * business, with that flag in hand.
 *
 * Timeouts (checked every `sweepIntervalMs`, so each may fire up to one
 * interval late):
 *   connectTimeoutMs  TCP (+ TLS) connect                    → CONNECT_TIMEOUT
 *   headersTimeoutMs  request written → final response head  → HEADERS_TIMEOUT
 *   bodyTimeoutMs     no body byte for this long             → BODY_TIMEOUT
 *   per-call timeout  from request(): queue wait included    → DEADLINE
 *   idleTimeoutMs     idle socket closed (or sooner: server's Keep-Alive timeout − keepAliveThresholdMs)
 *
 * ~310 lines: the five timeouts above and the socket accounting they act on
 * (bounded sockets, waiters, idle reaping) are one policy, kept in one place.
 */
import type { Buffer } from 'node:buffer';
import type { ConnectionOptions } from 'node:tls';
import type { Http1Agent } from './agent.js';
import { ConnState, Connection } from './connection.js';
import { Http1Failure, Http1FailureCode } from './errors.js';
import { SlotState, type Http1Request } from './request.js';

/** Limits and timeouts of one origin's pool (all durations in ms; 0 = no such timeout). */
export interface PoolOptions {
  /** Most sockets open to the origin at once. */
  connections: number;
  /** Most calls waiting for a socket; one more fails with QUEUE_FULL. */
  maxQueued: number;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** An idle socket is closed after this long (keep it below the servers' keep-alive timeout). */
  idleTimeoutMs: number;
  /** Safety margin subtracted from a server's `Keep-Alive: timeout=` before reuse. */
  keepAliveThresholdMs: number;
  /** Largest response head (status line + fields), and largest trailer section. */
  maxHeaderBytes: number;
}

/** TLS settings of an `https:` origin (verification is always on). */
export type Http1TlsOptions = Pick<ConnectionOptions, 'ca' | 'cert' | 'key' | 'passphrase' | 'pfx' | 'servername' | 'minVersion' | 'ciphers'>;

/** The pool of one origin; get it from {@link Http1Agent.pool}. */
export class Http1Pool {
  readonly host: string;
  readonly port: number;
  /** Options for tls.connect, or null for `http:`. */
  readonly tls: ConnectionOptions | null;
  closing = false;
  private destroyed = false;
  private readonly conns: Connection[] = [];
  /** Idle connections, most recently used last. */
  private readonly idle: Connection[] = [];
  private queueHead: Http1Request | null = null;
  private queueTail: Http1Request | null = null;
  private queued = 0;
  private closeWaiters: Array<() => void> = [];

  constructor(
    readonly origin: string,
    readonly options: PoolOptions,
    tls: Http1TlsOptions | undefined,
    /** Shared read buffer of the agent (`onread`), or null for 'data' events. */
    readonly readBuffer: Buffer | null,
    private readonly agent: Http1Agent,
  ) {
    const url = new URL(origin);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`not an http(s) origin: ${origin}`);
    this.host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    this.port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    if (url.protocol === 'https:') {
      // SNI carries host names only (RFC 6066 §3), never an IP literal.
      const servername = tls?.servername ?? (/^[\d.]+$|:/.test(this.host) ? undefined : this.host);
      this.tls = { ...tls, ...(servername !== undefined ? { servername } : {}) };
    } else {
      if (tls !== undefined) throw new TypeError(`TLS options given for a plain http origin: ${origin}`);
      this.tls = null;
    }
  }

  /** Number of open sockets (connecting, idle or busy). */
  get size(): number {
    return this.conns.length;
  }

  /** Number of calls waiting for a socket. */
  get pending(): number {
    return this.queued;
  }

  /**
   * Starts one exchange: writes `data` (a complete request, head and body)
   * with one write on a free socket, a new one, or after the calls already
   * waiting. `timeoutMs` bounds the whole call, queue wait included.
   */
  request(req: Http1Request, data: Buffer, timeoutMs: number, now: number = Date.now()): void {
    if (req.state !== SlotState.Free) throw new Error('Http1Request slot is already in use');
    req.data = data;
    req.deadlineAt = now + timeoutMs;
    if (this.closing) {
      this.agent.defer(req, new Http1Failure(Http1FailureCode.Closed, 'the client is closed', false));
      return;
    }
    let conn = this.idle.pop();
    while (conn !== undefined && !conn.usable()) {
      // Closed by the server under us and not yet noticed: drop it before writing anything.
      conn.destroy();
      conn = this.idle.pop();
    }
    if (conn !== undefined) conn.send(req, now);
    else if (this.conns.length < this.options.connections) this.open(req, now);
    else if (this.queued < this.options.maxQueued) this.enqueue(req);
    else {
      this.agent.defer(req, new Http1Failure(Http1FailureCode.QueueFull, `all ${this.options.connections} connections are busy and ${this.queued} calls wait`, false));
      return;
    }
    this.agent.sweepSoon();
  }

  /** Ends `req` without further callbacks; destroys its socket if it was sent. */
  abort(req: Http1Request): void {
    switch (req.state) {
      case SlotState.Free:
        return;
      case SlotState.Failing:
        this.agent.cancelDeferred(req);
        break;
      case SlotState.Queued:
        this.unlink(req);
        break;
      case SlotState.Connecting:
        // The socket goes on connecting and serves the next call; nothing was sent.
        req.conn?.unbind();
        break;
      case SlotState.Sent:
        req.conn?.abort();
        break;
    }
    this.free(req);
  }

  /**
   * Ends `req` without further callbacks because the caller has all it needs
   * (e.g. an NDJSON result frame). Unlike {@link abort}, the socket is kept
   * when the response's end is already among the bytes being parsed.
   */
  finish(req: Http1Request): void {
    if (req.state === SlotState.Sent) {
      req.conn?.finish();
      this.free(req);
    } else this.abort(req);
  }

  /** Graceful: no new calls; waiting and in-flight ones finish; resolves when every socket is closed. */
  close(): Promise<void> {
    this.closing = true;
    for (const conn of this.idle.splice(0)) conn.destroy();
    if (this.conns.length === 0 && this.queued === 0) return Promise.resolve();
    return new Promise((resolve) => this.closeWaiters.push(resolve));
  }

  /** Forced: fails every waiting and in-flight call with CLOSED and closes every socket. */
  destroy(): void {
    this.closing = true;
    this.destroyed = true;
    while (this.queueHead !== null) {
      const req = this.queueHead;
      this.unlink(req);
      this.settle(req, new Http1Failure(Http1FailureCode.Closed, 'the client was destroyed', false));
    }
    for (const conn of this.conns.slice()) {
      const sent = conn.current !== null && conn.current.state === SlotState.Sent;
      conn.fail(new Http1Failure(Http1FailureCode.Closed, 'the client was destroyed', sent));
    }
  }

  /**
   * Checks every deadline and timeout; called by the agent's sweeper.
   * Returns true while the pool has sockets or waiting calls to watch.
   */
  sweep(now: number): boolean {
    const o = this.options;
    for (let req = this.queueHead; req !== null; ) {
      const next = req.next;
      if (now >= req.deadlineAt) {
        this.unlink(req);
        this.settle(req, deadline(false));
      }
      req = next;
    }
    // Iterate a copy: failing a connection removes it from `conns`.
    for (const conn of this.conns.slice()) {
      const req = conn.current;
      switch (conn.state) {
        case ConnState.Connecting:
          if (o.connectTimeoutMs > 0 && now - conn.since >= o.connectTimeoutMs) {
            conn.fail(new Http1Failure(Http1FailureCode.ConnectTimeout, `no connection within ${o.connectTimeoutMs} ms`, false));
          } else if (req !== null && now >= req.deadlineAt) {
            conn.unbind();
            this.settle(req, deadline(false));
          }
          break;
        case ConnState.Busy:
          if (req === null) break;
          if (now >= req.deadlineAt) conn.fail(deadline(true));
          else if (!conn.headReceived) {
            if (o.headersTimeoutMs > 0 && now - conn.since >= o.headersTimeoutMs) {
              conn.fail(new Http1Failure(Http1FailureCode.HeadersTimeout, `no response head within ${o.headersTimeoutMs} ms`, true));
            }
          } else if (o.bodyTimeoutMs > 0) {
            if (conn.reads !== conn.seenReads) {
              conn.seenReads = conn.reads;
              conn.activityAt = now;
            } else if (now - conn.activityAt >= o.bodyTimeoutMs) {
              conn.fail(new Http1Failure(Http1FailureCode.BodyTimeout, `no response bytes for ${o.bodyTimeoutMs} ms`, true));
            }
          }
          break;
        case ConnState.Idle:
          if (now - conn.since >= conn.idleLimitMs) conn.destroy();
          break;
      }
    }
    return this.conns.length > 0 || this.queued > 0;
  }

  // ── used by Connection ────────────────────────────────────────────────────

  /** How long a connection may idle after a response with this `Keep-Alive: timeout` (-1: none); ≤ 0 means do not reuse. */
  idleLimit(serverKeepAliveMs: number): number {
    const o = this.options;
    return serverKeepAliveMs < 0 ? o.idleTimeoutMs : Math.min(o.idleTimeoutMs, serverKeepAliveMs - o.keepAliveThresholdMs);
  }

  /** A connected socket is free: it takes the oldest waiting call, or goes idle (or away when closing). */
  connectionFree(conn: Connection): void {
    const next = this.queueHead;
    if (next !== null) {
      this.unlink(next);
      conn.send(next, Date.now());
    } else if (this.closing) conn.destroy();
    else this.idle.push(conn);
  }

  /** A socket closed; a waiting call may now open a new one. */
  connectionClosed(conn: Connection): void {
    remove(this.conns, conn);
    remove(this.idle, conn);
    if (this.queueHead !== null && !this.destroyed && this.conns.length < this.options.connections) {
      const next = this.queueHead;
      this.unlink(next);
      this.open(next, Date.now());
    }
    if (this.closing && this.conns.length === 0 && this.queued === 0) {
      for (const resolve of this.closeWaiters.splice(0)) resolve();
    }
  }

  /** Ends an exchange: frees the slot, then its terminal callback (onEnd when `failure` is null). */
  settle(req: Http1Request, failure: Http1Failure | null): void {
    this.free(req);
    if (failure === null) req.handler.onEnd();
    else req.handler.onError(failure);
  }

  private free(req: Http1Request): void {
    req.state = SlotState.Free;
    req.conn = null;
    req.data = null;
  }

  private open(req: Http1Request, now: number): void {
    const conn = new Connection(this, now);
    this.conns.push(conn);
    conn.current = req;
    req.conn = conn;
    req.state = SlotState.Connecting;
  }

  private enqueue(req: Http1Request): void {
    req.state = SlotState.Queued;
    req.prev = this.queueTail;
    req.next = null;
    if (this.queueTail !== null) this.queueTail.next = req;
    else this.queueHead = req;
    this.queueTail = req;
    this.queued++;
  }

  private unlink(req: Http1Request): void {
    if (req.prev !== null) req.prev.next = req.next;
    else this.queueHead = req.next;
    if (req.next !== null) req.next.prev = req.prev;
    else this.queueTail = req.prev;
    req.prev = req.next = null;
    this.queued--;
  }
}

function deadline(sent: boolean): Http1Failure {
  return new Http1Failure(Http1FailureCode.Deadline, 'the call deadline passed', sent);
}

function remove<T>(list: T[], item: T): void {
  const i = list.lastIndexOf(item);
  if (i >= 0) list.splice(i, 1);
}
