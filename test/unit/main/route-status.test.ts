/**
 * Readiness policy (issue 13: with `health.readiness: initial-load`,
 * `/health/ready` said 200 "ready" even when every route was refused).
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RouteStatusBoard, type ReadinessPolicy } from '../../../src/main/route-status.js';

const built = { toolCount: 1, revision: 'r1', source: 'static' as const, builtAt: Date.now() };

function board(policy: Partial<ReadinessPolicy>, routes: Record<string, 'ok' | 'refused' | 'pending'>): RouteStatusBoard {
  const b = new RouteStatusBoard({ readiness: 'initial-load', minUsableRoutes: 1, ...policy }, new Registry());
  for (const [key, state] of Object.entries(routes)) {
    b.add(key, 0);
    if (state === 'ok') b.succeeded(key, built, null);
    if (state === 'refused') b.failed(key, { code: 'MANIFEST_UNREACHABLE', message: 'down' });
  }
  b.completeInitialLoad();
  return b;
}

const status = (b: RouteStatusBoard): { code: number; body: Record<string, unknown> } => {
  const r = b.readiness();
  return { code: r.status, body: JSON.parse(r.body) as Record<string, unknown> };
};

describe('readiness policy', () => {
  it('initial-load: a replica whose every route is refused is not ready (minUsableRoutes 1, the default)', () => {
    const r = status(board({}, { a: 'refused', b: 'refused' }));
    expect(r.code).toBe(503);
    expect(r.body).toMatchObject({ status: 'not_ready', usableRoutes: 0, minUsableRoutes: 1, initialLoadComplete: true });
  });

  it('initial-load: one usable route is enough; refused ones do not take the replica out', () => {
    expect(status(board({}, { a: 'ok', b: 'refused' })).code).toBe(200);
  });

  it('a replica with no route at all is not ready unless minUsableRoutes is 0', () => {
    expect(status(board({}, {})).code).toBe(503);
    expect(status(board({ minUsableRoutes: 0 }, {})).code).toBe(200);
  });

  it('minUsableRoutes 0 restores the old rule (ready once every route was tried)', () => {
    expect(status(board({ minUsableRoutes: 0 }, { a: 'refused' })).code).toBe(200);
  });

  it('minUsableRoutes at and past the number of usable routes', () => {
    expect(status(board({ minUsableRoutes: 2 }, { a: 'ok', b: 'ok', c: 'refused' })).code).toBe(200);
    expect(status(board({ minUsableRoutes: 3 }, { a: 'ok', b: 'ok', c: 'refused' })).code).toBe(503);
  });

  it('all-routes still wants every route usable, on top of the floor', () => {
    expect(status(board({ readiness: 'all-routes' }, { a: 'ok', b: 'refused' })).code).toBe(503);
    expect(status(board({ readiness: 'all-routes' }, { a: 'ok', b: 'ok' })).code).toBe(200);
  });

  it('is 503 before the initial load, whatever the routes', () => {
    const b = new RouteStatusBoard({ readiness: 'initial-load', minUsableRoutes: 0 }, new Registry());
    expect(b.readiness().status).toBe(503);
  });

  it('is 503 "draining" once the drain started, even with every route ready', () => {
    const b = board({}, { a: 'ok' });
    b.startDraining();
    const r = status(b);
    expect(r.code).toBe(503);
    expect(r.body).toMatchObject({ status: 'draining', draining: true });
  });
});
