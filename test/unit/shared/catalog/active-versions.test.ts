/**
 * The "exactly one active version" rule (docs/contracts/tool-service-manifest-v1.md §3),
 * written once in `resolveActiveVersions` and read by both `tools/list`
 * (`listedTools`, the snapshot's list template) and `tools/call` (the shard's
 * resolution table).
 */
import { describe, expect, it } from 'vitest';
import { resolveActiveVersions } from '../../../../src/shared/catalog/active-versions.js';
import { listedTools } from '../../../../src/shared/catalog/merge.js';
import type { CatalogTool } from '../../../../src/shared/catalog/types.js';

const tool = (name: string, version: string, active = true): CatalogTool => ({
  name,
  version,
  active,
  serviceId: 'svc',
  inputSchema: { type: 'object' },
  timeoutMs: 1000,
  executionUrl: `http://127.0.0.1:9000/tools/${name}/${version}`,
});

describe('resolveActiveVersions', () => {
  it('one active version → the tool; zero → absent (unknown); two or more → ambiguous with the active versions', () => {
    const only = tool('only', '1.0.0');
    const mixed2 = tool('mixed', '2');
    const resolved = resolveActiveVersions([
      tool('retired', '1', false),
      tool('retired', '2', false),
      only,
      tool('twin', '1'),
      tool('twin', '2'),
      tool('mixed', '1', false),
      mixed2,
      tool('mixed', '3', false),
      tool('triple', 'a'),
      tool('triple', 'b', false),
      tool('triple', 'c'),
      tool('triple', 'd'),
    ]);
    expect([...resolved.keys()]).toEqual(['only', 'twin', 'mixed', 'triple']);
    expect(resolved.get('only')).toEqual({ kind: 'tool', tool: only });
    expect(resolved.get('mixed')).toEqual({ kind: 'tool', tool: mixed2 });
    expect(resolved.get('twin')).toEqual({ kind: 'ambiguous', versions: ['1', '2'] });
    expect(resolved.get('triple')).toEqual({ kind: 'ambiguous', versions: ['a', 'c', 'd'] });
    expect(resolved.has('retired')).toBe(false);
  });

  it('returns the same tool object (no copy), so a caller can key caches by identity', () => {
    const t = tool('x', '1');
    const resolved = resolveActiveVersions([t]).get('x');
    expect(resolved?.kind === 'tool' ? resolved.tool : undefined).toBe(t);
  });

  it('an empty catalog, or one with no active version, resolves nothing', () => {
    expect(resolveActiveVersions([]).size).toBe(0);
    expect(resolveActiveVersions([tool('a', '1', false), tool('b', '1', false)]).size).toBe(0);
  });

  it('does not depend on the order of inactive versions around the active one', () => {
    const active = tool('n', '5');
    for (const tools of [
      [tool('n', '1', false), active],
      [active, tool('n', '1', false)],
      [tool('n', '1', false), active, tool('n', '9', false)],
    ]) {
      expect(resolveActiveVersions(tools).get('n')).toEqual({ kind: 'tool', tool: active });
    }
  });

  it('listedTools lists exactly the names resolved to one tool, in the same order', () => {
    const tools = [tool('b', '1'), tool('a', '1'), tool('a', '2'), tool('c', '1', false), tool('d', '1'), tool('b', '2', false)];
    const resolved = [...resolveActiveVersions(tools).values()].flatMap((r) => (r.kind === 'tool' ? [r.tool] : []));
    expect(listedTools(tools)).toEqual(resolved);
    expect(listedTools(tools).map((t) => t.name)).toEqual(['b', 'd']);
  });
});
