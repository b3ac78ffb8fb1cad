/**
 * One keep-alive HTTP/1.1 connection (plain TCP or TLS) carrying at most one
 * request at a time: no pipelining, so a non-idempotent POST is never queued
 * behind another on a socket that may die, and never sent twice.
 *
 *            connect ok            request written        response complete,
 *  Connecting ─────────► Idle ◄──────────────────── Busy ◄─── reusable ───┐
 *      │        (or straight to Busy          ▲      │                     │
 *      │         when a request waits)        └──────┘  next queued request│
 *      └── refused / timeout / error ──► Closed ◄── not reusable, error, ──┘
 *                                                   abort, idle reaped, bytes while idle
 *
 * Reads go through the pool's shared read buffer (`onread`, no allocation per
 * read) or, when the pool has none, `'data'` events. Timeouts are not timers
 * here: the pool's sweeper looks at `since`, `reads` and the request's
 * deadline (see pool.ts).
 */
import type { Buffer } from 'node:buffer';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Http1Failure, Http1FailureCode } from './errors.js';
import type { Http1Pool } from './pool.js';
import { SlotState, type Http1Request } from './request.js';
import type { ResponseHead } from './response-head.js';
import { ResponseParser, type ParserSink } from './response-parser.js';

/** Connection life states. */
export const enum ConnState {
  Connecting,
  Idle,
  Busy,
  Closed,
}

/** A pooled socket; created and driven by {@link Http1Pool}. */
export class Connection implements ParserSink {
  state = ConnState.Connecting;
  /** The exchange on this connection (Busy), or the one waiting for it to connect (may be null then). */
  current: Http1Request | null = null;
  readonly socket: Socket;
  private readonly parser: ResponseParser;
  /** Date.now() when the current phase began: connecting, request written, or idle. */
  since: number;
  /** Reads so far; the sweeper compares it with `seenReads` to see body activity without a clock read per read. */
  reads = 0;
  seenReads = 0;
  /** When the sweeper (or the head) last saw body activity. */
  activityAt = 0;
  headReceived = false;
  /** How long this connection may stay idle (pool idle timeout, or less when the server's Keep-Alive says so). */
  idleLimitMs = 0;
  private responseComplete = false;
  /** Inside parser.execute: an early finish() may still reuse the connection if the response completes in these bytes. */
  private executing = false;
  /** The system error code of the last socket error. */
  private errno = '';

  constructor(
    private readonly pool: Http1Pool,
    now: number,
  ) {
    this.since = now;
    this.parser = new ResponseParser(pool.options.maxHeaderBytes);
    const readBuffer = pool.readBuffer;
    const onread = readBuffer === null ? undefined : { buffer: readBuffer, callback: this.onRead };
    if (pool.tls !== null) {
      this.socket = tlsConnect({ ...pool.tls, host: pool.host, port: pool.port, ALPNProtocols: ['http/1.1'], ...(onread ? { onread } : {}) });
      this.socket.on('secureConnect', this.onConnect);
    } else {
      this.socket = netConnect({ host: pool.host, port: pool.port, noDelay: true, ...(onread ? { onread } : {}) });
      this.socket.on('connect', this.onConnect);
    }
    this.socket.setNoDelay(true);
    if (onread === undefined) this.socket.on('data', this.onData);
    this.socket.on('error', this.onSocketError);
    this.socket.on('end', this.onSocketEnd);
    this.socket.on('close', this.onSocketClose);
  }

  /** True when an idle connection can take a request (the server has not closed it under us). */
  usable(): boolean {
    const s = this.socket;
    return this.state === ConnState.Idle && !s.destroyed && s.writable && !s.readableEnded;
  }

  /** Writes `req` with one write. The connection must be connected and free. */
  send(req: Http1Request, now: number): void {
    this.state = ConnState.Busy;
    this.current = req;
    req.conn = this;
    req.state = SlotState.Sent;
    this.headReceived = false;
    this.responseComplete = false;
    this.since = now;
    this.parser.expect(this);
    this.socket.write(req.data as Buffer);
  }

  /** The caller gave up on its exchange: destroy the socket, no more callbacks. */
  abort(): void {
    this.current = null;
    this.parser.halt();
    this.destroy();
  }

  /**
   * The caller has what it needs. The connection is kept only when the rest
   * of the response is already in the bytes being parsed; otherwise it is
   * destroyed (nothing waits for a Tool Service to end a stream it should
   * have ended).
   */
  finish(): void {
    this.current = null;
    if (!this.executing) this.abort();
  }

  /** Fails the current exchange (if any) with `failure` and destroys the socket. */
  fail(failure: Http1Failure): void {
    const req = this.current;
    this.current = null;
    this.parser.halt();
    this.destroy();
    if (req !== null) this.pool.settle(req, failure);
  }

