import { describe, expect, it } from 'vitest';
import type { CatalogTool, RouteCatalog } from '../../../../src/shared/catalog/types.js';
import { GatewayError } from '../../../../src/shared/errors.js';
import { crc32 } from 'node:zlib';
import { SERVER_INFO } from '../../../../src/shared/protocol/mcp.js';
import { acceptorSections, decodeSnapshot, encodeSnapshot, HEADER_BYTES, listedToolsJson, SNAPSHOT_FORMAT, SNAPSHOT_MAGIC, toolsListResultJson } from '../../../../src/shared/snapshot/layout.js';

/** A format-1 snapshot as an older replica wrote it (one template, three sections): what a Redis copy may still hold. */
function encodeFormat1(c: RouteCatalog): SharedArrayBuffer {
  const enc = new TextEncoder();
  const listed = JSON.parse(toolsListResultJson(c.tools)) as { tools: unknown[] };
  const parts = [
    enc.encode(JSON.stringify({ routeKey: c.routeKey, revision: c.revision, source: c.source, builtAt: c.builtAt, toolCount: listed.tools.length })),
    enc.encode(`{"jsonrpc":"2.0","result":${toolsListResultJson(c.tools)},"id":`),
    enc.encode(JSON.stringify(c.tools)),
  ];
  const total = 64 + parts.reduce((n, p) => n + p.length, 0);
  const sab = new SharedArrayBuffer(total);
  const bytes = new Uint8Array(sab);
  const view = new DataView(sab);
  let off = 64;
  const at: number[] = [];
  for (const p of parts) {
    bytes.set(p, off);
    at.push(off, p.length);
    off += p.length;
  }
  [SNAPSHOT_MAGIC, 1, total, 0, ...at, listed.tools.length].forEach((v, i) => {
    view.setUint32(i * 4, v, true);
  });
  view.setUint32(12, crc32(bytes.subarray(64)), true);
  return sab;
}

const tool = (name: string, over: Partial<CatalogTool> = {}): CatalogTool => ({
  name,
  version: '1.0.0',
  active: true,
  serviceId: 'svc',
  inputSchema: { type: 'object' },
  timeoutMs: 5000,
  executionUrl: `http://127.0.0.1:9000/tools/${name}`,
  ...over,
});

const tools: CatalogTool[] = [
  tool('full', {
    title: 'Full tool',
    description: 'Has every optional field — 한국어 ✓',
    inputSchema: { type: 'object', properties: { q: { type: 'string', description: 'query "quoted"' } }, required: ['q'] },
    outputSchema: { type: 'object', properties: { hits: { type: 'integer' } } },
    annotations: { readOnlyHint: true, title: 'x' },
  }),
  tool('bare'),
  tool('twin', { version: '1.0.0' }),
  tool('twin', { version: '2.0.0' }),
  tool('retired', { active: false }),
  tool('upgraded', { version: '1.0.0', active: false, description: 'old' }),
  tool('upgraded', { version: '2.0.0', description: 'new' }),
];
const catalog: RouteCatalog = { routeKey: 'core', revision: 'sha256:00112233aabbccdd', source: 'portal', builtAt: 1_764_496_800_123, tools };

const u32 = (sab: SharedArrayBuffer, field: number): number => new DataView(sab).getUint32(field * 4, true);
function copyOf(sab: SharedArrayBuffer, extra = 0): SharedArrayBuffer {
  const out = new SharedArrayBuffer(sab.byteLength + extra);
  new Uint8Array(out).set(new Uint8Array(sab));
  return out;
}
function withField(sab: SharedArrayBuffer, field: number, value: number): SharedArrayBuffer {
  const out = copyOf(sab);
  new DataView(out).setUint32(field * 4, value, true);
  return out;
}
function expectCorrupt(fn: () => unknown, reason: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(GatewayError.is(caught)).toBe(true);
  expect((caught as GatewayError).code).toBe('SNAPSHOT_CORRUPT');
  expect((caught as GatewayError).message).toMatch(reason);
}

describe('toolsListResultJson', () => {
  const listed = (JSON.parse(toolsListResultJson(tools)) as { tools: Array<Record<string, unknown>> }).tools;

  it('lists only names with exactly one active version, with that version', () => {
    expect(listed.map((t) => t['name'])).toEqual(['full', 'bare', 'upgraded']);
    expect(listed[2]?.['description']).toBe('new');
  });

  it('exposes exactly name/title/description/inputSchema/outputSchema/annotations, as given', () => {
    expect(listed[0]).toEqual({
      name: 'full',
      title: 'Full tool',
      description: 'Has every optional field — 한국어 ✓',
      inputSchema: { type: 'object', properties: { q: { type: 'string', description: 'query "quoted"' } }, required: ['q'] },
      outputSchema: { type: 'object', properties: { hits: { type: 'integer' } } },
      annotations: { readOnlyHint: true, title: 'x' },
    });
    expect(Object.keys(listed[1] ?? {})).toEqual(['name', 'inputSchema']);
  });
});

