/**
 * The uWebSockets.js acceptor. Runs on the main thread (acceptor 0) and,
 * with `workers.acceptors > 1`, on extra threads sharing the port
 * (SO_REUSEPORT). It owns the HTTP server and this thread's route
 * directory; MCP requests go to its {@link McpEndpoint} (which answers
 * `initialize` / `ping` / `tools/list` / notifications from the snapshot
 * bytes and hands `tools/call` to the owning shard), the operating
 * endpoints to `ops-endpoints.ts`.
 */
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import type { Logger } from '../shared/log.js';
import { AcceptorMetrics } from '../shared/metrics.js';
import type { MetricObjectJson } from '../shared/metrics-types.js';
import type { CallChannelEnd, RouteUnavailable, RouteUpdate } from '../shared/threads/messages.js';
import type { Tracer } from '../shared/tracing/tracer.js';
import { KNOWN_METHODS, HttpEdge } from './http-edge.js';
import { RequestHeadCopy } from './head-guard.js';
import { McpEndpoint } from './mcp-endpoint.js';
import { notFound, serveOps, type HealthSource } from './ops-endpoints.js';
import { writeReply } from './reply-writer.js';
import { RouteDirectory } from './route-directory.js';
import { uWS } from './uws.js';

/** Construction inputs of an {@link Acceptor}. */
export interface AcceptorOptions {
  index: number;
  config: GatewayConfig;
  /** Index = shard index. */
  channels: readonly CallChannelEnd[];
  health: HealthSource;
  log: Logger;
  /** This thread's tracer, or null when tracing is off. */
  tracer: Tracer | null;
  /**
   * A `notifications/cancelled` that matched no call of this thread: with
   * several acceptor threads the call may live on another one (the main
   * thread relays it to them; see {@link Acceptor.cancelFromPeer}).
   */
  onUnmatchedCancel?: (routeKey: string, sessionId: string, idText: string) => void;
}

/** One acceptor thread's HTTP server. */
export class Acceptor {
  readonly directory = new RouteDirectory();
  readonly metrics = new AcceptorMetrics();
  private readonly app: TemplatedApp;
  private readonly mcp: McpEndpoint;
  /** The head of the request being routed (one copy per thread, reused; head-guard.ts). */
  private readonly head = new RequestHeadCopy();
  private readonly edge: HttpEdge;
  private readonly log: Logger;
  private listenSocket: us_listen_socket | null = null;
  /** With an admin listener (`server.admin.port`), this port serves only `/mcp/*`. */
  private readonly servesOps: boolean;

  constructor(private readonly options: AcceptorOptions) {
    this.log = options.log;
    this.servesOps = options.config.server.admin.port === null;
    this.mcp = new McpEndpoint({
      config: options.config,
      channels: options.channels,
      directory: this.directory,
      metrics: this.metrics,
      log: options.log,
      tracer: options.tracer,
      ...(options.onUnmatchedCancel ? { onUnmatchedCancel: options.onUnmatchedCancel } : {}),
    });
    this.edge = new HttpEdge(this.metrics);
    this.metrics.watchChannels(() => this.mcp.calls.channelStats(options.index));
    this.app = uWS.App();
    this.app.any('/*', (res, req) => this.route(res, req));
  }

  /** Applies main's route updates (see {@link RouteDirectory.apply}); a removed route's subscriptions end. */
  applyRoutes(updates: readonly RouteUpdate[], loaded: boolean, pending: RouteUnavailable): void {
    this.directory.apply(updates, loaded, pending);
    for (const u of updates) if ('removed' in u) this.mcp.subscriptions.routeRemoved(u.routeKey);
  }

  /** These routes' `tools/list` changed, and this thread's directory already serves the new snapshots: notify their subscribers. */
  listChanged(routeKeys: readonly string[]): void {
    for (const key of routeKeys) this.mcp.subscriptions.listChanged(key);
  }

