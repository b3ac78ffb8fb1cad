/**
 * Per-route merge rules (docs/contracts/tool-service-manifest-v1.md §3): tool
 * names unique across the Tool Services of one route, the active-version rule
 * ({@link resolveActiveVersions}), and the per-route exposure cap.
 */
import { createHash } from 'node:crypto';
import { GatewayError, GatewayErrorCode } from '../errors.js';
import { resolveActiveVersions } from './active-versions.js';
import type { CatalogSource, CatalogTool, RouteCatalog } from './types.js';

/** One Tool Service's validated contribution to a route. */
export interface ServiceTools {
  serviceId: string;
  tools: CatalogTool[];
}

/** Tools that `tools/list` exposes: the names with exactly one active version (see {@link resolveActiveVersions}). */
export function listedTools(tools: readonly CatalogTool[]): CatalogTool[] {
  const out: CatalogTool[] = [];
  for (const resolved of resolveActiveVersions(tools).values()) if (resolved.kind === 'tool') out.push(resolved.tool);
  return out;
}

/**
 * Merges the Tool Services of one route. Throws a GatewayError
 * (TOOL_NAME_CONFLICT / TOOL_CAP_EXCEEDED) when the route's replacement must be refused.
 */
export function mergeRoute(
  routeKey: string,
  services: readonly ServiceTools[],
  options: { maxToolsPerRoute: number; source: CatalogSource; now?: number },
): RouteCatalog {
  const owner = new Map<string, string>();
  const conflicts: string[] = [];
  const tools: CatalogTool[] = [];
  for (const service of services) {
    for (const tool of service.tools) {
      const first = owner.get(tool.name);
      if (first === undefined) owner.set(tool.name, service.serviceId);
      else if (first !== service.serviceId) conflicts.push(`tool "${tool.name}" is offered by both "${first}" and "${service.serviceId}"`);
      tools.push(tool);
    }
  }
  if (conflicts.length > 0) {
    const unique = [...new Set(conflicts)];
    throw new GatewayError(GatewayErrorCode.ToolNameConflict, `route "${routeKey}": ${unique.join('; ')}`, unique);
  }
  const exposed = listedTools(tools).length;
  if (exposed > options.maxToolsPerRoute) {
    throw new GatewayError(
      GatewayErrorCode.ToolCapExceeded,
      `route "${routeKey}" would expose ${exposed} tools, more than catalog.maxToolsPerRoute (${options.maxToolsPerRoute})`,
    );
  }
  // Sorted so that the revision and the tools/list bytes do not depend on fetch order.
  tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.version < b.version ? -1 : a.version > b.version ? 1 : 0));
  return { routeKey, revision: catalogRevision(tools), source: options.source, builtAt: options.now ?? Date.now(), tools };
}

/** Content revision: equal tool sets give equal revisions, so an unchanged rebuild is recognisable. */
export function catalogRevision(tools: readonly CatalogTool[]): string {
  return 'sha256:' + createHash('sha256').update(JSON.stringify(tools)).digest('hex').slice(0, 16);
}