describe('encodeSnapshot / decodeSnapshot', () => {
  const sab = encodeSnapshot(catalog);

  it('writes the header: magic, format, total, and sections inside the buffer', () => {
    expect(sab).toBeInstanceOf(SharedArrayBuffer);
    expect(u32(sab, 0)).toBe(SNAPSHOT_MAGIC);
    expect(new TextDecoder().decode(new Uint8Array(sab.slice(0, 4)))).toBe('MCPS');
    expect(u32(sab, 1)).toBe(SNAPSHOT_FORMAT);
    expect(u32(sab, 2)).toBe(sab.byteLength);
    expect(u32(sab, 4)).toBe(HEADER_BYTES);
    expect(u32(sab, 10)).toBe(3);
    // Format 2: the modern template and the header section follow the catalog.
    expect(u32(sab, 11)).toBe(u32(sab, 8) + u32(sab, 9));
    expect(u32(sab, 13)).toBe(u32(sab, 11) + u32(sab, 12));
    expect(u32(sab, 13) + u32(sab, 14)).toBe(sab.byteLength);
    expect(u32(sab, 15)).toBe(0);
  });

  it('holds the 2026-07-28 template: resultType, serverInfo, the tools, cacheScope, then ttlMs and the id spliced in', () => {
    const view = decodeSnapshot(sab, { verifyChecksum: true });
    const template = Buffer.from(view.modernListTemplate).toString('utf8');
    expect(template.endsWith('"ttlMs":')).toBe(true);
    expect(JSON.parse(`${template}1500},"id":"x"}`)).toEqual({
      jsonrpc: '2.0',
      id: 'x',
      result: {
        resultType: 'complete',
        _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
        tools: JSON.parse(listedToolsJson(tools, 'modern')) as unknown,
        cacheScope: 'public',
        ttlMs: 1500,
      },
    });
  });

  it('presents an outputSchema that is not object-rooted, icons and tool _meta to 2026-07-28 as given; legacy sees no such outputSchema', () => {
    const faithful = [tool('arr', { outputSchema: { type: 'array', items: { type: 'string' } }, icons: [{ src: 'https://x/i.png' }], meta: { 'com.example/k': 1 }, taskSupport: 'optional' })];
    const legacy = (JSON.parse(toolsListResultJson(faithful)) as { tools: Array<Record<string, unknown>> }).tools[0];
    const modern = (JSON.parse(listedToolsJson(faithful, 'modern')) as Array<Record<string, unknown>>)[0];
    expect(modern).toEqual({
      name: 'arr',
      icons: [{ src: 'https://x/i.png' }],
      inputSchema: { type: 'object' },
      outputSchema: { type: 'array', items: { type: 'string' } },
      _meta: { 'com.example/k': 1 },
    });
    expect(legacy).toEqual({ name: 'arr', icons: [{ src: 'https://x/i.png' }], inputSchema: { type: 'object' }, _meta: { 'com.example/k': 1 } });
  });

  it('gives an acceptor both templates, builtAt and the x-mcp-header declarations of listed tools', () => {
    const withHeaders = [tool('sql', { inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } }), tool('plain')];
    const buffer = encodeSnapshot({ ...catalog, tools: withHeaders });
    const s = acceptorSections(buffer);
    const view = decodeSnapshot(buffer);
    expect(Buffer.from(s.listTemplate)).toEqual(Buffer.from(view.listTemplate));
    expect(Buffer.from(s.modernListTemplate)).toEqual(Buffer.from(view.modernListTemplate));
    expect(s.builtAt).toBe(catalog.builtAt);
    expect(s.headerParams).toEqual(new Map([['sql', [{ name: 'Region', header: 'mcp-param-region', path: ['region'], type: 'string' }]]]));
    expect(acceptorSections(sab).headerParams).toBeNull();
  });

  it("reads a format-1 snapshot (an older replica's Redis copy) by re-encoding it in format 2", () => {
    const old = encodeFormat1(catalog);
    const view = decodeSnapshot(old, { verifyChecksum: true });
    expect(u32(view.buffer, 1)).toBe(SNAPSHOT_FORMAT);
    expect(view.meta).toEqual(decodeSnapshot(sab).meta);
    expect(view.catalogTools()).toEqual(tools);
    expect(Buffer.from(new Uint8Array(view.buffer))).toEqual(Buffer.from(new Uint8Array(sab)));
  });

  it('round-trips meta, the list template and every catalog tool', () => {
    const view = decodeSnapshot(sab, { verifyChecksum: true });
    expect(view.buffer).toBe(sab);
    expect(view.meta).toEqual({ routeKey: 'core', revision: 'sha256:00112233aabbccdd', source: 'portal', builtAt: 1_764_496_800_123, toolCount: 3 });
    const template = Buffer.from(view.listTemplate).toString('utf8');
    expect(template).toBe(`{"jsonrpc":"2.0","result":${toolsListResultJson(tools)},"id":`);
    expect(JSON.parse(template + '"x"}')).toEqual({ jsonrpc: '2.0', id: 'x', result: JSON.parse(toolsListResultJson(tools)) as unknown });
    expect(view.catalogTools()).toEqual(tools);
  });

  it('gives the list template as a view into the shared buffer (no copy per reader)', () => {
    const view = decodeSnapshot(sab);
    expect(view.listTemplate.buffer).toBe(sab);
  });

  it('encodes an empty catalog', () => {
    const view = decodeSnapshot(encodeSnapshot({ ...catalog, tools: [] }), { verifyChecksum: true });
    expect(view.meta.toolCount).toBe(0);
    expect(Buffer.from(view.listTemplate).toString('utf8')).toBe('{"jsonrpc":"2.0","result":{"tools":[]},"id":');
    expect(view.catalogTools()).toEqual([]);
  });

  it('is deterministic for equal catalogs', () => {
    expect(Buffer.from(new Uint8Array(encodeSnapshot(catalog)))).toEqual(Buffer.from(new Uint8Array(sab)));
  });
});