  /** Starts listening; resolves with the bound port (SO_REUSEPORT lets several acceptors share it). */
  listen(host: string, port: number): Promise<number> {
    this.mcp.subscriptions.reopen();
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

  /** The drain began: every answer from now on carries `Connection: close` (docs/operations.md "Drain sequence"). */
  startDrain(): void {
    this.mcp.startDrain();
  }

  /**
   * Closes the listener (connections already open are still served), waits
   * until every open request is answered or `deadline` (epoch ms) passes,
   * and answers those still open then with `SHUTTING_DOWN`. Resolves with
   * how many had to be answered so.
   */
  async close(deadline: number): Promise<number> {
    this.stopListening();
    // Open subscriptions/listen streams get their graceful-closure result and end now: they would hold the drain to its deadline.
    this.mcp.subscriptions.closeAll();
    while (this.mcp.openRequests > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    let failed = 0;
    if (this.mcp.openRequests > 0) {
      failed = this.mcp.failOpen();
      this.log.warn({ acceptor: this.options.index, requests: failed }, 'drain deadline passed: open requests answered SHUTTING_DOWN');
    }
    this.closeIdleConnections();
    return failed;
  }

  /** A forced exit (second signal): every socket closes now, whatever is open on it. */
  abort(): void {
    this.stopListening();
    this.mcp.subscriptions.closeAll();
    this.closeIdleConnections();
  }

  /** Closes the listen socket only: connections already open are still served (and it can listen again). */
  stopListening(): void {
    if (this.listenSocket !== null) {
      uWS.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
  }

  /**
   * Closes the connections left — idle keep-alive ones: every answer of the
   * drain closed its own — with `App.close()` (in the uWS binaries 20.30 and
   * 20.57, though missing from 20.30's typings). A worker thread must not
   * end with uWS sockets open: Node aborts the whole process
   * ("uv_loop_close() while having open handles"). Without the call a thread
   * would wait for uWS's HTTP idle timeout (10 s) to close them.
   */
  private closeIdleConnections(): void {
    const app = this.app as TemplatedApp & { close?: () => void };
    if (typeof app.close === 'function') app.close();
  }

  /** Releases the call channels (after {@link close}; the thread is going away). */
  closeChannels(): void {
    this.mcp.calls.close();
    this.mcp.auth.close();
  }

  /** The shard died: fail its calls, refuse new ones until {@link shardReplaced}. */
  shardDown(shard: number): void {
    this.mcp.calls.shardDown(shard);
  }

  /** The restarted shard's channel. */
  shardReplaced(shard: number, channel: CallChannelEnd): void {
    this.mcp.calls.shardReplaced(shard, channel);
  }

  /** A cancel relayed from another acceptor thread. */
  cancelFromPeer(routeKey: string, sessionId: string, idText: string): void {
    this.mcp.calls.cancel(routeKey, sessionId, idText);
  }

  /** This thread's metrics as JSON, for aggregation on the main thread. */
  metricsJson(): Promise<MetricObjectJson[]> {
    return this.metrics.toJson();
  }

  private route(res: HttpResponse, req: HttpRequest): void {
    const fault = this.head.read(req);
    const method = req.getMethod();
    const path = req.getUrl();
    if (fault !== null) {
      this.edge.refuseHead(res, fault, method === 'head');
      return;
    }
    if (!KNOWN_METHODS.has(method)) {
      this.edge.notImplemented(res, this.mcp.draining);
      return;
    }
    if (method === 'head') {
      this.edge.head(res, path, this.servesOps, this.options.health, this.mcp.draining);
      return;
    }
    if (path.startsWith('/mcp') && (path.length === 4 || path.charCodeAt(4) === 47) /* '/' */) {
      this.mcp.handle(res, req, path, method, this.head);
      return;
    }
    const close = this.mcp.draining;
    // RFC 9728 metadata of protected routes (src/main/auth/auth-step.ts): MCP clients need it, so it stays on the traffic port.
    const metadata = method === 'get' ? this.mcp.auth.metadataReply(path, (k) => this.directory.lookup(k) !== undefined) : null;
    if (metadata !== null) {
      writeReply(res, metadata, close);
      return;
    }
    if (!this.servesOps || !serveOps(res, method, path, this.options.health, this.log, close)) notFound(res, close);
  }
}
