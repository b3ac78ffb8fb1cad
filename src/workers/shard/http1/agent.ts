/**
 * Entry point of the lean HTTP/1.1 client: one {@link Http1Pool} per origin,
 * created on first use, plus what every pool shares on this thread — the read
 * buffer (`onread`: the kernel copies into it, each read is parsed before the
 * next one, so one buffer serves every socket), the one sweeping timer that
 * checks every timeout, and the list of calls refused before any I/O whose
 * `onError` runs on the next microtask (never inside `request()`).
 *
 * What it deliberately does not do (ADR-0005): pipelining, HTTP/2, redirects,
 * retries of anything that may have reached the server, request bodies
 * streamed in pieces, response decompression, proxies, HEAD requests (the
 * parser would wait for a body).
 */
import { Buffer } from 'node:buffer';
import type { Http1Failure } from './errors.js';
import { Http1Pool, type Http1TlsOptions, type PoolOptions } from './pool.js';
import { SlotState, type Http1Request } from './request.js';

/** Per-origin settings (e.g. the credentials of one Tool Service). */
export interface OriginOptions {
  /** Required for an `https:` origin that needs a private CA, a client certificate (mTLS) or another SNI name. */
  tls?: Http1TlsOptions;
}

/** Agent settings; pool limits apply to each origin separately. */
export interface Http1AgentOptions extends PoolOptions {
  /** How often the sweeper checks timeouts; every timeout may fire up to this late. */
  sweepIntervalMs: number;
  /** Size of the shared `onread` buffer; 0 = use 'data' events (a fresh buffer per read). */
  readBufferBytes: number;
  /** Settings for an origin, asked once when its pool is created. */
  originOptions?: (origin: string) => OriginOptions | undefined;
}

/** Defaults: keep-alive below common server timeouts (Node 5 s), undici-like connect/header limits. */
export const HTTP1_DEFAULTS: Readonly<Http1AgentOptions> = {
  connections: 64,
  maxQueued: 1024,
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 0,
  bodyTimeoutMs: 0,
  idleTimeoutMs: 4_000,
  keepAliveThresholdMs: 1_000,
  maxHeaderBytes: 16 * 1024,
  sweepIntervalMs: 50,
  readBufferBytes: 64 * 1024,
};

/** Pools per origin with one sweeping timer; `close()` is graceful and `destroy()` forced, both idempotent. */
export class Http1Agent {
  readonly options: Readonly<Http1AgentOptions>;
  private readonly pools = new Map<string, Http1Pool>();
  private readonly readBuffer: Buffer | null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Calls refused before any I/O, failed on the next microtask (parallel arrays, reused). */
  private deferredReqs: Array<Http1Request | null> = [];
  private deferredFailures: Http1Failure[] = [];
  private flushQueued = false;

  constructor(options: Partial<Http1AgentOptions> = {}) {
    const o: Http1AgentOptions = { ...HTTP1_DEFAULTS, ...options };
    for (const key of ['connections', 'sweepIntervalMs', 'maxHeaderBytes'] as const) {
      if (!Number.isInteger(o[key]) || o[key] < 1) throw new RangeError(`${key} must be a positive integer (got ${o[key]})`);
    }
    for (const key of ['maxQueued', 'connectTimeoutMs', 'headersTimeoutMs', 'bodyTimeoutMs', 'idleTimeoutMs', 'keepAliveThresholdMs', 'readBufferBytes'] as const) {
      if (!Number.isInteger(o[key]) || o[key] < 0) throw new RangeError(`${key} must be an integer ≥ 0 (got ${o[key]})`);
    }
    this.options = Object.freeze(o);
    this.readBuffer = o.readBufferBytes > 0 ? Buffer.allocUnsafe(o.readBufferBytes) : null;
  }

  /** The pool of `origin` (`http://host:port` or `https://…`); callers keep the reference for their hot path. */
  pool(origin: string): Http1Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Http1Pool(origin, this.options, this.options.originOptions?.(origin)?.tls, this.readBuffer, this);
      if (this.closed) pool.closing = true;
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Graceful: new calls fail with CLOSED, calls already accepted finish; resolves when every socket is closed. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.stopSweeping();
  }

  /** Forced: every pending call fails with CLOSED now and every socket is destroyed. */
  destroy(): void {
    this.closed = true;
    for (const p of this.pools.values()) p.destroy();
    this.stopSweeping();
  }

  // ── used by the pools ─────────────────────────────────────────────────────

  /** Makes sure the sweeper runs (it stops itself when no pool has anything to watch). */
  sweepSoon(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(this.sweep, this.options.sweepIntervalMs);
    this.timer.unref();
  }

  /** Fails `req` with `failure` on the next microtask. */
  defer(req: Http1Request, failure: Http1Failure): void {
    req.state = SlotState.Failing;
    this.deferredReqs.push(req);
    this.deferredFailures.push(failure);
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(this.flushDeferred);
    }
  }

  /** `req` was aborted before its deferred failure ran. */
  cancelDeferred(req: Http1Request): void {
    const i = this.deferredReqs.indexOf(req);
    if (i >= 0) this.deferredReqs[i] = null;
  }

  private readonly flushDeferred = (): void => {
    this.flushQueued = false;
    const reqs = this.deferredReqs;
    const failures = this.deferredFailures;
    this.deferredReqs = [];
    this.deferredFailures = [];
    for (let i = 0; i < reqs.length; i++) {
      const req = reqs[i];
      if (req === null || req === undefined) continue;
      req.state = SlotState.Free;
      req.data = null;
      req.handler.onError(failures[i] as Http1Failure);
    }
  };

  private readonly sweep = (): void => {
    const now = Date.now();
    let active = false;
    for (const pool of this.pools.values()) if (pool.sweep(now)) active = true;
    if (!active) this.stopSweeping();
  };

  private stopSweeping(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