describe('decodeSnapshot refuses damaged snapshots with SNAPSHOT_CORRUPT', () => {
  const sab = encodeSnapshot(catalog);

  it('shorter than the header', () => {
    expectCorrupt(() => decodeSnapshot(new SharedArrayBuffer(HEADER_BYTES - 1)), /shorter than its header/);
    expectCorrupt(() => decodeSnapshot(new SharedArrayBuffer(0)), /shorter than its header/);
  });

  it('bad magic', () => {
    expectCorrupt(() => decodeSnapshot(withField(sab, 0, 0x4d435053)), /bad magic/);
    expectCorrupt(() => decodeSnapshot(new SharedArrayBuffer(HEADER_BYTES)), /bad magic/);
  });

  it('another format version', () => {
    expectCorrupt(() => decodeSnapshot(withField(sab, 1, SNAPSHOT_FORMAT + 1)), /format 3 is not 2/);
    expectCorrupt(() => decodeSnapshot(withField(sab, 1, 0)), /format 0 is not 2/);
  });

  it('a total that does not match the buffer', () => {
    expectCorrupt(() => decodeSnapshot(withField(sab, 2, sab.byteLength - 1)), /length does not match/);
    expectCorrupt(() => decodeSnapshot(copyOf(sab, 8)), /length does not match/);
  });

  it('a section outside the buffer or overlapping the header', () => {
    // The meta section is read inside the JSON try block, so its bounds failure is reported as unreadable meta.
    expectCorrupt(() => decodeSnapshot(withField(sab, 5, sab.byteLength)), /section out of bounds|meta section/);
    expectCorrupt(() => decodeSnapshot(withField(sab, 4, 8)), /section out of bounds|meta section/);
    expectCorrupt(() => decodeSnapshot(withField(sab, 8, 16)), /section out of bounds/);
    expectCorrupt(() => decodeSnapshot(withField(sab, 6, 0xffffffff)), /section out of bounds/);
    expectCorrupt(() => decodeSnapshot(withField(sab, 9, 0xffffffff)), /section out of bounds/);
  });

  it('a flipped byte, when the checksum is verified; the original stays intact', () => {
    const damaged = copyOf(sab);
    const bytes = new Uint8Array(damaged);
    const at = u32(sab, 6) + 30; // inside the list template
    bytes[at] = (bytes[at] as number) ^ 0x01;
    expectCorrupt(() => decodeSnapshot(damaged, { verifyChecksum: true }), /checksum mismatch/);
    expect(() => decodeSnapshot(sab, { verifyChecksum: true })).not.toThrow();
    const flippedHeaderCrc = withField(sab, 3, (u32(sab, 3) + 1) >>> 0);
    expectCorrupt(() => decodeSnapshot(flippedHeaderCrc, { verifyChecksum: true }), /checksum mismatch/);
  });

  it('a meta section that is not JSON or not the meta schema', () => {
    const damaged = copyOf(sab);
    new Uint8Array(damaged)[u32(sab, 4)] = 0x78; // "x" replaces the opening brace
    expectCorrupt(() => decodeSnapshot(damaged), /meta section is not JSON/);
    const shortMeta = withField(sab, 5, 2); // '{"' is not JSON either
    expectCorrupt(() => decodeSnapshot(shortMeta), /meta section is not JSON/);
    const emptyObject = copyOf(sab);
    const metaOff = u32(sab, 4);
    new Uint8Array(emptyObject).set(new TextEncoder().encode('{}'), metaOff);
    expectCorrupt(() => decodeSnapshot(withFieldOn(emptyObject, 5, 2)), /meta section does not match its schema/);
  });

  it('a catalog section that is not JSON, when the tools are read', () => {
    const damaged = copyOf(sab);
    new Uint8Array(damaged)[u32(sab, 8)] = 0x78;
    const view = decodeSnapshot(damaged);
    expectCorrupt(() => view.catalogTools(), /catalog section is not JSON/);
  });
});

function withFieldOn(sab: SharedArrayBuffer, field: number, value: number): SharedArrayBuffer {
  new DataView(sab).setUint32(field * 4, value, true);
  return sab;
}
