/**
 * The merged catalog model: what a Tool Service manifest contributes once it
 * has been validated, and what a route's snapshot carries for its shard.
 */

/** Where a route's catalog came from (readiness `source`). */
export type CatalogSource = 'static' | 'portal' | 'redis';

/** One validated tool version of one Tool Service. */
export interface CatalogTool {
  name: string;
  version: string;
  active: boolean;
  serviceId: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  /** Effective per-call timeout: the manifest's, else the default, capped by tools.maxTimeoutMs. */
  timeoutMs: number;
  /** Absolute execution URL, already checked against the service origin / allow-list. */
  executionUrl: string;
}

/** A route's merged, validated catalog before it is encoded as a snapshot. */
export interface RouteCatalog {
  routeKey: string;
  /** Stable content revision: equal catalogs have equal revisions. */
  revision: string;
  source: CatalogSource;
  builtAt: number;
  /** Every tool version of every Tool Service of the route (the shard resolves calls from these). */
  tools: CatalogTool[];
}
