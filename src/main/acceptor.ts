/**
 * The uWebSockets.js acceptor. Runs on the main thread (acceptor 0) and,
 * with `workers.acceptors > 1`, on extra threads sharing the port
 * (SO_REUSEPORT). It decides every early answer from the route directory
 * before reading or parsing the body, answers `initialize` / `ping` /
 * `tools/list` / notifications itself from the published snapshot bytes, and
 * hands `tools/call` to the owning shard in batches.
 */
import { randomBytes } from 'node:crypto';
import type { MessagePort } from 'node:worker_threads';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { JsonRpcErrorCode } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { AcceptorMetrics, methodLabel } from '../shared/metrics.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import { answerRequest } from '../shared/protocol/answer.js';
import { bodyTooLargeReply, gateMcpRequest, type RequestHead } from '../shared/protocol/gate.js';
import { buildHttpPolicy, type HttpPolicy } from '../shared/protocol/http-policy.js';
import { encodeId, rpcErrorReply } from '../shared/protocol/jsonrpc.js';
import type { Reply } from '../shared/protocol/reply.js';
import type { DirectoryEntry } from '../shared/threads/messages.js';
import { writeReply } from './reply-writer.js';
import { RouteDirectory } from './route-directory.js';
import { ShardDispatcher, type PendingCall } from './shard-dispatcher.js';
import { uWS } from './uws.js';

/** Where an acceptor gets readiness and process-wide metrics (directly on main, by message elsewhere). */
export interface HealthSource {
  readiness(): { status: number; body: string };
  metrics(): Promise<{ contentType: string; text: string }>;
}

/** Construction inputs of an {@link Acceptor}. */
export interface AcceptorOptions {
  index: number;
  config: GatewayConfig;
  shardPorts: readonly MessagePort[];
  health: HealthSource;
  log: Logger;
  /**
   * A `notifications/cancelled` that matched no call of this thread: with
   * several acceptor threads the call may live on another one (the main
   * thread relays it to them; see {@link Acceptor.cancelFromPeer}).
   */
  onUnmatchedCancel?: (cancelKey: string) => void;
}

