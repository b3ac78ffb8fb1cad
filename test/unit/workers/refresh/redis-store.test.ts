import { connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteCatalog } from '../../../../src/shared/catalog/types.js';
import { decodeSnapshot, encodeSnapshot } from '../../../../src/shared/snapshot/layout.js';
import { RedisStore } from '../../../../src/workers/refresh/redis-store.js';
import { sleep, waitUntil } from '../../../helpers/eventually.js';
import { startRedis, type TestRedis } from '../../../helpers/redis.js';

const catalog = (routeKey: string, name = 'lookup'): RouteCatalog => ({
  routeKey,
  revision: `sha256:${name.padEnd(16, '0').slice(0, 16)}`,
  source: 'portal',
  builtAt: 1_764_496_800_000,
  tools: [
    {
      name,
      version: '1.0.0',
      active: true,
      serviceId: 'hr-tools',
      description: 'Looks things up.',
      inputSchema: { type: 'object' },
      timeoutMs: 5000,
      executionUrl: `http://hr-tools:8080/tools/${name}`,
    },
  ],
});
const registryDoc = { revision: 'r1', routes: { core: [{ id: 'hr-tools', baseUrl: 'http://hr-tools:8080' }] } };

/** The message of a `corrupt` answer, else ''. */
const corruptMessage = (got: object): string => ('kind' in got && got.kind === 'corrupt' && 'message' in got ? String(got.message) : '');
const connected = (s: RedisStore): Promise<void> => waitUntil(() => s.connected, 'the store connected');

let redis: TestRedis;
let raw: Redis;
const stores: RedisStore[] = [];
const store = (url: string, ns = 'gw-test', timeoutMs = 1_000): RedisStore => {
  const s = new RedisStore(url, ns, timeoutMs);
  stores.push(s);
  return s;
};

beforeAll(async () => {
  redis = await startRedis();
  raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  for (const s of stores) await s.close();
  raw?.disconnect();
  await redis?.stop();
});

