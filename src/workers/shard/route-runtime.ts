/**
 * What a shard keeps per route: the published snapshot plus, derived from it
 * once at install time, the tool resolution table and one compiled argument
 * validator per tool. Immutable after construction; a new snapshot gets a new
 * RouteRuntime, swapped in with one Map store.
 */
import { Compile, type Validator } from 'typebox/compile';
import type { CatalogTool } from '../../shared/catalog/types.js';
import type { SnapshotView } from '../../shared/snapshot/layout.js';

/** How a tool name resolves in a route. */
export type Resolution =
  | { kind: 'tool'; tool: CatalogTool; validator: Validator }
  | { kind: 'unknown' }
  | { kind: 'ambiguous'; versions: string[] };

/** A route's call-time view of its snapshot. */
export class RouteRuntime {
  private readonly byName = new Map<string, Resolution>();

  constructor(readonly snapshot: SnapshotView) {
    const active = new Map<string, CatalogTool[]>();
    for (const tool of snapshot.catalogTools()) {
      if (!tool.active) continue;
      const list = active.get(tool.name);
      if (list) list.push(tool);
      else active.set(tool.name, [tool]);
    }
    for (const [name, versions] of active) {
      if (versions.length === 1) {
        const tool = versions[0] as CatalogTool;
        // Compiled once per tool version at install, never per request (STYLE.md).
        this.byName.set(name, { kind: 'tool', tool, validator: Compile(tool.inputSchema) as unknown as Validator });
      } else {
        this.byName.set(name, { kind: 'ambiguous', versions: versions.map((v) => v.version) });
      }
    }
  }

  /** Exactly one active version → the tool; none → unknown; several → ambiguous (never pick one). */
  resolve(name: string): Resolution {
    return this.byName.get(name) ?? UNKNOWN;
  }
}

const UNKNOWN: Resolution = { kind: 'unknown' };