  /** A request bound to this connecting socket gave up (deadline, abort); the connection goes on connecting. */
  unbind(): void {
    this.current = null;
  }

  /** Closes the socket; the pool forgets the connection. Idempotent. */
  destroy(): void {
    if (this.state === ConnState.Closed) return;
    this.state = ConnState.Closed;
    this.parser.halt();
    this.socket.destroy();
    this.pool.connectionClosed(this);
  }

  // ── ParserSink ────────────────────────────────────────────────────────────

  onHead(head: ResponseHead): void {
    this.headReceived = true;
    if (this.pool.options.bodyTimeoutMs > 0) {
      this.activityAt = Date.now();
      this.seenReads = this.reads;
    }
    this.current?.handler.onHead(head.status, head);
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    this.current?.handler.onBody(chunk, start, end);
  }

  onComplete(): void {
    // Never start the next exchange from inside the parser: onBytes decides
    // once execute has returned and it knows whether bytes were left over.
    this.responseComplete = true;
  }

  // ── socket events (bound once per connection) ─────────────────────────────

  private readonly onConnect = (): void => {
    if (this.state !== ConnState.Connecting) return;
    this.state = ConnState.Idle;
    const req = this.current;
    if (req !== null) this.send(req, Date.now());
    else this.pool.connectionFree(this);
  };

  private readonly onRead = (nread: number, buf: Buffer): boolean => {
    this.onBytes(buf, 0, nread);
    return true;
  };

  private readonly onData = (chunk: Buffer): void => {
    this.onBytes(chunk, 0, chunk.length);
  };

  private onBytes(buf: Buffer, start: number, end: number): void {
    this.reads++;
    if (this.state !== ConnState.Busy) {
      // Bytes with no request outstanding: never parsed as a response; the connection is discarded.
      this.destroy();
      return;
    }
    const req = this.current;
    this.executing = true;
    const stop = this.parser.execute(buf, start, end);
    this.executing = false;
    if (this.state !== ConnState.Busy) return; // destroyed from a callback (abort)
    const error = this.parser.error;
    if (error !== null) {
      this.fail(new Http1Failure(error.code, error.message, true));
      return;
    }
    if (this.responseComplete) this.completeResponse(stop === end);
    else if (req !== null && this.current === null) this.abort(); // finish() before the response ended
  }

  /** Returns the connection to the pool (or destroys it), then ends the exchange. */
  private completeResponse(nothingLeftOver: boolean): void {
    const req = this.current;
    const head = this.parser.head;
    this.current = null;
    this.parser.idle();
    // A write still in progress means the server answered before reading all
    // of the request: the connection's state is unknown and the caller's
    // buffer may still be in use, so it is not reused.
    const reusable = nothingLeftOver && head.keepAlive && this.socket.writableLength === 0 && !this.pool.closing;
    if (reusable) {
      const limit = this.pool.idleLimit(head.keepAliveTimeoutMs);
      if (limit > 0) {
        this.state = ConnState.Idle;
        this.idleLimitMs = limit;
        this.since = Date.now();
        // Free first: a handler that starts its next exchange from onEnd finds this connection idle.
        this.pool.connectionFree(this);
        if (req !== null) this.pool.settle(req, null);
        return;
      }
    }
    this.destroy();
    if (req !== null) this.pool.settle(req, null);
  }

  private readonly onSocketError = (err: Error & { code?: string }): void => {
    this.errno = err.code ?? err.name;
  };

  private readonly onSocketEnd = (): void => {
    if (this.state === ConnState.Busy && this.current !== null) {
      if (this.parser.eof()) {
        this.completeResponse(true);
        return;
      }
      this.fail(new Http1Failure(Http1FailureCode.Reset, 'the server closed the connection before the response was complete', true, this.errno));
      return;
    }
    // Idle (closed by the server's keep-alive timeout) or connecting: forget it before anyone reuses it.
    this.destroy();
  };

  private readonly onSocketClose = (): void => {
    if (this.state === ConnState.Closed) return;
    const wasConnecting = this.state === ConnState.Connecting;
    const req = this.current;
    this.current = null;
    this.destroy();
    if (req === null) return;
    if (wasConnecting) {
      const refused = this.errno === 'ECONNREFUSED';
      this.pool.settle(
        req,
        new Http1Failure(refused ? Http1FailureCode.ConnectRefused : Http1FailureCode.ConnectFailed, refused ? 'connection refused' : 'the connection could not be established', false, this.errno),
      );
    } else {
      this.pool.settle(req, new Http1Failure(Http1FailureCode.Reset, 'the connection was reset before the response was complete', true, this.errno));
    }
  };
}
