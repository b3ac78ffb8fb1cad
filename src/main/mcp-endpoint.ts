/**
 * The MCP endpoint of one acceptor thread, `POST /mcp/{routeKey}`, as a
 * pipeline: copy what is needed out of the uWS request → gate (headers and
 * route directory, before the body; the protocol era from
 * `MCP-Protocol-Version`) → body (limit enforced while reading) → decide
 * (`answerRequest` for legacy requests, `answerModernRequest` for
 * 2026-07-28 ones: answered here from snapshot bytes, a checked `tools/call`,
 * or a `subscriptions/listen` stream) → hand the call to its shard
 * (`call-intake.ts`, `call-dispatcher.ts`), which answers through this thread. Every JSON-RPC
 * envelope is written here.
 *
 * ~350 lines: the pipeline's steps share one pooled request and its
 * life cycle (reading → queued → calling → answered); the HTTP edge, the call
 * intake, back-pressure and subscriptions are already modules of their own.
 */
import type { Buffer } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { type AcceptorMetrics, methodLabel } from '../shared/metrics.js';
import { answerRequest, refusalId, type AnswerLimits } from '../shared/protocol/answer.js';
import { answerModernRequest, type FreshnessPolicy, type ListenDecision } from '../shared/protocol/answer-modern.js';
import { validRequestId, validSessionId, validTraceparent } from '../shared/protocol/context-headers.js';
import { bodyTooLargeReply, gateMcpRequest, refusalOfReply, refusalReply, type RequestHead } from '../shared/protocol/gate.js';
import { buildHttpPolicy, type HttpPolicy } from '../shared/protocol/http-policy.js';
import { encodeId, errorResponseForIdText } from '../shared/protocol/jsonrpc.js';
import type { Reply } from '../shared/protocol/reply.js';
import { stripOws } from '../shared/protocol/modern.js';
import type { CallChannelEnd } from '../shared/threads/messages.js';
import { TraceSpanKind, type Tracer } from '../shared/tracing/tracer.js';
import { AuthStep, RequestAuth } from './auth/auth-step.js';
import type { AuthDecision } from './auth/authenticator.js';
import type { CallDispatcher } from './call-dispatcher.js';
import { CallIntake, requestSpanAttributes } from './call-intake.js';
import type { RequestHeadCopy } from './head-guard.js';
import { RequestPool, type McpRequest, type RequestSink } from './mcp-request.js';
import { writeReply } from './reply-writer.js';
import type { RouteDirectory } from './route-directory.js';
import { Subscriptions } from './subscriptions.js';

/** What the endpoint needs from its acceptor. */
export interface McpEndpointOptions {
  config: GatewayConfig;
  /** Index = shard index. */
  channels: readonly CallChannelEnd[];
  directory: RouteDirectory;
  metrics: AcceptorMetrics;
  log: Logger;
  /** Null unless `tracing.otlp.endpoint` is set (then every request past the gate gets a span). */
  tracer: Tracer | null;
  /** A `notifications/cancelled` that matched no call of this thread (the call may live on another acceptor thread). */
  onUnmatchedCancel?: (routeKey: string, sessionId: string, idText: string) => void;
}

/** A request whose body was still arriving at the drain deadline: nothing ran, so it is a retryable refusal. */
function shuttingDownReply(retryAfterSeconds: number): Reply {
  return {
    status: 503,
    contentType: 'application/json',
    headers: [['retry-after', String(retryAfterSeconds)]],
    body: errorResponseForIdText('null', JsonRpcErrorCode.TransportError, 'Service Unavailable: the gateway is shutting down; retry on another replica', {
      reason: GatewayErrorCode.ShuttingDown,
    }),
  };
}

const SUBSCRIPTION_LIMIT_MESSAGE = 'Service Unavailable: this gateway thread holds subscriptions.maxPerAcceptor open subscriptions/listen streams; retry later';

