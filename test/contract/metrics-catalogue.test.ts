/**
 * docs/operations.md "Metrics catalogue" against a real gateway's `/metrics`
 * (every thread kind running: two acceptors, a shard, the refresh worker,
 * after a `tools/call`): every family served is documented (by name, or by
 * a `prefix_*` row for the default process metrics), every documented name
 * is served, each row gives the family's type, and every label a sample
 * carries is documented for it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { parsePrometheus, type Sample } from '../helpers/prometheus.js';

const DOC = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'operations.md'), 'utf8');

interface Row {
  name: string;
  types: string;
  labels: string[];
}

/** The rows of the catalogue table: `| \`name\` | type | labels | meaning |`. */
function catalogue(): Row[] {
  const start = DOC.indexOf('## Metrics catalogue');
  const end = DOC.indexOf('\n## ', start + 1);
  const section = DOC.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\| `([a-z_:*]+)` \| ([^|]+) \| ([^|]+) \|/gm)].map((m) => ({
    name: m[1] as string,
    types: (m[2] as string).trim(),
    labels: [...(m[3] as string).matchAll(/`([a-z_]+)`/g)].map((l) => l[1] as string),
  }));
}

let svc: FixtureToolService;
let gw: Gateway;
let text = '';
beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }]));
  svc.setBehavior('/tools/echo', { kind: 'echo' });
  gw = await startTestGateway({
    server: { admin: { port: 0 } },
    workers: { acceptors: 2, shards: 1 },
    catalog: { static: { routes: { core: [{ id: 'fixture', baseUrl: svc.url }] } } },
  });
  expect((await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }))).status).toBe(200);
  text = await (await fetch(`http://127.0.0.1:${gw.adminPort}/metrics`)).text();
});
afterAll(async () => {
  await gw?.close(0);
  await svc?.close();
});

function served(): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]));
}

function rowFor(rows: Row[], name: string): Row | undefined {
  return rows.find((r) => r.name === name) ?? rows.find((r) => r.name.endsWith('*') && name.startsWith(r.name.slice(0, -1)));
}

describe('docs/operations.md metrics catalogue', () => {
  it('documents every family the gateway serves, with its type', () => {
    const rows = catalogue();
    expect(rows.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const [name, type] of served()) {
      const row = rowFor(rows, name);
      if (row === undefined) missing.push(name);
      else expect(row.types, `${name} is a ${type}`).toContain(type);
    }
    expect(missing).toEqual([]);
  });

  it('lists no family the gateway does not serve', () => {
    const names = served();
    const stale = catalogue()
      .filter((r) => !r.name.endsWith('*'))
      .map((r) => r.name)
      .filter((n) => !names.has(n));
    expect(stale).toEqual([]);
    // Every wildcard row matches something too.
    for (const r of catalogue().filter((row) => row.name.endsWith('*')))
      expect(
        [...names.keys()].some((n) => n.startsWith(r.name.slice(0, -1))),
        r.name,
      ).toBe(true);
  });

  it('documents every label a sample carries', () => {
    const rows = catalogue();
    const family = (s: Sample): string => s.name.replace(/_(bucket|sum|count)$/, '');
    const undocumented = new Set<string>();
    for (const s of parsePrometheus(text)) {
      const row = rowFor(rows, family(s)) ?? rowFor(rows, s.name);
      if (row === undefined || row.name.endsWith('*')) continue;
      for (const label of Object.keys(s.labels)) if (label !== 'le' && !row.labels.includes(label)) undefinedLabel(undocumented, row.name, label);
    }
    expect([...undocumented]).toEqual([]);
  });
});

function undefinedLabel(set: Set<string>, name: string, label: string): void {
  set.add(`${name}{${label}}`);
}
