import { writeFileSync } from 'node:fs';
import { it } from 'vitest';
import { catalogRevision } from '../../src/shared/catalog/merge.js';
import type { CatalogTool, RouteCatalog } from '../../src/shared/catalog/types.js';
import { encodeSnapshot, decodeSnapshot } from '../../src/shared/snapshot/layout.js';

const dir = '/work/main/docs/contracts/examples/redis/';
const put = (name: string, v: unknown): void => writeFileSync(dir + name + '.json', JSON.stringify(v, null, 2) + '\n');

it('generates', () => {
  const tools: CatalogTool[] = [
    {
      name: 'employee_search', version: '1.2.0', active: true, serviceId: 'hr-tools',
      title: 'Search employees', description: 'Find employees by name or team.',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      outputSchema: { type: 'object' }, annotations: { readOnlyHint: true },
      timeoutMs: 5000, executionUrl: 'http://hr-tools:8080/tools/employee_search',
    },
    {
      name: 'leave_request', version: '1.0.0', active: false, serviceId: 'hr-tools',
      description: 'File a leave request (retired version).',
      inputSchema: { type: 'object' }, timeoutMs: 30000, executionUrl: 'http://hr-tools:8080/tools/leave_request/v1',
    },
    {
      name: 'leave_request', version: '2.0.0', active: true, serviceId: 'hr-tools',
      description: 'File a leave request.',
      inputSchema: { type: 'object', properties: { days: { type: 'integer', minimum: 1 } }, required: ['days'] },
      timeoutMs: 30000, executionUrl: 'http://hr-tools:8080/tools/leave_request',
    },
  ];
  const catalog: RouteCatalog = { routeKey: 'core', revision: catalogRevision(tools), source: 'portal', builtAt: Date.parse('2026-11-30T10:00:05.000Z'), tools };
  const sab = encodeSnapshot(catalog);
  const bytes = Buffer.from(new Uint8Array(sab));
  const dv = new DataView(sab);
  const u = (i: number): number => dv.getUint32(i * 4, true);
  const view = decodeSnapshot(sab, { verifyChecksum: true });
  const header = {
    magic: '0x' + u(0).toString(16), format: u(1), total: u(2), crc32: '0x' + u(3).toString(16).padStart(8, '0'),
    metaOffset: u(4), metaLength: u(5), listOffset: u(6), listLength: u(7), catalogOffset: u(8), catalogLength: u(9), listedCount: u(10),
  };
  put('snapshot-core', {
    description: 'The snapshot of route "core" as stored at {ns}:route:core (the value is these bytes, base64 here). Re-encoding `catalog` with encodeSnapshot must reproduce the bytes exactly (encoding is deterministic given builtAt); decoding them with the checksum check must give back `meta`, `listTemplate` and `catalog.tools`. leave_request has two versions, one active, so the catalog section has three tools and tools/list two.',
    namespace: 'mcp-gateway',
    routeKey: 'core',
    key: 'mcp-gateway:route:core',
    catalog,
    header,
    meta: view.meta,
    listTemplate: Buffer.from(view.listTemplate.slice()).toString('utf8'),
    snapshotBase64: bytes.toString('base64'),
  });
  const corrupt = (name: string, description: string, routeKey: string, b: Buffer, problem: string): void =>
    put(name, { description, namespace: 'mcp-gateway', routeKey, key: `mcp-gateway:route:${routeKey}`, snapshotBase64: b.toString('base64'), usable: false, problem });
  const flipped = Buffer.from(bytes);
  const at = u(8) + 20;
  flipped[at] = flipped[at]! ^ 0x01;
  corrupt('snapshot-checksum-mismatch', `snapshot-core with one bit flipped in the catalog section (byte ${at}); the header is intact, so only the CRC-32 check finds it. Ignored and reported, never served.`, 'core', flipped, 'checksum mismatch');
  corrupt('snapshot-other-route', 'A sound snapshot of route "core" stored under the key of route "process" (a copy/paste or namespace mix-up). It verifies, but it is not this route\'s catalog: ignored and reported.', 'process', bytes, 'holds route "core"');
  const fmt2 = Buffer.from(bytes);
  fmt2.writeUInt32LE(2, 4);
  corrupt('snapshot-foreign-format', 'snapshot-core with format 2 in its header, as a future gateway version might write: a reader of format 1 ignores and reports it rather than guessing.', 'core', fmt2, 'format 2 is not 1');
  corrupt('snapshot-truncated', 'snapshot-core cut off after 200 bytes (a partial write): the header\'s total does not match the value\'s length.', 'core', bytes.subarray(0, 200), 'length does not match its header');
  corrupt('snapshot-not-a-snapshot', 'A JSON text where snapshot bytes belong (some other program wrote the key): the magic "MCPS" is missing.', 'core', Buffer.from(JSON.stringify({ routeKey: 'core', tools: [], note: 'not a gateway snapshot at all, but long enough to have a header' })), 'bad magic');
  const doc = {
    revision: '2026-11-30T10:00:00Z#42',
    routes: {
      core: [{ id: 'hr-tools', baseUrl: 'http://hr-tools:8080', manifestPath: '/manifest' }],
      process: [{ id: 'erp-tools', baseUrl: 'http://erp:9000' }],
    },
  };
  put('registry-copy', {
    description: 'The value of {ns}:portal-registry after the Portal served the SPEC §7 document: a JSON string {format: 1, storedAt, document}, where document is the registry document as the Portal served it.',
    namespace: 'mcp-gateway', key: 'mcp-gateway:portal-registry',
    value: { format: 1, storedAt: '2026-11-30T10:00:05.123Z', document: doc },
    usable: true,
  });
  put('registry-copy-foreign-format', {
    description: 'A registry copy with format 2 (a future gateway version): not a format-1 copy, ignored and reported; the gateway waits for the Portal instead.',
    namespace: 'mcp-gateway', key: 'mcp-gateway:portal-registry',
    value: { format: 2, storedAt: '2026-11-30T10:00:05.123Z', document: doc },
    usable: false, problem: 'is not a format-1 registry copy',
  });
  put('registry-copy-bare-document', {
    description: 'The bare registry document without the {format, storedAt, document} envelope: not a registry copy, ignored and reported.',
    namespace: 'mcp-gateway', key: 'mcp-gateway:portal-registry',
    value: doc,
    usable: false, problem: 'is not a format-1 registry copy',
  });
  put('registry-copy-not-json', {
    description: 'A value that is not JSON at all: ignored and reported.',
    namespace: 'mcp-gateway', key: 'mcp-gateway:portal-registry',
    valueText: 'core=hr-tools,process=erp-tools',
    usable: false, problem: 'is not JSON',
  });
  put('registry-copy-invalid-document', {
    description: 'A well-formed format-1 copy whose document is not a v1 registry (no routes): the Redis copy is read, but the registry it holds is rejected and reported, never obeyed.',
    namespace: 'mcp-gateway', key: 'mcp-gateway:portal-registry',
    value: { format: 1, storedAt: '2026-11-30T10:00:05.123Z', document: { revision: 'r1' } },
    usable: false, problem: 'registry document is not a v1 registry',
  });
});
