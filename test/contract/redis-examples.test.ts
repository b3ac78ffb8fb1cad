/**
 * Redis key formats v1 golden examples (SPEC §7 "Redis"): every
 * `docs/contracts/examples/redis/*.json` is written to a real redis-server
 * and read back through `RedisStore`, exactly as a replica would meet it.
 * The registry copy must load as written and look as `saveRegistry` writes
 * it; the route snapshot must decode (checksum verified) to its catalog, and
 * `encodeSnapshot` must reproduce its bytes; every unusable value must be
 * reported with the stated problem and never returned.
 * Format: `docs/contracts/redis-v1.md` §5.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRegistry } from '../../src/shared/catalog/registry.js';
import type { RouteCatalog } from '../../src/shared/catalog/types.js';
import { GatewayError } from '../../src/shared/errors.js';
import { decodeSnapshot, encodeSnapshot, HEADER_BYTES, SNAPSHOT_FORMAT, SNAPSHOT_MAGIC, type SnapshotMeta } from '../../src/shared/snapshot/layout.js';
import { REGISTRY_COPY_FORMAT, RedisStore } from '../../src/workers/refresh/redis-store.js';
import { waitUntil } from '../helpers/eventually.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { loadExamples, resolvePlaceholders } from './support.js';

interface Common {
  description: string;
  namespace: string;
  key: string;
}
type RegistryCopyExample = Common & ({ value: unknown } | { valueText: string }) & ({ usable: true } | { usable: false; problem: string });
interface SnapshotExample extends Common {
  routeKey: string;
  catalog: RouteCatalog;
  header: Record<string, number | string>;
  meta: SnapshotMeta;
  listTemplate: string;
  modernListTemplate: string;
  headerParams: Record<string, unknown>;
  snapshotBase64: string;
}
/** An older format that is still read: upgraded on read to the current format. */
interface UpgradedSnapshotExample extends Common {
  routeKey: string;
  upgradedFrom: number;
  catalog: RouteCatalog;
  meta: SnapshotMeta;
  snapshotBase64: string;
}
interface CorruptSnapshotExample extends Common {
  routeKey: string;
  snapshotBase64: string;
  usable: false;
  problem: string;
}

const all = loadExamples<Common & Record<string, unknown>>('redis');
const registryCopies = all.filter((e) => e.file.startsWith('registry-copy')) as unknown as Array<{ file: string; example: RegistryCopyExample }>;
const snapshots = all.filter((e) => e.file.startsWith('snapshot-') && 'catalog' in e.example && !('upgradedFrom' in e.example)) as unknown as Array<{ file: string; example: SnapshotExample }>;
const upgraded = all.filter((e) => e.file.startsWith('snapshot-') && 'upgradedFrom' in e.example) as unknown as Array<{ file: string; example: UpgradedSnapshotExample }>;
const corruptSnapshots = all.filter((e) => e.file.startsWith('snapshot-') && !('catalog' in e.example) && !('upgradedFrom' in e.example)) as unknown as Array<{
  file: string;
  example: CorruptSnapshotExample;
}>;

const ISO_TIME = '$regex:^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$';

function sabOf(base64: string): SharedArrayBuffer {
  const bytes = Buffer.from(base64, 'base64');
  const sab = new SharedArrayBuffer(bytes.length);
  new Uint8Array(sab).set(bytes);
  return sab;
}

let server: TestRedis;
let raw: Redis;
const stores = new Map<string, RedisStore>();

/** A connected store for a namespace (the gateway's own Redis access). */
async function storeFor(namespace: string): Promise<RedisStore> {
  let store = stores.get(namespace);
  if (store === undefined) {
    store = new RedisStore(server.url, namespace, 2_000);
    stores.set(namespace, store);
  }
  await waitUntil(() => store.connected, 'the RedisStore connected');
  return store;
}