/** `POST /mcp/{routeKey}` on one acceptor thread. */
export class McpEndpoint implements RequestSink {
  /** The hand-off to shards (the acceptor forwards shard lifecycle events to it). */
  readonly calls: CallDispatcher;
  /** Open `subscriptions/listen` streams (the acceptor forwards list changes and shutdown to them). */
  readonly subscriptions: Subscriptions;
  private readonly freshness: FreshnessPolicy;
  private readonly policy: HttpPolicy;
  private readonly requests: RequestPool;
  private readonly directory: RouteDirectory;
  private readonly metrics: AcceptorMetrics;
  private readonly tracer: Tracer | null;
  private readonly requestIdPrefix = randomBytes(4).toString('hex');
  private requestCounter = 0;
  /** Set by {@link startDrain}: every answer closes its connection. */
  draining = false;
  /** Authentication, authorization, rate limits (src/main/auth, ADR-0011). */
  readonly auth: AuthStep;
  /** The auth state of the request being gated; swapped into the pooled request once it is admitted (no allocation). */
  private scratchAuth = new RequestAuth();
  private authTickets = 0;
  private readonly limits: AnswerLimits;
  /** `tools/call` from the checked request to its shard (call-intake.ts). */
  private readonly intake: CallIntake;
  /** The head of the request being gated, reused (read only while `handle` runs). */
  private readonly head: RequestHead = { method: '', path: '', host: '', origin: '', contentType: '', accept: '', protocolVersion: '', contentLength: -1 };

  constructor(private readonly options: McpEndpointOptions) {
    this.directory = options.directory;
    this.metrics = options.metrics;
    this.tracer = options.tracer;
    this.policy = buildHttpPolicy(options.config.server);
    this.limits = { maxArgumentsDepth: options.config.tools.maxArgumentsDepth };
    this.requests = new RequestPool(this);
    this.subscriptions = new Subscriptions(options.config.subscriptions);
    this.freshness = { refreshIntervalMs: options.config.catalog.refreshIntervalMs, refreshJitterRatio: options.config.catalog.refreshJitterRatio, now: Date.now };
    this.auth = new AuthStep(options.config, options.metrics.registry, options.log);
    this.intake = new CallIntake({
      channels: options.channels,
      config: options.config,
      auth: this.auth,
      tracer: options.tracer,
      log: options.log,
      requests: this.requests,
      record: (route, method, outcome, startedAt) => this.record(route, method, outcome, startedAt),
      draining: () => this.draining,
    });
    this.calls = this.intake.calls;
  }

