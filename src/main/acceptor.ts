/**
 * The uWebSockets.js acceptor. Runs on the main thread (acceptor 0) and,
 * with `workers.acceptors > 1`, on extra threads sharing the port
 * (SO_REUSEPORT). It decides every early answer from the route directory
 * before reading or parsing the body, answers `initialize` / `ping` /
 * `tools/list` / notifications itself from the snapshot bytes, checks
 * `tools/call` params and hands the call to the owning shard
 * (`call-dispatcher.ts`), which answers through this thread: the acceptor
 * writes the JSON-RPC envelope of every answer.
 */
import { randomBytes } from 'node:crypto';
import uWS, { type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket } from 'uWebSockets.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { AcceptorMetrics, methodLabel } from '../shared/metrics.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import { answerRequest, type ForwardCall } from '../shared/protocol/answer.js';
import { validRequestId, validSessionId, validTraceparent } from '../shared/protocol/context-headers.js';
import { bodyTooLargeReply, gateMcpRequest, type RequestHead } from '../shared/protocol/gate.js';
import { buildHttpPolicy, type HttpPolicy } from '../shared/protocol/http-policy.js';
import { encodeId, errorResponseForIdText } from '../shared/protocol/jsonrpc.js';
import type { Reply } from '../shared/protocol/reply.js';
import type { CallChannelEnd, RouteUnavailable, RouteUpdate } from '../shared/threads/messages.js';
import { CallDispatcher, type DispatchRefusal } from './call-dispatcher.js';
import { RequestPool, type McpRequest, type RequestSink } from './mcp-request.js';
import { writeReply } from './reply-writer.js';
import { RouteDirectory } from './route-directory.js';

/** Where an acceptor gets readiness and process-wide metrics (directly on main, by message elsewhere). */
export interface HealthSource {
  readiness(): { status: number; body: string };
  metrics(): Promise<{ contentType: string; text: string }>;
}

/** Construction inputs of an {@link Acceptor}. */
export interface AcceptorOptions {
  index: number;
  config: GatewayConfig;
  /** Index = shard index. */
  channels: readonly CallChannelEnd[];
  health: HealthSource;
  log: Logger;
  /**
   * A `notifications/cancelled` that matched no call of this thread: with
   * several acceptor threads the call may live on another one (the main
   * thread relays it to them; see {@link Acceptor.cancelFromPeer}).
   */
  onUnmatchedCancel?: (routeKey: string, sessionId: string, idText: string) => void;
}

const NOT_FOUND: Reply = { status: 404, contentType: 'application/json', body: '{"error":"not found"}' };
const REFUSAL: Record<DispatchRefusal, { code: GatewayErrorCode; message: string; outcome: string }> = {
  full: {
    code: GatewayErrorCode.ShardQueueFull,
    message: 'Service Unavailable: the shard serving this route has workers.maxPendingCallsPerShard calls in flight; retry later',
    outcome: 'queue_full',
  },
  down: {
    code: GatewayErrorCode.ShardUnavailable,
    message: 'Service Unavailable: the shard serving this route is restarting; retry later',
    outcome: 'shard_unavailable',
  },
};

/** One acceptor thread's HTTP server. */
export class Acceptor implements RequestSink {
  readonly directory = new RouteDirectory();
  readonly metrics = new AcceptorMetrics();
  private readonly app: TemplatedApp;
  private readonly policy: HttpPolicy;
  private readonly calls: CallDispatcher;
  private readonly requests: RequestPool;
  private readonly log: Logger;
  private readonly requestIdPrefix = randomBytes(4).toString('hex');
  private requestCounter = 0;
  private listenSocket: us_listen_socket | null = null;

  constructor(private readonly options: AcceptorOptions) {
    this.log = options.log;
    this.policy = buildHttpPolicy(options.config.server);
    this.requests = new RequestPool(this);
    this.calls = new CallDispatcher(
      options.channels,
      options.config.workers.maxPendingCallsPerShard,
      options.config.streaming.heartbeatMs,
      options.config.server.retryAfterSeconds,
      options.config.workers.maxChannelBacklogBytes,
      (req, outcome) => this.callDone(req, outcome),
    );
    this.app = uWS.App();
    this.app.any('/*', (res, req) => this.route(res, req));
  }