/** Route + session + JSON-RPC id: what a stateless `notifications/cancelled` can name. */
function cancelKey(routeKey: string, sessionId: string, id: string | number): string {
  return `${routeKey}\u0000${sessionId}\u0000${encodeId(id)}`;
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const NOT_FOUND: Reply = { status: 404, contentType: 'application/json', body: '{"error":"not found"}' };

/** One acceptor thread's HTTP server. */
export class Acceptor {
  readonly directory = new RouteDirectory();
  readonly metrics = new AcceptorMetrics();
  private readonly app: TemplatedApp;
  private readonly policy: HttpPolicy;
  private readonly dispatcher: ShardDispatcher;
  private readonly log: Logger;
  private readonly requestIdPrefix = randomBytes(4).toString('hex');
  private requestCounter = 0;
  private listenSocket: us_listen_socket | null = null;

  constructor(private readonly options: AcceptorOptions) {
    this.log = options.log;
    this.policy = buildHttpPolicy(options.config.server);
    this.dispatcher = new ShardDispatcher(
      options.shardPorts,
      options.config.workers.maxPendingCallsPerShard,
      options.config.streaming.heartbeatMs,
      (call, outcome) => this.record(call.routeKey, 'tools/call', outcome, call.startedAt),
      (routeKey, shard, snapshot) => this.directory.publish(routeKey, shard, snapshot),
    );
    this.app = uWS.App();
    this.app.any('/*', (res, req) => this.route(res, req));
  }

  /** Applies the main thread's route directory (see {@link RouteDirectory.apply}). */
  applyDirectory(entries: readonly DirectoryEntry[], loaded: boolean, pendingReason: string): void {
    this.directory.apply(entries, loaded, pendingReason);
  }

  /** Starts listening; resolves with the bound port (SO_REUSEPORT lets several acceptors share it). */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (token) => {
        if (!token) {
          reject(new Error(`cannot listen on ${host}:${port}`));
          return;
        }
        this.listenSocket = token;
        resolve(uWS.us_socket_local_port(token));
      });
    });
  }

  /** Stops accepting connections; resolves once in-flight calls are answered or `graceMs` passed. */
  async close(graceMs: number): Promise<void> {
    if (this.listenSocket !== null) {
      uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    const deadline = Date.now() + graceMs;
    while (this.dispatcher.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }

  /** The shard died: fail its calls, refuse new ones until {@link shardReplaced}. */
  shardDown(shard: number): void {
    this.dispatcher.shardDown(shard);
  }

  /** The restarted shard's port. */
  shardReplaced(shard: number, port: MessagePort): void {
    this.dispatcher.shardReplaced(shard, port);
  }

  /** A cancel relayed from another acceptor thread. */
  cancelFromPeer(cancelKey: string): void {
    this.dispatcher.cancel(cancelKey);
  }

  /** This thread's metrics as JSON, for aggregation on the main thread. */
  metricsJson(): Promise<MetricObjectJson[]> {
    return this.metrics.registry.getMetricsAsJSON();
  }

  private route(res: HttpResponse, req: HttpRequest): void {
    const path = req.getUrl();
    if (path.startsWith('/mcp') && (path.length === 4 || path.charCodeAt(4) === 47 /* '/' */)) {
      this.handleMcp(res, req, path);
      return;
    }
    const method = req.getMethod();
    if (method === 'get' && path === '/health/live') writeReply(res, { status: 200, contentType: 'application/json', body: '{"status":"live"}' });
    else if (method === 'get' && path === '/health/ready') {
      const r = this.options.health.readiness();
      writeReply(res, { status: r.status, contentType: 'application/json', body: r.body });
    } else if (method === 'get' && path === '/metrics') this.serveMetrics(res);
    else writeReply(res, NOT_FOUND);
  }

  private serveMetrics(res: HttpResponse): void {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    this.options.health.metrics().then(
      (m) => {
        if (!aborted) res.cork(() => writeReply(res, { status: 200, contentType: m.contentType, body: m.text }));
      },
      (err: unknown) => {
        this.log.error({ err: String(err) }, 'metrics collection failed');
        if (!aborted) res.cork(() => writeReply(res, { status: 500, contentType: 'text/plain', body: 'metrics unavailable\n' }));
      },
    );
  }

  private handleMcp(res: HttpResponse, req: HttpRequest, path: string): void {
    const startedAt = performance.now();
    const contentLengthHeader = req.getHeader('content-length');
    const head: RequestHead = {
      method: req.getMethod(),
      path,
      host: req.getHeader('host'),
      origin: req.getHeader('origin'),
      contentType: req.getHeader('content-type'),
      accept: req.getHeader('accept'),
      protocolVersion: req.getHeader('mcp-protocol-version'),
      contentLength: contentLengthHeader === '' ? -1 : Number(contentLengthHeader),
    };
    const gate = gateMcpRequest(head, this.policy, this.directory.lookup);
    if (gate.kind === 'reply') {
      writeReply(res, gate.reply);
      this.record(gate.label === 'unavailable' || gate.label === 'too_large' ? this.routeLabel(path) : '(none)', 'http', gate.label, startedAt);
      return;
    }
    // Everything needed later is copied out of `req` now: it is invalid once this handler returns.
    const clientRequestId = req.getHeader('x-request-id');
    const ctx = {
      requestId: REQUEST_ID_RE.test(clientRequestId) ? clientRequestId : `${this.requestIdPrefix}-${(++this.requestCounter).toString(36)}`,
      sessionId: req.getHeader('mcp-session-id').slice(0, 256),
      traceparent: req.getHeader('traceparent').slice(0, 256),
      sse: gate.wantsSse,
    };
    const { routeKey, route, snapshot } = gate;
    const call: PendingCall = { res, aborted: false, routeKey, startedAt, cancelKey: '' };
    res.onAborted(() => {
      call.aborted = true;
      this.dispatcher.abandon(call);
    });
    this.readBody(res, head.contentLength, (body) => {
      if (call.aborted) return;
      if (body === null) {
        res.cork(() => writeReply(res, bodyTooLargeReply(this.policy), true));
        this.record(routeKey, 'http', 'too_large', startedAt);
        return;
      }
      const decision = answerRequest(body, snapshot);
      if (decision.kind === 'reply') {
        if (decision.cancels !== undefined) {
          const key = cancelKey(routeKey, ctx.sessionId, decision.cancels);
          if (!this.dispatcher.cancel(key)) this.options.onUnmatchedCancel?.(key);
        }
        res.cork(() => writeReply(res, decision.reply));
        this.record(routeKey, methodLabel(decision.method), decision.outcome, startedAt);
        return;
      }
      call.cancelKey = cancelKey(routeKey, ctx.sessionId, decision.id);
      call.rpcIdJson = encodeId(decision.id);
      if (!this.dispatcher.dispatch(route.shard, routeKey, ctx, body, call)) {
        const reply = rpcErrorReply(decision.id, JsonRpcErrorCode.TransportError, `shard queue is full (workers.maxPendingCallsPerShard) or the shard is restarting; retry later`, {
          status: 503,
          headers: [['retry-after', String(this.policy.retryAfterSeconds)]],
        });
        res.cork(() => writeReply(res, reply));
        this.log.warn({ requestId: ctx.requestId, route: routeKey }, 'shard queue full; call refused');
        this.record(routeKey, 'tools/call', 'queue_full', startedAt);
      }
    });
  }

  /**
   * Reads the body, enforcing the limit while reading (a missing or lying
   * Content-Length cannot bypass it). Chunks are copied: uWS reuses their memory.
   */
  private readBody(res: HttpResponse, contentLength: number, done: (body: Uint8Array | null) => void): void {
    const limit = this.policy.maxBodyBytes;
    let buf: Buffer | null = contentLength > 0 ? Buffer.allocUnsafe(contentLength) : null;
    let size = 0;
    let failed = false;
    res.onData((chunk, isLast) => {
      if (failed) return;
      const n = chunk.byteLength;
      if (size + n > limit) {
        failed = true;
        done(null);
        return;
      }
      if (buf === null || size + n > buf.length) {
        const next = Buffer.allocUnsafe(Math.min(limit, Math.max(1024, (size + n) * 2)));
        if (buf !== null) buf.copy(next, 0, 0, size);
        buf = next;
      }
      buf.set(new Uint8Array(chunk), size);
      size += n;
      if (isLast) done(buf.subarray(0, size));
    });
  }

  /** Label for a route that passed the grammar and directory checks (else a fixed label: bounded cardinality). */
  private routeLabel(path: string): string {
    const key = path.slice('/mcp/'.length);
    return this.directory.lookup(key) ? key : '(none)';
  }

  private record(route: string, method: string, outcome: string, startedAt: number): void {
    this.metrics.record(route, method, outcome, (performance.now() - startedAt) / 1000);
  }
}
