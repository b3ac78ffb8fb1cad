/**
 * What the MCP endpoint calls for authentication and authorization, in one
 * place so the endpoint's edits stay a few marked lines (ADR-0011):
 *
 * - {@link AuthStep.begin} after the gate accepted the route, before the
 *   body is read: copy the credential headers, decide (open / allowed /
 *   refused / pending);
 * - {@link AuthStep.listSource}: the caller's `tools/list` template variant;
 * - {@link AuthStep.admitCall} before a `tools/call` is handed to its shard:
 *   a hidden tool answers `-32602 Unknown tool`, the concurrency limits 429;
 * - {@link AuthStep.callEnded}: release and audit.
 *
 * Plus `GET /.well-known/oauth-protected-resource/…` (RFC 9728) for the
 * acceptor's router. One instance per acceptor thread.
 */
import type { HttpRequest } from 'uWebSockets.js';
import { hiddenToolReply, protectedResourceMetadata, routeKeyOfMetadataPath, WELL_KNOWN_PRM } from '../../shared/auth/challenge.js';
import { filterListTemplate } from '../../shared/auth/list-variant.js';
import type { Principal, ToolFilter } from '../../shared/auth/policy.js';
import type { GatewayConfig } from '../../shared/config/schema.js';
import type { Logger } from '../../shared/log.js';
import type { ListSource } from '../../shared/protocol/answer.js';
import type { ModernListSource } from '../../shared/protocol/answer-modern.js';
import { privateModernTemplate } from '../../shared/snapshot/layout.js';
import type { Reply } from '../../shared/protocol/reply.js';
import { AuditLog, AuthMetrics } from './auth-metrics.js';
import { Authenticator, RequestAuth, type AuthDecision, type Refusal } from './authenticator.js';
import { templateWithRoom } from '../list-templates.js';
import type { Registry } from '../../shared/vendor/prom-client.js';

export { RequestAuth };

/** Variants kept per template; beyond it the oldest is dropped (a policy with very many distinct rule sets). */
const MAX_VARIANTS_PER_TEMPLATE = 256;

/** One acceptor thread's auth step. */
export class AuthStep {
  readonly enabled: boolean;
  readonly audit: AuditLog;
  private readonly authenticator: Authenticator;
  private readonly metrics: AuthMetrics;
  /** Template → rule-set key → filtered template; weak, so a replaced snapshot's variants go with it. */
  private readonly variants = new WeakMap<Uint8Array, Map<string, ListSource>>();
  /** The same for 2026-07-28 templates (ADR-0014): filtered, and `cacheScope: "private"`. */
  private readonly modernVariants = new WeakMap<Uint8Array, Map<string, ModernListSource>>();
  private readonly metadata = new Map<string, Reply>();
  private readonly base: string | null;
  /** Claims some credential profile forwards (union), or null when none forwards identity. */
  private readonly forwardedClaims: readonly string[] | null;
  private readonly identities = new WeakMap<Principal, string>();

  constructor(config: GatewayConfig, registry: Registry, log: Logger) {
    this.metrics = new AuthMetrics(registry);
    this.audit = new AuditLog(log);
    this.base = config.auth.resourceBaseUrl;
    this.authenticator = new Authenticator(config.auth, config.server.retryAfterSeconds, this.metrics, (what, message) => log.error({ source: what }, `auth secret could not be re-read: ${message}`));
    this.enabled = this.authenticator.enabled;
    const profiles = Object.values(config.auth.upstream.profiles).filter((p) => p.forwardIdentity !== undefined);
    this.forwardedClaims = profiles.length === 0 ? null : [...new Set(profiles.flatMap((p) => p.forwardIdentity?.claims ?? []))];
  }

  /**
   * The caller identity a `tools/call` carries to its shard (`CallRequest.identity`):
   * subject and the claims some profile forwards, JSON, built once per principal;
   * '' when no credential profile forwards identity.
   */
  identityOf(principal: Principal): string {
    if (this.forwardedClaims === null) return '';
    let text = this.identities.get(principal);
    if (text === undefined) {
      const claims: Record<string, unknown> = {};
      for (const name of this.forwardedClaims) if (principal.claims[name] !== undefined) claims[name] = principal.claims[name];
      text = JSON.stringify({ sub: principal.subject, claims });
      this.identities.set(principal, text);
    }
    return text;
  }

  /** Copies the credential headers (uWS `req` is valid only now) and decides. */
  begin(req: HttpRequest, routeKey: string, ra: RequestAuth): AuthDecision {
    ra.authorization = req.getHeader('authorization');
    const extra = this.authenticator.extraHeaders;
    for (let i = 0; i < extra.length; i++) ra.extra[i] = req.getHeader(extra[i] as string);
    return this.authenticator.check(routeKey, ra, Date.now());
  }

