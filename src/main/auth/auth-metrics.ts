/**
 * Metrics and the audit trail of the auth step on one acceptor thread.
 * Counters register in the acceptor's own registry (aggregated across
 * threads on scrape like every other acceptor metric); label children are
 * cached so a refusal costs no label hashing. Audit lines are one structured
 * log line per refusal and per `tools/call`, with subject, route, tool and
 * outcome — never a token, key or header value.
 */
import { Counter, type Registry } from '../../shared/vendor/prom-client.js';
import type { Logger } from '../../shared/log.js';

/** Outcome labels of a refusal (bounded set). */
export type RefusalOutcome = 'unauthenticated' | 'forbidden' | 'rate_limited' | 'auth_unavailable';

/** Counters of the auth step. */
export class AuthMetrics {
  private readonly refusals: Counter<'route' | 'outcome'>;
  private readonly verifications: Counter<'provider' | 'result'>;
  private readonly jwksFetches: Counter<'provider' | 'result'>;
  private readonly children = new Map<string, { inc(): void }>();

  constructor(registry: Registry) {
    this.refusals = new Counter({
      name: 'mcp_gateway_auth_refusals_total',
      help: 'Requests refused by the auth step, by route and outcome (unauthenticated, forbidden, rate_limited, auth_unavailable).',
      labelNames: ['route', 'outcome'] as const,
      registers: [registry],
    });
    this.verifications = new Counter({
      name: 'mcp_gateway_auth_token_verifications_total',
      help: 'First-sight JWT verifications (cache misses), by provider and result (ok, invalid, unavailable).',
      labelNames: ['provider', 'result'] as const,
      registers: [registry],
    });
    this.jwksFetches = new Counter({
      name: 'mcp_gateway_auth_jwks_fetches_total',
      help: 'JWKS fetches of remote JWT providers, by provider and result (ok, failed).',
      labelNames: ['provider', 'result'] as const,
      registers: [registry],
    });
  }

  private child(counter: Counter<string>, kind: string, a: string, b: string): { inc(): void } {
    const key = `${kind}\u0000${a}\u0000${b}`;
    let c = this.children.get(key);
    if (c === undefined) {
      c = counter.labels(a, b);
      this.children.set(key, c);
    }
    return c;
  }

  refused(route: string, outcome: RefusalOutcome): void {
    this.child(this.refusals, 'r', route, outcome).inc();
  }

  verified(provider: string, result: 'ok' | 'invalid' | 'unavailable'): void {
    this.child(this.verifications, 'v', provider, result).inc();
  }

  jwksFetched(provider: string, ok: boolean): void {
    this.child(this.jwksFetches, 'j', provider, ok ? 'ok' : 'failed').inc();
  }
}

/** What one audit line says. */
export interface AuditFields {
  requestId: string;
  route: string;
  /** The caller, `null` when unknown (no or an invalid credential). */
  subject: string | null;
  tool?: string;
  outcome: string;
  /** Machine reason (`expired`, `audience`, `rate`, …). */
  reason?: string;
}

/** Writes audit lines (`audit: true`, so they can be routed apart from the rest of the log). */
export class AuditLog {
  constructor(private readonly log: Logger) {}

  /** One refusal. */
  denied(f: AuditFields): void {
    this.log.warn({ audit: true, ...f }, 'access denied');
  }

  /** One `tools/call` that was admitted, with how it ended. */
  call(f: AuditFields): void {
    this.log.info({ audit: true, ...f }, 'tool call');
  }
}