  /** Handles one request whose path is `/mcp` or starts with `/mcp/`; `copy` is its head, read by the acceptor (head-guard.ts). */
  handle(res: HttpResponse, req: HttpRequest, path: string, method: string, copy: RequestHeadCopy): void {
    const startedAt = performance.now();
    const head = this.head;
    head.method = method;
    head.path = path;
    head.host = copy.host;
    head.origin = copy.origin;
    head.contentType = copy.contentType;
    head.accept = copy.accept;
    head.protocolVersion = copy.protocolVersion;
    head.contentLength = copy.contentLength === '' ? -1 : Number(copy.contentLength);
    // Context headers that are not well-formed are dropped at the edge (treated as absent), never forwarded.
    const requestId = validRequestId(copy.requestId) ?? `${this.requestIdPrefix}-${(++this.requestCounter).toString(36)}`;
    const gate = gateMcpRequest(head, this.policy, this.directory.lookup);
    if (gate.kind === 'reply') {
      writeReply(res, gate.reply, this.draining, requestId);
      this.record(gate.label === 'unavailable' || gate.label === 'too_large' ? this.routeLabel(path) : '(none)', 'http', gate.label, startedAt);
      return;
    }
    if (gate.kind === 'refuse-after-body') {
      // Decided from the headers (before the auth step, like the gate's other refusals), answered once
      // the body is read so that the error carries the request's id.
      const r = this.requests.acquire();
      r.startedAt = startedAt;
      r.refusal = gate.refusal;
      r.requestId = requestId;
      r.routeKey = gate.refusal.routeKey ?? '(none)';
      r.begin(res, head.contentLength, this.policy.maxBodyBytes);
      return;
    }
    // ── auth step (src/main/auth/auth-step.ts): before the body is read; a refusal costs no pooled request ──
    let auth: RequestAuth | null = null;
    let decision: AuthDecision | null = null;
    if (this.auth.enabled) {
      auth = this.scratchAuth;
      auth.ticket = ++this.authTickets;
      auth.pending = false;
      auth.body = null;
      decision = this.auth.begin(req, gate.routeKey, auth);
      if (decision.kind === 'deny') {
        this.auth.refused(decision, gate.routeKey, requestId, auth);
        if (gate.era === 'modern') {
          // 2026-07-28: the refusal carries the request's id, so the body is read first (ADR-0014 §2).
          const r = this.requests.acquire();
          r.startedAt = startedAt;
          r.routeKey = gate.routeKey;
          r.requestId = requestId;
          r.refusal = refusalOfReply(decision.reply, decision.outcome, gate.routeKey);
          r.begin(res, head.contentLength, this.policy.maxBodyBytes);
          return;
        }
        writeReply(res, decision.reply, this.draining, requestId);
        this.record(gate.routeKey, 'http', decision.outcome, startedAt);
        return;
      }
    }
    // ── end auth step ──
    // Everything needed later is copied out of `req` now: it is invalid once this handler returns.
    const r = this.requests.acquire();
    r.startedAt = startedAt;
    r.routeKey = gate.routeKey;
    r.snapshot = gate.snapshot;
    r.shard = gate.route.shard;
    r.sse = gate.wantsSse;
    if (gate.era === 'modern') {
      r.modern = true;
      r.mcpMethod = copy.mcpMethod;
      r.mcpName = copy.mcpName;
      if (stripOws(r.mcpMethod) === 'tools/call') r.paramHeaders = copy.paramHeaders;
    }
    r.requestId = requestId;
    r.sessionId = validSessionId(copy.sessionId) ?? '';
    r.traceparent = validTraceparent(copy.traceparent) ?? '';
    if (auth !== null) {
      this.scratchAuth = r.auth ?? new RequestAuth();
      r.auth = auth;
      if (decision?.kind === 'pending') {
        auth.pending = true;
        const ticket = auth.ticket;
        void decision.settled.then((d) => this.authSettled(r, auth, ticket, d));
      }
    } else if (r.auth !== null) r.auth.policy = null;
    r.begin(res, head.contentLength, this.policy.maxBodyBytes);
  }

  /** A first-sight token verification finished: go on with the body, or refuse (auth step). */
  private authSettled(r: McpRequest, auth: RequestAuth, ticket: number, d: AuthDecision): void {
    // The request may have been aborted (and its object reused) while the token was checked.
    if (r.auth !== auth || auth.ticket !== ticket || r.state !== 'reading' || r.aborted || r.res === null) return;
    auth.pending = false;
    const res = r.res;
    const body = auth.body;
    auth.body = null;
    if (d.kind === 'deny') {
      if (r.modern) {
        // 2026-07-28: answered with the request's id — now, or when the body has arrived (onBody).
        this.auth.refused(d, r.routeKey, r.requestId, auth);
        r.refusal = refusalOfReply(d.reply, d.outcome, r.routeKey);
        if (body !== null) res.cork(() => this.onBody(r, body));
        return;
      }
      // A body still arriving is not read: the connection closes after the answer, and the object is not pooled again.
      res.cork(() => writeReply(res, d.reply, body === null || this.draining, r.requestId));
      this.auth.refused(d, r.routeKey, r.requestId, auth);
      this.record(r.routeKey, 'http', d.outcome, r.startedAt);
      if (body !== null) this.requests.release(r);
      else this.requests.retire(r);
      return;
    }
    if (body !== null) res.cork(() => this.onBody(r, body));
  }

  onBodyTooLarge(r: McpRequest): void {
    const res = r.res;
    if (res !== null && !r.aborted) writeReply(res, bodyTooLargeReply(this.policy), true, r.requestId);
    this.record(r.routeKey, 'http', 'too_large', r.startedAt);
    // Not pooled again: uWS may still deliver the rest of this body to the object's handlers.
    this.requests.retire(r);
  }

  onAborted(r: McpRequest): void {
    if (r.state === 'calling') this.calls.abandon(r);
    else if (r.state !== 'queued') this.requests.release(r); // a queued call is dropped by dispatchQueued
  }