  /** Counts and audits a refusal. */
  refused(d: Refusal, routeKey: string, requestId: string, ra: RequestAuth, tool?: string): void {
    this.metrics.refused(routeKey, d.outcome);
    this.audit.denied({ requestId, route: routeKey, subject: ra.principal?.subject ?? null, outcome: d.outcome, reason: d.reason, ...(tool !== undefined ? { tool } : {}) });
  }

  /** The `tools/list` source for the caller: the snapshot itself, or its filtered variant. */
  listSource(snapshot: ListSource, filter: ToolFilter | null): ListSource {
    if (filter === null || filter.allowsAll) return snapshot;
    const template = snapshot.listTemplate;
    let byKey = this.variants.get(template);
    if (byKey === undefined) {
      byKey = new Map();
      this.variants.set(template, byKey);
    }
    let source = byKey.get(filter.key);
    if (source === undefined) {
      source = { listTemplate: templateWithRoom(filterListTemplate(template, (name) => filter.allows(name))) };
      if (byKey.size >= MAX_VARIANTS_PER_TEMPLATE) byKey.delete(byKey.keys().next().value as string);
      byKey.set(filter.key, source);
    }
    return source;
  }

  /**
   * The 2026-07-28 source for a caller of a protected route: the caller's
   * tools only (also for the `Mcp-Param-*` check, so a hidden tool stays an
   * unknown tool) and `cacheScope: "private"` — a protected route's list is
   * not to be shared across authorization contexts (ADR-0014).
   */
  modernListSource(snapshot: ModernListSource, filter: ToolFilter | null): ModernListSource {
    const template = snapshot.modernListTemplate;
    let byKey = this.modernVariants.get(template);
    if (byKey === undefined) {
      byKey = new Map();
      this.modernVariants.set(template, byKey);
    }
    const all = filter === null || filter.allowsAll;
    const key = all ? '*' : filter.key;
    let source = byKey.get(key);
    if (source === undefined) {
      const allows = (name: string): boolean => filter === null || filter.allows(name);
      const filtered = all ? template : filterListTemplate(template, allows);
      const params = snapshot.headerParams;
      source = {
        modernListTemplate: templateWithRoom(privateModernTemplate(filtered)),
        builtAt: snapshot.builtAt,
        headerParams: params === null || all ? params : new Map([...params].filter(([name]) => allows(name))),
      };
      if (byKey.size >= MAX_VARIANTS_PER_TEMPLATE) byKey.delete(byKey.keys().next().value as string);
      byKey.set(key, source);
    }
    return source;
  }

  /**
   * Before a `tools/call` goes to its shard: null = go; else the answer. A
   * tool outside the caller's rules is answered exactly as an unknown tool.
   */
  admitCall(routeKey: string, ra: RequestAuth, requestId: string, idText: string, toolName: string): Reply | null {
    if (ra.filter !== null && !ra.filter.allows(toolName)) {
      this.metrics.refused(routeKey, 'forbidden');
      this.audit.denied({ requestId, route: routeKey, subject: ra.principal?.subject ?? null, tool: toolName, outcome: 'forbidden', reason: 'tool_not_allowed' });
      return hiddenToolReply(idText, toolName);
    }
    const limited = this.authenticator.admitCall(routeKey, ra, idText, Date.now());
    if (limited === null) return null;
    this.refused(limited, routeKey, requestId, ra, toolName);
    return limited.reply;
  }

  /** A `tools/call` admitted by {@link admitCall} ended (answered, failed or abandoned). */
  callEnded(routeKey: string, ra: RequestAuth, requestId: string, toolName: string, outcome: string): void {
    this.authenticator.callEnded(ra);
    this.audit.call({ requestId, route: routeKey, subject: ra.principal?.subject ?? null, tool: toolName, outcome });
  }

  /**
   * `GET /.well-known/oauth-protected-resource{basePath}/mcp/{routeKey}`: the
   * route's RFC 9728 metadata, or null (not a metadata path, or the route is
   * unknown or open: the caller answers 404). `exists` is the route directory.
   */
  metadataReply(path: string, exists: (routeKey: string) => boolean): Reply | null {
    if (this.base === null || !path.startsWith(WELL_KNOWN_PRM)) return null;
    const routeKey = routeKeyOfMetadataPath(this.base, path);
    if (routeKey === null || !exists(routeKey)) return null;
    let reply = this.metadata.get(routeKey);
    if (reply === undefined) {
      const route = this.authenticator.routeAuth(routeKey);
      if (route === null) return null;
      const body = protectedResourceMetadata(route.resource, this.authenticator.authorizationServers(route.policy), route.policy.scopesSupported, routeKey);
      reply = { status: 200, contentType: 'application/json', headers: [['cache-control', 'max-age=300']], body };
      this.metadata.set(routeKey, reply);
    }
    return reply;
  }

  close(): void {
    this.authenticator.close();
  }
}
