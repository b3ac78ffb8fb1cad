/**
 * Per-route merge rules (docs/contracts/tool-service-manifest-v1.md §3): tool
 * names unique across the Tool Services of one route (or, under
 * `catalog.conflictPolicy: prefix`, made unique by prefixing the Tool
 * Service id), the active-version rule ({@link resolveActiveVersions}), and
 * the per-route exposure cap.
 */
import { createHash } from 'node:crypto';
import { GatewayError, GatewayErrorCode } from '../errors.js';
import { resolveActiveVersions } from './active-versions.js';
import type { RefusedTool } from './manifest.js';
import type { CatalogSource, CatalogTool, RouteCatalog } from './types.js';

/** One Tool Service's validated contribution to a route. */
export interface ServiceTools {
  serviceId: string;
  tools: CatalogTool[];
}

/** Longest prefixed name: client tool-name limits are commonly 64 characters (the conformance suite checks 1–64). */
export const MAX_PREFIXED_NAME = 64;

/** How a route resolves a name two Tool Services offer. */
export interface ConflictPolicy {
  conflictPolicy: 'refuse' | 'prefix';
  prefixSeparator: string;
}

/** A merged catalog, with the tools the merge itself left out (prefix too long, prefix collision). */
export interface MergedRoute extends RouteCatalog {
  refused: RefusedTool[];
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
export function mergeRoute(routeKey: string, services: readonly ServiceTools[], options: { maxToolsPerRoute: number; source: CatalogSource; now?: number } & Partial<ConflictPolicy>): MergedRoute {
  const owners = new Map<string, string[]>();
  for (const service of services) {
    for (const tool of service.tools) {
      const list = owners.get(tool.name);
      if (list === undefined) owners.set(tool.name, [service.serviceId]);
      else if (!list.includes(service.serviceId)) list.push(service.serviceId);
    }
  }
  const conflicting = [...owners].filter(([, ids]) => ids.length > 1);
  const refused: RefusedTool[] = [];
  let tools: CatalogTool[] = services.flatMap((s) => s.tools);
  if (conflicting.length > 0) {
    if (options.conflictPolicy !== 'prefix') {
      const conflicts = conflicting.map(([name, ids]) => `tool "${name}" is offered by both "${ids[0]}" and "${ids[1]}"`);
      throw new GatewayError(GatewayErrorCode.ToolNameConflict, `route "${routeKey}": ${conflicts.join('; ')}`, conflicts);
    }
    tools = prefixConflicts(tools, new Set(conflicting.map(([name]) => name)), new Set(owners.keys()), options.prefixSeparator ?? '_', refused);
  }
  const exposed = listedTools(tools).length;
  if (exposed > options.maxToolsPerRoute) {
    throw new GatewayError(GatewayErrorCode.ToolCapExceeded, `route "${routeKey}" would expose ${exposed} tools, more than catalog.maxToolsPerRoute (${options.maxToolsPerRoute})`);
  }
  // Sorted so that the revision and the tools/list bytes do not depend on fetch order.
  tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.version < b.version ? -1 : a.version > b.version ? 1 : 0));
  return { routeKey, revision: catalogRevision(tools), source: options.source, builtAt: options.now ?? Date.now(), tools, refused };
}

/**
 * `conflictPolicy: prefix`: every tool whose name two Tool Services offer is
 * exposed as `{serviceId}{separator}{name}` and called upstream by its own
 * name (`upstreamName`). Names nobody else offers stay as they are, so a
 * route without conflicts is exactly what its manifests say. A prefixed name
 * longer than {@link MAX_PREFIXED_NAME}, or equal to another tool's name, is
 * refused with the reason (never silently shortened).
 */
function prefixConflicts(tools: readonly CatalogTool[], conflicting: ReadonlySet<string>, taken: ReadonlySet<string>, separator: string, refused: RefusedTool[]): CatalogTool[] {
  const out: CatalogTool[] = [];
  for (const tool of tools) {
    if (!conflicting.has(tool.name)) {
      out.push(tool);
      continue;
    }
    const name = `${tool.serviceId}${separator}${tool.name}`;
    const refuse = (why: string): void => {
      refused.push({ name: tool.name, version: tool.version, problem: `tool "${tool.name}" of "${tool.serviceId}" (name conflict, prefixed "${name}"): ${why}` });
    };
    if (name.length > MAX_PREFIXED_NAME) refuse(`the prefixed name is longer than ${MAX_PREFIXED_NAME} characters`);
    else if (taken.has(name)) refuse('the prefixed name is already the name of another tool of the route');
    else out.push({ ...tool, name, upstreamName: tool.name });
  }
  return out;
}

/** Content revision: equal tool sets give equal revisions, so an unchanged rebuild is recognisable. */
export function catalogRevision(tools: readonly CatalogTool[]): string {
  return 'sha256:' + createHash('sha256').update(JSON.stringify(tools)).digest('hex').slice(0, 16);
}
