/**
 * The merged catalog model: what a Tool Service manifest contributes once it
 * has been validated, and what a route's snapshot carries for its shard.
 */

/** Where a route's catalog came from (readiness `source`). */
export type CatalogSource = 'static' | 'portal' | 'redis';

/** An MCP `Icon` (basic/index.mdx "icons"): `src` is an `https:` or `data:` URI (checked at catalog build). */
export interface ToolIcon {
  src: string;
  mimeType?: string;
  sizes?: string[];
  theme?: 'light' | 'dark';
}

/** One validated tool version of one Tool Service. */
export interface CatalogTool {
  /** The name clients see (the manifest's, or `{serviceId}{separator}{name}` under `catalog.conflictPolicy: prefix`). */
  name: string;
  /** The name the Tool Service knows, when clients see another one (a prefixed conflict); absent otherwise. */
  upstreamName?: string;
  version: string;
  active: boolean;
  serviceId: string;
  title?: string;
  description?: string;
  icons?: ToolIcon[];
  inputSchema: Record<string, unknown>;
  /** Any JSON Schema 2020-12 object (2026-07-28); legacy clients see it only when its root is `type: "object"`. */
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  /** The tool's MCP `_meta`, passed through unchanged. */
  meta?: Record<string, unknown>;
  /** MCP 2025-11-25 `execution.taskSupport` as declared; recorded, not exposed (the gateway offers no tasks). */
  taskSupport?: 'forbidden' | 'optional' | 'required';
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
