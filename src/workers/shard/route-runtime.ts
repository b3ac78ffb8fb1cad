/**
 * What a shard keeps per route: the published snapshot plus, derived from it
 * once at install time, the tool resolution table. Argument validators come
 * from the shard's {@link ValidatorCache}: compiled once per distinct schema,
 * on the tool's first call, never per request. A new snapshot gets a new
 * RouteRuntime, swapped in with one Map store; the old one is released.
 */
import type { ArgumentValidator } from './validator-cache.js';
import type { CatalogTool } from '../../shared/catalog/types.js';
import { resolveActiveVersions } from '../../shared/catalog/active-versions.js';
import type { SnapshotView } from '../../shared/snapshot/layout.js';
import { ValidatorCache } from './validator-cache.js';

/** A tool with exactly one active version; its validators are compiled on first use. */
export class ResolvedTool {
  readonly kind = 'tool';
  private compiled: ArgumentValidator | null = null;
  private compiledOutput: ArgumentValidator | null = null;

  constructor(
    readonly tool: CatalogTool,
    private readonly schemaKey: string,
    private readonly cache: ValidatorCache,
    private readonly outputKey: string | null = null,
  ) {}

  /** The compiled argument validator. */
  get validator(): ArgumentValidator {
    this.compiled ??= this.cache.validator(this.schemaKey);
    return this.compiled;
  }

  /** The compiled `outputSchema` validator (structuredContent, call-result.ts); null when the tool declares none. */
  get outputValidator(): ArgumentValidator | null {
    if (this.outputKey === null) return null;
    this.compiledOutput ??= this.cache.validator(this.outputKey);
    return this.compiledOutput;
  }
}

/** How a tool name resolves in a route. */
export type Resolution = ResolvedTool | { kind: 'unknown' } | { kind: 'ambiguous'; versions: string[] };

/** A route's call-time view of its snapshot. */
export class RouteRuntime {
  private readonly byName = new Map<string, Resolution>();
  private readonly schemaKeys: string[] = [];
  private released = false;

  constructor(
    readonly snapshot: SnapshotView,
    private readonly cache: ValidatorCache = new ValidatorCache(),
  ) {
    // Trusted: snapshots reach a shard only from the refresh worker, which encoded them or validated them after reading them from Redis.
    for (const [name, r] of resolveActiveVersions(snapshot.catalogTools({ trusted: true }))) {
      if (r.kind === 'ambiguous') {
        this.byName.set(name, r);
        continue;
      }
      const key = cache.retain(r.tool.inputSchema);
      this.schemaKeys.push(key);
      const outputKey = r.tool.outputSchema === undefined ? null : cache.retain(r.tool.outputSchema);
      if (outputKey !== null) this.schemaKeys.push(outputKey);
      this.byName.set(name, new ResolvedTool(r.tool, key, cache, outputKey));
    }
  }

  /** Exactly one active version → the tool; none → unknown; several → ambiguous (never pick one). */
  resolve(name: string): Resolution {
    return this.byName.get(name) ?? UNKNOWN;
  }

  /**
   * Gives the validators back to the cache once this runtime is replaced.
   * Calls already running keep the validators they resolved.
   */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const key of this.schemaKeys) this.cache.release(key);
  }
}

const UNKNOWN: Resolution = { kind: 'unknown' };
