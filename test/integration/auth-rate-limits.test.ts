/**
 * Rate limits of a route's policy, at and past their edges, through the
 * built gateway: the per-caller bucket (burst, then 429 + Retry-After), the
 * per-route bucket shared by callers, and concurrent `tools/call` limits per
 * caller and per route (a held call occupies the slot until it ends). The
 * refill rates are tiny, so no assertion depends on the clock.
 */
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { rpcError } from '../helpers/mcp.js';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const key = (name: string): Record<string, string> => ({ 'x-api-key': `key-of-${name}` });

let gw: Gateway | undefined;
let svc: FixtureToolService | undefined;

afterEach(async () => {
  svc?.release();
  await gw?.close();
  await svc?.close();
  gw = undefined;
  svc = undefined;
});

async function start(rateLimit: Record<string, unknown>): Promise<Gateway> {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'work' }]));
  svc.setBehavior('/tools/work', { kind: 'hold', then: { kind: 'echo' } });
  gw = await startTestGateway({
    catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } },
    auth: {
      resourceBaseUrl: 'https://mcp.example.com',
      providers: { keys: { type: 'apiKeys', header: 'x-api-key', keyHashes: { a: sha256('key-of-a'), b: sha256('key-of-b') } } },
      policies: { p: { providers: ['keys'], rules: [{ when: {}, tools: ['*'] }], rateLimit } },
      defaultPolicy: 'p',
    },
  });
  return gw;
}

const ping = (g: Gateway, who: string): Promise<{ status: number; text: string; headers: Headers; json: unknown }> => mcpPost(g, 'core', rpc('ping'), key(who));

describe('per-caller request rate', () => {
  it('passes exactly `burst` requests, then answers 429 with Retry-After; other callers are not affected', async () => {
    const g = await start({ perCaller: { requestsPerSecond: 0.001, burst: 3, maxConcurrentCalls: 0 } });
    for (let i = 0; i < 3; i++) expect((await ping(g, 'a')).status, `request ${i + 1} of the burst`).toBe(200);
    const limited = await ping(g, 'a');
    expect(limited.status).toBe(429);
    // 1 token at 0.001/s is 1000 s away.
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(999);
    expect(rpcError(limited as never)).toMatchObject({ code: -32000, data: { reason: 'RATE_LIMITED' } });
    expect((await ping(g, 'b')).status).toBe(200);
  });
});

describe('per-route request rate', () => {
  it('counts every caller against the route bucket', async () => {
    const g = await start({ perRoute: { requestsPerSecond: 0.001, burst: 2, maxConcurrentCalls: 0 } });
    expect((await ping(g, 'a')).status).toBe(200);
    expect((await ping(g, 'b')).status).toBe(200);
    const limited = await ping(g, 'a');
    expect(limited.status).toBe(429);
    expect(limited.text).toContain("route's request rate limit");
  });
});

describe('concurrent tool calls', () => {
  it('allows maxConcurrentCalls per caller in flight, answers the next 429 with the request id, and frees the slot when a call ends', async () => {
    const g = await start({ perCaller: { requestsPerSecond: 0, burst: 1, maxConcurrentCalls: 1 } });
    const s = svc as FixtureToolService;
    const first = mcpPost(g, 'core', rpc('tools/call', { name: 'work', arguments: {} }, 'first'), key('a'));
    await s.whenRequests(1);
    const second = await mcpPost(g, 'core', rpc('tools/call', { name: 'work', arguments: {} }, 'second'), key('a'));
    expect(second.status).toBe(429);
    expect((second.json as { id: unknown }).id).toBe('second');
    expect(second.text).toContain('concurrent tool calls');
    // Another caller has its own slot; tools/list is not a call.
    const other = mcpPost(g, 'core', rpc('tools/call', { name: 'work', arguments: {} }, 'other'), key('b'));
    await s.whenRequests(2);
    expect((await mcpPost(g, 'core', rpc('tools/list'), key('a'))).status).toBe(200);
    s.release();
    expect((await first).status).toBe(200);
    expect((await other).status).toBe(200);
    const third = await mcpPost(g, 'core', rpc('tools/call', { name: 'work', arguments: {} }, 'third'), key('a'));
    expect(third.status).toBe(200);
  });

  it('limits calls in flight on the route across callers', async () => {
    const g = await start({ perRoute: { requestsPerSecond: 0, burst: 1, maxConcurrentCalls: 1 } });
    const s = svc as FixtureToolService;
    const first = mcpPost(g, 'core', rpc('tools/call', { name: 'work', arguments: {} }, 1), key('a'));
    await s.whenRequests(1);
    const second = await mcpPost(g, 'core', rpc('tools/call', { name: 'work', arguments: {} }, 2), key('b'));
    expect(second.status).toBe(429);
    expect(second.text).toContain("route's limit of concurrent tool calls");
    s.release();
    expect((await first).status).toBe(200);
  });
});