  onBody(r: McpRequest, body: Buffer): void {
    const res = r.res;
    if (res === null || r.aborted) return;
    const refusal = r.refusal;
    if (refusal !== null) {
      writeReply(res, refusalReply(refusal, refusalId(body)), this.draining, r.requestId);
      this.record(r.routeKey, 'http', refusal.label, r.startedAt);
      this.requests.release(r);
      return;
    }
    const snapshot = r.snapshot;
    if (snapshot === null) return;
    const auth = r.auth;
    if (auth?.pending) {
      auth.body = body; // answered once the token is checked (authSettled)
      return;
    }
    // The caller's tools/list is its precomputed variant of the snapshot's template (auth step).
    const decision = r.modern
      ? answerModernRequest(body, auth === null || auth.policy === null ? snapshot : this.auth.modernListSource(snapshot, auth.filter), r, this.freshness, this.limits)
      : answerRequest(body, auth === null || auth.filter === null ? snapshot : this.auth.listSource(snapshot, auth.filter), this.limits);
    if (decision.kind === 'forward') {
      this.intake.forward(r, res, decision);
      return;
    }
    if (decision.kind === 'listen') {
      this.listen(r, res, decision);
      return;
    }
    if (decision.cancels !== undefined) {
      const idText = encodeId(decision.cancels);
      if (!this.calls.cancel(r.routeKey, r.sessionId, idText)) this.options.onUnmatchedCancel?.(r.routeKey, r.sessionId, idText);
    }
    // onData runs corked (uWS corks a socket while it processes its input), so this is one write.
    writeReply(res, decision.reply, this.draining, r.requestId);
    this.record(r.routeKey, methodLabel(decision.method), decision.outcome, r.startedAt);
    if (this.tracer !== null) {
      const method = methodLabel(decision.method);
      const span = this.tracer.start(method, TraceSpanKind.Server, r.traceparent, r.startedAt);
      if (span.recording) span.setAttributes(requestSpanAttributes(r, method));
      span.end(decision.reply.status >= 500 ? decision.outcome : undefined);
    }
    this.requests.release(r);
  }

  /** Opens a `subscriptions/listen` stream, or refuses it (503) past `subscriptions.maxPerAcceptor`. */
  private listen(r: McpRequest, res: HttpResponse, decision: ListenDecision): void {
    if (this.subscriptions.listen(res, r.routeKey, decision.idText, decision.toolsListChanged)) {
      this.record(r.routeKey, 'subscriptions/listen', 'ok', r.startedAt);
    } else {
      writeReply(
        res,
        {
          status: 503,
          contentType: 'application/json',
          headers: [['retry-after', String(this.policy.retryAfterSeconds)]],
          body: errorResponseForIdText(decision.idText, JsonRpcErrorCode.TransportError, SUBSCRIPTION_LIMIT_MESSAGE, { reason: GatewayErrorCode.SubscriptionLimit }),
        },
        this.draining,
        r.requestId,
      );
      this.record(r.routeKey, 'subscriptions/listen', 'subscription_limit', r.startedAt);
    }
    // The stream (if any) lives on in `subscriptions`; the pooled request object is free again.
    this.requests.release(r);
  }

  /** Requests between their headers and their answer (bodies arriving, calls in flight). */
  get openRequests(): number {
    return this.requests.open;
  }

  /** The drain began: every answer from now on closes its connection (`Connection: close`). */
  startDrain(): void {
    this.draining = true;
    this.calls.draining = true;
  }

  /**
   * The drain deadline passed: answers every open request — calls with
   * `SHUTTING_DOWN` through the dispatcher (which owns their envelope),
   * requests whose body is still arriving with a 503 (`SHUTTING_DOWN`,
   * nothing ran, safe to retry). Returns how many were answered.
   */
  failOpen(): number {
    let failed = this.calls.failAll();
    for (const r of this.requests.liveRequests()) {
      if (r.state !== 'reading') continue;
      const res = r.res;
      const reply = shuttingDownReply(this.policy.retryAfterSeconds);
      if (res !== null && !r.aborted) res.cork(() => writeReply(res, reply, true, r.requestId));
      this.record(r.routeKey, 'http', 'shutdown', r.startedAt);
      this.requests.retire(r);
      failed++;
    }
    return failed;
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
