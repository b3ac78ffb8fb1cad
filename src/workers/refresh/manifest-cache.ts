/**
 * Each Tool Service's manifest across refresh cycles: its last good tools
 * (which keep serving while a fresh load fails), its ETag (an unchanged
 * manifest costs one 304), and its exponential backoff after failures, up to
 * `catalog.manifestMaxBackoffMs` (docs/decisions/0007-catalog-refresh.md).
 * A Tool Service named by several routes is fetched once per cycle, and at
 * most `catalog.manifestConcurrency` fetches run at once.
 *
 * A Tool Service is identified by its registry entry (`id`, `baseUrl`,
 * `manifestPath`): the same entry in two routes shares one state.
 */
import { validateManifest, type ManifestPolicy, type RefusedTool } from '../../shared/catalog/manifest.js';
import type { Registry } from '../../shared/catalog/registry.js';
import type { CatalogTool } from '../../shared/catalog/types.js';
import type { GatewayConfig, ServiceEntry } from '../../shared/config/schema.js';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import { fetchManifestIfChanged } from './fetch-manifest.js';
import type { RefreshUpstreamAuth } from './upstream-auth.js';
import { Semaphore } from './semaphore.js';

/** Why a Tool Service's tools are not fresh this cycle. */
export interface ServiceProblem {
  code: GatewayErrorCode;
  message: string;
}

/** A Tool Service's contribution this cycle: its tools (fresh or last good, `null` when it never had any), and why not fresh. */
export interface ServiceOutcome {
  entry: ServiceEntry;
  tools: CatalogTool[] | null;
  /** Tools of its manifest refused one by one (with `tools`: the same manifest). */
  refused: RefusedTool[];
  problem: ServiceProblem | null;
}

/** Reports a bug (an unexpected exception) with its stack; the refresh worker passes its logger. */
export interface BugLog {
  error(details: object, message: string): void;
}

/** What a manifest cache needs from outside. */
export interface ManifestCacheDeps {
  config: GatewayConfig;
  now: () => number;
  log: BugLog;
  /** The fetch (a seam for tests that need a fetch to fail unexpectedly); default {@link fetchManifestIfChanged}. */
  fetch?: typeof fetchManifestIfChanged;
  /** Credentials per Tool Service origin (auth.upstream.profiles). */
  upstreamAuth?: RefreshUpstreamAuth;
}

/** Per Tool Service: the last good tools and the backoff state. */
interface ServiceState {
  tools: CatalogTool[] | null;
  refused: RefusedTool[];
  /** ETag of the manifest `tools` came from: the next fetch is conditional. */
  etag: string | null;
  failures: number;
  nextAttemptAt: number;
  lastError: string | null;
}

/** Last good manifests, ETags and backoff of every Tool Service the registry names. */
export class ManifestCache {
  private readonly services = new Map<string, ServiceState>();
  private readonly limiter: Semaphore;
  private readonly policy: ManifestPolicy;
  private readonly fetch: typeof fetchManifestIfChanged;
  /** Loads of the current cycle, so a Tool Service shared by several routes is fetched once. */
  private inflight = new Map<string, Promise<ServiceOutcome>>();

  constructor(private readonly deps: ManifestCacheDeps) {
    const { config } = deps;
    this.limiter = new Semaphore(config.catalog.manifestConcurrency);
    this.policy = {
      defaultTimeoutMs: config.tools.defaultTimeoutMs,
      maxTimeoutMs: config.tools.maxTimeoutMs,
      allowedExecutionOrigins: config.tools.allowedExecutionOrigins,
      toolNamePolicy: config.catalog.toolNamePolicy,
    };
    this.fetch = deps.fetch ?? fetchManifestIfChanged;
  }

  /** Starts a cycle: every Tool Service is loaded (at most) once more. */
  beginCycle(): void {
    this.inflight = new Map();
  }

  /** Forgets the Tool Services no route of `registry` names (their last good tools, ETags and backoff). */
  retain(registry: Registry): void {
    const live = new Set(Object.values(registry.routes).flatMap((entries) => entries.map(serviceKey)));
    for (const key of [...this.services.keys()]) if (!live.has(key)) this.services.delete(key);
  }

  /** The tools of `entry` this cycle. Never rejects: failures are the outcome's `problem`. */
  tools(entry: ServiceEntry): Promise<ServiceOutcome> {
    const key = serviceKey(entry);
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const outcome = this.load(key, entry);
    this.inflight.set(key, outcome);
    return outcome;
  }

  private load(key: string, entry: ServiceEntry): Promise<ServiceOutcome> {
    let state = this.services.get(key);
    if (state === undefined) {
      state = { tools: null, refused: [], etag: null, failures: 0, nextAttemptAt: 0, lastError: null };
      this.services.set(key, state);
    }
    const s = state;
    if (s.tools !== null && s.nextAttemptAt > this.deps.now()) {
      return Promise.resolve({
        entry,
        tools: s.tools,
        refused: s.refused,
        problem: { code: GatewayErrorCode.ManifestUnreachable, message: `Tool Service "${entry.id}" backing off after: ${s.lastError ?? 'failure'}` },
      });
    }
    const { catalog } = this.deps.config;
    return this.limiter.run(async () => {
      try {
        const fetched = await this.fetch(entry, {
          timeoutMs: catalog.manifestTimeoutMs,
          maxBytes: catalog.maxManifestBytes,
          etag: s.tools !== null ? s.etag : null,
          ...(this.deps.upstreamAuth ? { upstreamAuth: this.deps.upstreamAuth } : {}),
        });
        if (fetched.kind === 'not-modified' && s.tools !== null) {
          Object.assign(s, { failures: 0, nextAttemptAt: 0, lastError: null });
          return { entry, tools: s.tools, refused: s.refused, problem: null };
        }
        const raw = fetched.kind === 'manifest' ? fetched.manifest : undefined;
        const result = validateManifest(raw, entry, this.policy);
        if (!result.ok) {
          throw new GatewayError(GatewayErrorCode.ManifestInvalid, `Tool Service "${entry.id}" manifest is invalid: ${result.problems.join('; ')}`, result.problems);
        }
        Object.assign(s, { tools: result.tools, refused: result.refused, etag: fetched.kind === 'manifest' ? fetched.etag : null, failures: 0, nextAttemptAt: 0, lastError: null });
        return { entry, tools: result.tools, refused: result.refused, problem: null };
      } catch (err) {
        const problem = this.problemOf(err, entry);
        s.failures++;
        const backoff = Math.min(catalog.manifestMaxBackoffMs, catalog.refreshIntervalMs * 2 ** (s.failures - 1));
        s.nextAttemptAt = this.deps.now() + backoff;
        s.lastError = problem.message;
        return { entry, tools: s.tools, refused: s.refused, problem };
      }
    });
  }

  /** Expected failures carry their own code (fetch and validation throw GatewayErrors); anything else is a bug. */
  private problemOf(err: unknown, entry: ServiceEntry): ServiceProblem {
    if (GatewayError.is(err)) return { code: err.code, message: err.message };
    this.deps.log.error({ err, service: entry.id }, 'unexpected exception while loading a manifest');
    return { code: GatewayErrorCode.Internal, message: `Tool Service "${entry.id}" manifest could not be loaded: internal error (${String(err)})` };
  }
}

/** The identity of a Tool Service across routes and cycles. */
function serviceKey(entry: ServiceEntry): string {
  return `${entry.id}\u0000${entry.baseUrl}\u0000${entry.manifestPath ?? '/manifest'}`;
}
