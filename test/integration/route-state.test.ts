/**
 * Route state has one writer (the main thread's CatalogInstaller) and one
 * channel to acceptors (the AcceptorFanout), and an acceptor sees a snapshot
 * only after its shard installed it. These tests drive the real main-thread
 * components with a real shard thread (built `dist/`), scripting refresh
 * events in the orders that used to race.
 */
import { Counter, Registry } from 'prom-client';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Acceptor } from '../../dist/src/main/acceptor.js';
import { AcceptorFanout } from '../../dist/src/main/acceptor-fanout.js';
import { CatalogInstaller } from '../../dist/src/main/catalog-installer.js';
import { RouteStatusBoard } from '../../dist/src/main/route-status.js';
import { ShardThread } from '../../dist/src/main/shard-thread.js';
import { Topology } from '../../dist/src/main/topology.js';
import { validateConfig } from '../../dist/src/shared/config/load.js';
import { mergeRoute } from '../../dist/src/shared/catalog/merge.js';
import { encodeSnapshot, snapshotMeta } from '../../dist/src/shared/snapshot/layout.js';
import type { CatalogTool } from '../../dist/src/shared/catalog/types.js';
import type { RefreshEvent } from '../../dist/src/shared/threads/messages.js';

const config = validateConfig({ workers: { shards: 1 }, log: { level: 'silent' } });
const log = pino({ level: 'silent' });

function tool(name: string): CatalogTool {
  return { name, version: '1.0.0', active: true, serviceId: 'svc', inputSchema: { type: 'object' }, timeoutMs: 1000, executionUrl: `http://127.0.0.1:9/tools/${name}` };
}

function snapshotEvent(routeKey: string, names: string[]): RefreshEvent {
  const catalog = mergeRoute(routeKey, [{ serviceId: 'svc', tools: names.map(tool) }], { maxToolsPerRoute: 50, source: 'static' });
  return { type: 'route-snapshot', routeKey, snapshot: encodeSnapshot(catalog), meta: snapshotMeta(catalog), source: 'static', warning: null, listChanged: true };
}

interface Rig {
  installer: CatalogInstaller;
  fanout: AcceptorFanout;
  acceptor: Acceptor;
  shard: ShardThread;
  listed(routeKey: string): string[] | null;
}

const rigs: Rig[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) {
    await r.shard.stop(5_000);
    r.acceptor.closeChannels();
  }
});

function rig(): Rig {
  const registry = new Registry();
  const deps = { log, restarts: new Counter({ name: 'restarts', help: 'x', labelNames: ['kind'] as const, registers: [registry] }) };
  const board = new RouteStatusBoard('initial-load', registry);
  const topology = new Topology(1, 1, 64 * 1024);
  const shard = new ShardThread(0, config, topology, deps, { onCrash: () => undefined, onRestart: () => undefined, onCircuit: () => undefined });
  const acceptor = new Acceptor({
    index: 0,
    config,
    channels: topology.acceptorEnds(0),
    log,
    health: { readiness: () => board.readiness(), metrics: () => Promise.reject(new Error('unused')) },
  });
  const fanout = new AcceptorFanout(acceptor);
  const installer = new CatalogInstaller(board, [shard], fanout, log);
  fanout.attach({
    get directoryLoaded() {
      return installer.directoryLoaded;
    },
    pendingReason: () => installer.pendingReason(),
    allRoutes: () => installer.allRoutes(),
    readiness: () => board.readiness(),
  });
  shard.start();
  const r: Rig = {
    installer,
    fanout,
    acceptor,
    shard,
    listed(routeKey) {
      const snapshot = acceptor.directory.lookup(routeKey)?.snapshot;
      if (snapshot === null || snapshot === undefined) return null;
      const text = Buffer.from(snapshot.listTemplate).toString('utf8') + '1}';
      return (JSON.parse(text) as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name);
    },
  };
  rigs.push(r);
  return r;
}

async function settle(r: Rig): Promise<void> {
  await r.installer.idle();
  r.fanout.flush();
}

describe('route state: one writer, one channel', () => {
  it('a route removed while its install is in flight and re-added with a refused build serves nothing old (503 with the refusal)', async () => {
    const r = rig();
    r.installer.handle({ type: 'routes', routeKeys: ['x'], removed: [] });
    r.installer.handle(snapshotEvent('x', ['old_tool']));
    await settle(r);
    expect(r.listed('x')).toEqual(['old_tool']);

    // A newer snapshot is handed to the shard; before the shard answers, the registry drops the route,
    // re-adds it, and its next build is refused.
    r.installer.handle(snapshotEvent('x', ['newer_tool']));
    r.installer.handle({ type: 'routes', routeKeys: [], removed: ['x'] });
    r.installer.handle({ type: 'routes', routeKeys: ['x'], removed: [] });
    r.installer.handle({ type: 'route-failed', routeKey: 'x', code: 'TOOL_NAME_CONFLICT', message: 'tool "t" is offered by both "a" and "b"', conflicts: [] });
    await settle(r);

    const entry = r.acceptor.directory.lookup('x');
    expect(entry?.snapshot).toBeNull();
    expect(entry?.unavailable).toEqual({ code: 'TOOL_NAME_CONFLICT', message: 'tool "t" is offered by both "a" and "b"' });
    expect(r.installer.allRoutes()).toEqual([{ routeKey: 'x', shard: 0, snapshot: null, unavailable: entry?.unavailable }]);
  });

  it('an acceptor sees a snapshot only once its shard answered the install', async () => {
    const r = rig();
    r.installer.handle({ type: 'routes', routeKeys: ['y'], removed: [] });
    r.fanout.flush();
    r.installer.handle(snapshotEvent('y', ['a_tool']));
    // Before the shard's answer, nothing can reach the acceptor, whatever is flushed.
    r.fanout.flush();
    expect(r.listed('y')).toBeNull();
    await settle(r);
    expect(r.listed('y')).toEqual(['a_tool']);
  });

  it('a removed route disappears from the acceptor at once; a late install answer for it is ignored', async () => {
    const r = rig();
    r.installer.handle({ type: 'routes', routeKeys: ['z'], removed: [] });
    r.installer.handle(snapshotEvent('z', ['z_tool']));
    r.installer.handle({ type: 'routes', routeKeys: [], removed: ['z'] });
    await settle(r);
    expect(r.acceptor.directory.lookup('z')).toBeUndefined();
    expect(r.installer.allRoutes()).toEqual([]);
  });

  it('only the newest of several snapshots handed over during one install is installed next', async () => {
    const r = rig();
    r.installer.handle({ type: 'routes', routeKeys: ['w'], removed: [] });
    for (let v = 1; v <= 5; v++) r.installer.handle(snapshotEvent('w', [`v${v}`]));
    await settle(r);
    expect(r.listed('w')).toEqual(['v5']);
  });
});