beforeAll(async () => {
  server = await startRedis();
  raw = new Redis(server.url, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  for (const s of stores.values()) await s.close();
  raw?.disconnect();
  await server?.stop();
});

describe('Redis v1 golden examples (docs/contracts/examples/redis)', () => {
  it('has a usable registry copy, a route snapshot, and unusable values of both kinds', () => {
    expect(registryCopies.some((e) => e.example.usable)).toBe(true);
    expect(registryCopies.filter((e) => !e.example.usable).length).toBeGreaterThanOrEqual(2);
    expect(snapshots.length).toBeGreaterThanOrEqual(1);
    expect(corruptSnapshots.length).toBeGreaterThanOrEqual(3);
    for (const { file, example } of all) expect(typeof example.description, `${file}: description`).toBe('string');
  });

  describe('{ns}:portal-registry', () => {
    it.each(registryCopies.filter((e) => e.example.usable).map((e) => [e.file, e.example] as const))('%s is what saveRegistry writes and loadRegistry reads', async (file, example) => {
      const store = await storeFor(example.namespace);
      expect(store.registryKey(), `${file}: key`).toBe(example.key);
      if (!('value' in example)) throw new Error(`${file}: a usable copy needs value`);
      const value = example.value as { format: number; storedAt: string; document: unknown };
      expect(value.format).toBe(REGISTRY_COPY_FORMAT);

      // Written by the gateway: the same envelope, storedAt being the time of writing.
      await raw.del(example.key);
      expect(await store.saveRegistry(value.document), `${file}: saveRegistry`).toBe(true);
      const written = JSON.parse((await raw.get(example.key)) ?? 'null') as unknown;
      expect(written, `${file}: stored value`).toEqual(resolvePlaceholders({ ...value, storedAt: ISO_TIME }, written));
      expect(await store.loadRegistry(), `${file}: loadRegistry after saveRegistry`).toEqual({ document: value.document });

      // Written by another replica, byte for byte as in the example: read back as given.
      await raw.set(example.key, JSON.stringify(example.value));
      const loaded = await store.loadRegistry();
      expect(loaded, `${file}: loadRegistry`).toEqual({ document: value.document });
      if ('document' in loaded) expect(() => parseRegistry(loaded.document), `${file}: the copied document is a v1 registry`).not.toThrow();
    });

    it.each(registryCopies.filter((e) => !e.example.usable).map((e) => [e.file, e.example] as const))('%s is reported, never used', async (file, example) => {
      if (example.usable) return;
      const store = await storeFor(example.namespace);
      expect(store.registryKey(), `${file}: key`).toBe(example.key);
      await raw.set(example.key, 'valueText' in example ? example.valueText : JSON.stringify(example.value));
      const loaded = await store.loadRegistry();
      if ('document' in loaded) {
        // A sound envelope around a document that is not a registry: the refresh worker's parse rejects it.
        let caught: unknown;
        try {
          parseRegistry(loaded.document);
        } catch (err) {
          caught = err;
        }
        expect(GatewayError.is(caught), `${file}: the copied document was accepted as a registry`).toBe(true);
        expect((caught as GatewayError).message, `${file}: problem`).toContain(example.problem);
      } else {
        expect(loaded.kind, `${file}: ${JSON.stringify(loaded)}`).toBe('corrupt');
        expect(loaded.kind === 'corrupt' ? loaded.message : '', `${file}: problem`).toContain(example.problem);
      }
    });
  });

  describe('{ns}:route:{routeKey}', () => {
    it.each(snapshots.map((e) => [e.file, e.example] as const))('%s decodes (checksum verified) to its catalog', (file, example) => {
      const sab = sabOf(example.snapshotBase64);
      const view = decodeSnapshot(sab, { verifyChecksum: true });
      expect(view.meta, `${file}: meta`).toEqual(example.meta);
      expect(view.meta).toEqual({
        routeKey: example.catalog.routeKey,
        revision: example.catalog.revision,
        source: example.catalog.source,
        builtAt: example.catalog.builtAt,
        toolCount: example.header['listedCount'],
      });
      expect(view.catalogTools(), `${file}: catalog section`).toEqual(example.catalog.tools);
      expect(Buffer.from(view.listTemplate.slice()).toString('utf8'), `${file}: list template`).toBe(example.listTemplate);
      // The list template plus `<id>}` is a complete tools/list answer.
      expect(JSON.parse(`${example.listTemplate}7}`)).toMatchObject({ jsonrpc: '2.0', id: 7, result: { tools: expect.any(Array) } });
      // The 2026-07-28 template plus `<ttlMs>},"id":<id>}` is one too.
      expect(Buffer.from(view.modernListTemplate.slice()).toString('utf8'), `${file}: modern list template`).toBe(example.modernListTemplate);
      expect(JSON.parse(`${example.modernListTemplate}1000},"id":7}`)).toMatchObject({
        jsonrpc: '2.0',
        id: 7,
        result: { resultType: 'complete', tools: expect.any(Array), cacheScope: 'public', ttlMs: 1000 },
      });

      const dv = new DataView(sab);
      const u32 = (i: number): number => dv.getUint32(i * 4, true);
      const h = example.header;
      expect(u32(0)).toBe(SNAPSHOT_MAGIC);
      expect(Buffer.from(sab.slice(0, 4)).toString('latin1')).toBe('MCPS');
      expect('0x' + u32(0).toString(16)).toBe(h['magic']);
      expect(u32(1)).toBe(SNAPSHOT_FORMAT);
      expect(u32(1)).toBe(h['format']);
      expect(u32(2)).toBe(sab.byteLength);
      expect(u32(2)).toBe(h['total']);
      expect('0x' + u32(3).toString(16).padStart(8, '0')).toBe(h['crc32']);
      expect([u32(4), u32(5), u32(6), u32(7), u32(8), u32(9), u32(10), u32(11), u32(12), u32(13), u32(14)]).toEqual([
        h['metaOffset'],
        h['metaLength'],
        h['listOffset'],
        h['listLength'],
        h['catalogOffset'],
        h['catalogLength'],
        h['listedCount'],
        h['modernListOffset'],
        h['modernListLength'],
        h['headerParamsOffset'],
        h['headerParamsLength'],
      ]);
      // Sections are contiguous from byte 64 in the order meta, list, catalog, modern list, header params; bytes 60–63 are reserved zeros.
      expect(u32(4)).toBe(HEADER_BYTES);
      expect(u32(6)).toBe(u32(4) + u32(5));
      expect(u32(8)).toBe(u32(6) + u32(7));
      expect(u32(11)).toBe(u32(8) + u32(9));
      expect(u32(13)).toBe(u32(11) + u32(12));
      expect(u32(13) + u32(14)).toBe(u32(2));
      expect(JSON.parse(Buffer.from(sab.slice(u32(13), u32(13) + u32(14))).toString('utf8'))).toEqual(example.headerParams);
      expect([...new Uint8Array(sab, 60, 4)].every((b) => b === 0)).toBe(true);
    });

    it.each(snapshots.map((e) => [e.file, e.example] as const))('%s: encodeSnapshot(catalog) reproduces the bytes', (file, example) => {
      const encoded = Buffer.from(new Uint8Array(encodeSnapshot(example.catalog)));
      expect(encoded.toString('base64'), `${file}: bytes`).toBe(example.snapshotBase64);
    });

    it.each(snapshots.map((e) => [e.file, e.example] as const))('%s is what saveSnapshot writes and loadSnapshot reads', async (file, example) => {
      const store = await storeFor(example.namespace);
      expect(store.routeKey(example.routeKey), `${file}: key`).toBe(example.key);
      await raw.del(example.key);
      expect(await store.saveSnapshot(example.routeKey, encodeSnapshot(example.catalog))).toBe(true);
      expect((await raw.getBuffer(example.key))?.toString('base64'), `${file}: stored bytes`).toBe(example.snapshotBase64);

      await raw.set(example.key, Buffer.from(example.snapshotBase64, 'base64'));
      const loaded = await store.loadSnapshot(example.routeKey);
      expect('view' in loaded ? 'view' : JSON.stringify(loaded), `${file}: loadSnapshot`).toBe('view');
      if ('view' in loaded) {
        expect(loaded.view.meta).toEqual(example.meta);
        expect(loaded.view.catalogTools()).toEqual(example.catalog.tools);
      }
    });

    it.each(upgraded.map((e) => [e.file, e.example] as const))('%s (an older format) is read: upgraded to the current format, same meta and catalog', async (file, example) => {
      const view = decodeSnapshot(sabOf(example.snapshotBase64), { verifyChecksum: true });
      expect(new DataView(sabOf(example.snapshotBase64)).getUint32(4, true), `${file}: the stored format`).toBe(example.upgradedFrom);
      expect(new DataView(view.buffer).getUint32(4, true), `${file}: upgraded format`).toBe(SNAPSHOT_FORMAT);
      expect(view.meta).toEqual(example.meta);
      expect(view.catalogTools()).toEqual(example.catalog.tools);
      expect(Buffer.from(new Uint8Array(view.buffer))).toEqual(Buffer.from(new Uint8Array(encodeSnapshot(example.catalog))));
      const store = await storeFor(example.namespace);
      await raw.set(example.key, Buffer.from(example.snapshotBase64, 'base64'));
      const loaded = await store.loadSnapshot(example.routeKey);
      expect('view' in loaded ? loaded.view.meta : JSON.stringify(loaded), `${file}: loadSnapshot`).toEqual(example.meta);
    });

    it.each(corruptSnapshots.map((e) => [e.file, e.example] as const))('%s is reported, never served', async (file, example) => {
      const store = await storeFor(example.namespace);
      expect(store.routeKey(example.routeKey), `${file}: key`).toBe(example.key);
      await raw.set(example.key, Buffer.from(example.snapshotBase64, 'base64'));
      const loaded = await store.loadSnapshot(example.routeKey);
      expect('view' in loaded ? 'served' : loaded.kind, `${file}: ${JSON.stringify(loaded)}`).toBe('corrupt');
      if ('view' in loaded || loaded.kind !== 'corrupt') return;
      expect(loaded.message, `${file}: problem`).toContain(example.problem);
      expect(loaded.message, `${file}: names the key`).toContain(example.key);
    });
  });

  // That these examples are tracked, not ignored by git (SPEC §9 defect 6), is checked for every folder in docs-drift.test.ts.
});