  /** Applies main's route updates (see {@link RouteDirectory.apply}). */
  applyRoutes(updates: readonly RouteUpdate[], loaded: boolean, pending: RouteUnavailable): void {
    this.directory.apply(updates, loaded, pending);
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
    while (this.calls.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }

  /** Releases the call channels (after {@link close}; the thread is going away). */
  closeChannels(): void {
    this.calls.close();
  }

  /** The shard died: fail its calls, refuse new ones until {@link shardReplaced}. */
  shardDown(shard: number): void {
    this.calls.shardDown(shard);
  }

  /** The restarted shard's channel. */
  shardReplaced(shard: number, channel: CallChannelEnd): void {
    this.calls.shardReplaced(shard, channel);
  }

  /** A cancel relayed from another acceptor thread. */
  cancelFromPeer(routeKey: string, sessionId: string, idText: string): void {
    this.calls.cancel(routeKey, sessionId, idText);
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
        this.log.error({ err }, 'metrics collection failed');
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
    const r = this.requests.acquire();
    r.startedAt = startedAt;
    r.routeKey = gate.routeKey;
    r.snapshot = gate.snapshot;
    r.shard = gate.route.shard;
    r.sse = gate.wantsSse;
    // Context headers that are not well-formed are dropped at the edge (treated as absent), never forwarded.
    r.requestId = validRequestId(req.getHeader('x-request-id')) ?? `${this.requestIdPrefix}-${(++this.requestCounter).toString(36)}`;
    r.sessionId = validSessionId(req.getHeader('mcp-session-id')) ?? '';
    r.traceparent = validTraceparent(req.getHeader('traceparent')) ?? '';
    r.begin(res, head.contentLength, this.policy.maxBodyBytes);
  }

  onBodyTooLarge(r: McpRequest): void {
    const res = r.res;
    if (res !== null && !r.aborted) writeReply(res, bodyTooLargeReply(this.policy), true);
    this.record(r.routeKey, 'http', 'too_large', r.startedAt);
    // Not pooled again: uWS may still deliver the rest of this body to the object's handlers.
    r.state = 'free';
  }

  onAborted(r: McpRequest): void {
    if (r.state === 'calling') this.calls.abandon(r);
    else this.requests.release(r);
  }

  onBody(r: McpRequest, body: Buffer): void {
    const res = r.res;
    const snapshot = r.snapshot;
    if (res === null || snapshot === null || r.aborted) return;
    const decision = answerRequest(body, snapshot);
    if (decision.kind === 'forward') {
      this.forward(r, res, decision);
      return;
    }
    if (decision.cancels !== undefined) {
      const idText = encodeId(decision.cancels);
      if (!this.calls.cancel(r.routeKey, r.sessionId, idText)) this.options.onUnmatchedCancel?.(r.routeKey, r.sessionId, idText);
    }
    // onData runs corked (uWS corks a socket while it processes its input), so this is one write.
    writeReply(res, decision.reply);
    this.record(r.routeKey, methodLabel(decision.method), decision.outcome, r.startedAt);
    this.requests.release(r);
  }

  private forward(r: McpRequest, res: HttpResponse, call: ForwardCall): void {
    r.idText = call.idText;
    r.toolName = call.toolName;
    r.argumentsJson = call.argumentsJson;
    r.progressTokenJson = call.progressTokenJson;
    r.logLevel = call.logLevel;
    const refusal = this.calls.dispatch(r.shard, r);
    if (refusal === null) return;
    const why = REFUSAL[refusal];
    writeReply(res, {
      status: 503,
      contentType: 'application/json',
      headers: [['retry-after', String(this.policy.retryAfterSeconds)]],
      body: errorResponseForIdText(call.idText, JsonRpcErrorCode.TransportError, why.message, { reason: why.code }),
    });
    this.log.warn({ requestId: r.requestId, route: r.routeKey, reason: why.code }, 'tool call refused');
    this.record(r.routeKey, 'tools/call', why.outcome, r.startedAt);
    this.requests.release(r);
  }

  private callDone(r: McpRequest, outcome: string): void {
    this.record(r.routeKey, 'tools/call', outcome, r.startedAt);
    // A cancelled call's connection is being closed, and uWS may still report its abort to this object: not pooled again.
    if (outcome === 'cancelled') r.state = 'free';
    else this.requests.release(r);
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