describe('RedisStore with Redis up', () => {
  it('names its keys {ns}:portal-registry and {ns}:route:{routeKey}', () => {
    const s = store(redis.url, 'prod-eu.gw');
    expect(s.registryKey()).toBe('prod-eu.gw:portal-registry');
    expect(s.routeKey('core')).toBe('prod-eu.gw:route:core');
  });

  it('stores the registry as {format: 1, storedAt, document} and reads the document back', async () => {
    const s = store(redis.url, 'ns-reg');
    await connected(s);
    expect(await s.loadRegistry()).toEqual({ kind: 'missing' });
    expect(await s.saveRegistry(registryDoc)).toBe(true);
    const value = JSON.parse((await raw.get('ns-reg:portal-registry')) ?? 'null') as Record<string, unknown>;
    expect(value).toEqual({ format: 1, storedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), document: registryDoc });
    expect(await s.loadRegistry()).toEqual({ document: registryDoc });
  });

  it('keeps namespaces apart', async () => {
    const a = store(redis.url, 'ns-a');
    const b = store(redis.url, 'ns-b');
    await connected(a);
    await connected(b);
    expect(await a.saveRegistry(registryDoc)).toBe(true);
    expect(await b.loadRegistry()).toEqual({ kind: 'missing' });
    expect(await a.saveSnapshot('core', encodeSnapshot(catalog('core')))).toBe(true);
    expect(await b.loadSnapshot('core')).toEqual({ kind: 'missing' });
  });

  it.each([
    ['not JSON', 'hello', 'ns-bad:portal-registry is not JSON'],
    ['another format', JSON.stringify({ format: 2, storedAt: 'x', document: registryDoc }), 'is not a format-1 registry copy'],
    ['a bare document', JSON.stringify(registryDoc), 'is not a format-1 registry copy'],
    ['no storedAt', JSON.stringify({ format: 1, document: registryDoc }), 'is not a format-1 registry copy'],
    ['JSON null', 'null', 'is not a format-1 registry copy'],
  ])('reports a registry copy that is %s as corrupt, never returns it', async (_name, value, problem) => {
    const s = store(redis.url, 'ns-bad');
    await connected(s);
    await raw.set('ns-bad:portal-registry', value);
    const got = await s.loadRegistry();
    expect(got).toMatchObject({ kind: 'corrupt' });
    expect(corruptMessage(got)).toContain(problem);
  });

  it('stores a snapshot byte for byte and returns a verified view of it', async () => {
    const s = store(redis.url, 'ns-snap');
    await connected(s);
    expect(await s.loadSnapshot('core')).toEqual({ kind: 'missing' });
    const sab = encodeSnapshot(catalog('core'));
    expect(await s.saveSnapshot('core', sab)).toBe(true);
    expect((await raw.getBuffer('ns-snap:route:core'))?.equals(Buffer.from(new Uint8Array(sab)))).toBe(true);
    const got = await s.loadSnapshot('core');
    expect('view' in got).toBe(true);
    if (!('view' in got)) return;
    expect(got.view.meta).toEqual(decodeSnapshot(sab).meta);
    expect(got.view.catalogTools()).toEqual(catalog('core').tools);
    expect(got.view.buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it('stores each route under its own key', async () => {
    const s = store(redis.url, 'ns-many');
    await connected(s);
    for (const k of ['core', 'process', 'hr-2']) expect(await s.saveSnapshot(k, encodeSnapshot(catalog(k, `tool_${k.replace('-', '_')}`)))).toBe(true);
    for (const k of ['core', 'process', 'hr-2']) {
      const got = await s.loadSnapshot(k);
      expect('view' in got && got.view.meta.routeKey).toBe(k);
    }
  });

  const good = Buffer.from(new Uint8Array(encodeSnapshot(catalog('core'))));
  const variant = (edit: (b: Buffer) => Buffer): Buffer => edit(Buffer.from(good));
  it.each([
    [
      'a flipped bit in a section',
      variant((b) => {
        b.writeUInt8(b.readUInt8(b.length - 5) ^ 0x20, b.length - 5);
        return b;
      }),
      'checksum mismatch',
    ],
    [
      'format 3',
      variant((b) => {
        b.writeUInt32LE(3, 4);
        return b;
      }),
      'format 3 is not 2',
    ],
    [
      'a wrong magic',
      variant((b) => {
        b.write('XXXX', 0, 'latin1');
        return b;
      }),
      'bad magic',
    ],
    ['a truncated value', good.subarray(0, good.length - 10), 'length does not match its header'],
    ['a value shorter than the header', good.subarray(0, 20), 'shorter than its header'],
    ['a value with extra bytes', Buffer.concat([good, Buffer.from('xx')]), 'length does not match its header'],
    ['JSON text', Buffer.from(JSON.stringify({ ...catalog('core'), padding: 'x'.repeat(64) })), 'bad magic'],
    ['the snapshot of another route', Buffer.from(new Uint8Array(encodeSnapshot(catalog('process')))), 'ns-corrupt:route:core holds route "process"'],
  ])('reports %s as corrupt, never returns it', async (_name, bytes, problem) => {
    const s = store(redis.url, 'ns-corrupt');
    await connected(s);
    await raw.set('ns-corrupt:route:core', bytes);
    const got = await s.loadSnapshot('core');
    expect(got).toMatchObject({ kind: 'corrupt' });
    expect(corruptMessage(got)).toContain(problem);
  });

  it('reports a snapshot whose catalog section breaks its schema (checksum recomputed) as corrupt', async () => {
    // A well-formed, correctly checksummed snapshot whose catalog entries lack executionUrl.
    const bad = catalog('core');
    delete (bad.tools[0] as Partial<(typeof bad.tools)[0]>).executionUrl;
    const s = store(redis.url, 'ns-schema');
    await connected(s);
    await raw.set('ns-schema:route:core', Buffer.from(new Uint8Array(encodeSnapshot(bad))));
    const got = await s.loadSnapshot('core');
    expect(got).toMatchObject({ kind: 'corrupt' });
    expect(corruptMessage(got)).toContain('catalog section does not match its schema');
  });

  it('close() is idempotent', async () => {
    const s = store(redis.url);
    await s.close();
    await s.close();
    expect(s.connected).toBe(false);
  });
});

describe('RedisStore with Redis down or slow: every method resolves, false / unavailable', () => {
  const expectUnavailable = async (s: RedisStore): Promise<void> => {
    const results = await Promise.all([s.saveRegistry(registryDoc), s.loadRegistry(), s.saveSnapshot('core', encodeSnapshot(catalog('core'))), s.loadSnapshot('core')]);
    expect(results).toEqual([false, { kind: 'unavailable', message: 'redis did not answer' }, false, { kind: 'unavailable', message: 'redis did not answer' }]);
    expect(s.connected).toBe(false);
  };

  it('when nothing listens at redis.url', async () => {
    const gone = await startRedis();
    await gone.stop();
    const s = store(gone.url, 'ns-down', 200);
    await expectUnavailable(s);
    await sleep(300); // after failed connection attempts too
    await expectUnavailable(s);
  });

  it('when Redis is killed mid-run, and again after it comes back', async () => {
    const own = await startRedis();
    try {
      const s = store(own.url, 'ns-killed', 200);
      await connected(s);
      expect(await s.saveRegistry(registryDoc)).toBe(true);
      await own.stop(true);
      await waitUntil(() => !s.connected, 'the store noticed');
      await expectUnavailable(s);
      await own.restart();
      await connected(s);
      expect(await s.saveRegistry(registryDoc)).toBe(true);
      expect(await s.loadRegistry()).toEqual({ document: registryDoc });
    } finally {
      await own.stop();
    }
  });

  it('when Redis stops answering (commands time out after redis.commandTimeoutMs)', async () => {
    // A TCP proxy in front of the real redis-server that can swallow everything the client sends.
    let paused = false;
    const sockets = new Set<Socket>();
    const proxy: Server = createServer((client) => {
      const upstream = connect(redis.port, '127.0.0.1');
      sockets.add(client).add(upstream);
      client.on('data', (d) => {
        if (!paused) upstream.write(d);
      });
      upstream.on('data', (d) => client.write(d));
      const end = (): void => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    try {
      const s = store(`redis://127.0.0.1:${port}`, 'ns-slow', 200);
      await connected(s);
      expect(await s.saveRegistry(registryDoc)).toBe(true);
      paused = true;
      const results = await Promise.all([s.saveRegistry(registryDoc), s.loadRegistry(), s.saveSnapshot('core', encodeSnapshot(catalog('core'))), s.loadSnapshot('core')]);
      expect(results).toEqual([false, { kind: 'unavailable', message: 'redis did not answer' }, false, { kind: 'unavailable', message: 'redis did not answer' }]);
    } finally {
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('a store created just now waits for its connection (up to redis.commandTimeoutMs) instead of failing the first read', async () => {
    // The refresh worker creates the store and runs its first cycle at once: a cold start with the
    // Portal down reads the registry copy immediately, so that read must not fail merely because the
    // connection is still being set up.
    const writer = store(redis.url, 'ns-fresh');
    await connected(writer);
    expect(await writer.saveRegistry(registryDoc)).toBe(true);
    const fresh = store(redis.url, 'ns-fresh', 5_000);
    expect(await fresh.loadRegistry()).toEqual({ document: registryDoc });
  });
});
