/**
 * The one "exactly one active version" rule of a route's catalog
 * (docs/contracts/tool-service-manifest-v1.md §3): a tool name is listed by
 * `tools/list` and callable by `tools/call` only when exactly one of its
 * versions is active. No active version → the name is unknown; two or more →
 * it is ambiguous and never resolved by picking one. Both readers of the rule
 * (the list template built by the refresh worker, the shard's call-time
 * resolution table) go through {@link resolveActiveVersions}, so they cannot
 * disagree about a name.
 */
import type { CatalogTool } from './types.js';

/** How one tool name with at least one active version resolves. */
export type ActiveVersion = { kind: 'tool'; tool: CatalogTool } | { kind: 'ambiguous'; versions: string[] };

/**
 * Every name that has at least one active version, in the order of its first
 * active version in `tools`: `tool` when exactly one is active, else
 * `ambiguous` with the active versions in that order. Names with no active
 * version are absent (unknown).
 */
export function resolveActiveVersions(tools: readonly CatalogTool[]): Map<string, ActiveVersion> {
  const active = new Map<string, CatalogTool[]>();
  for (const tool of tools) {
    if (!tool.active) continue;
    const list = active.get(tool.name);
    if (list === undefined) active.set(tool.name, [tool]);
    else list.push(tool);
  }
  const out = new Map<string, ActiveVersion>();
  for (const [name, versions] of active) {
    const [only] = versions;
    out.set(name, versions.length === 1 && only !== undefined ? { kind: 'tool', tool: only } : { kind: 'ambiguous', versions: versions.map((v) => v.version) });
  }
  return out;
}
