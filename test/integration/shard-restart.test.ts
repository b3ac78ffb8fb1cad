/**
 * A shard thread that dies is restarted: the calls it held are answered at
 * once with an internal error (whether the tool ran is unknown), tools/list
 * keeps being served from the acceptor's snapshot meanwhile, and once the
 * shard is back with its routes reinstalled, calls work again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { eventually } from '../helpers/eventually.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';

describe('shard supervision', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'slow' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    svc.setBehavior('/tools/slow', { kind: 'delay', ms: 5_000, then: { kind: 'echo' } });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('answers the calls a dead shard held, keeps serving tools/list, and serves calls again after the restart', async () => {
    const held = mcpPost(gw, 'core', rpc('tools/call', { name: 'slow', arguments: {} }, 'held-1'));
    await eventually(() => expect(svc.requests.some((r) => r.path === '/tools/slow')).toBe(true));
    await gw.crashShard(0);

    // Until the replacement has its routes back, calls are refused as "shard unavailable" (not "queue full"), with their id.
    const refused = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, 'during-restart'));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.json).toMatchObject({ id: 'during-restart', error: { code: -32000, data: { reason: 'SHARD_UNAVAILABLE' } } });

    const lost = await held;
    expect(lost.status).toBe(200);
    expect(lost.json).toMatchObject({ jsonrpc: '2.0', id: 'held-1', error: { code: -32603 } });
    expect((lost.json as { error: { message: string } }).error.message).toContain('whether the tool ran is unknown');

    // The acceptor answers tools/list from its snapshot whatever the shard does.
    const list = await mcpPost(gw, 'core', rpc('tools/list'));
    expect(list.status).toBe(200);
    expect((list.json as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['echo', 'slow']);

    await eventually(async () => {
      const call = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: { n: 1 } }, 7));
      expect(call.status).toBe(200);
      expect(call.json).toMatchObject({ id: 7, result: { structuredContent: { arguments: { n: 1 } } } });
    });
    const metrics = await httpRequest(gw, '/metrics');
    expect(metrics.text).toMatch(/mcp_gateway_requests_total\{route="core",method="tools\/call",outcome="shard_lost"\} 1/);
    expect(metrics.text).toMatch(/mcp_gateway_requests_total\{route="core",method="tools\/call",outcome="shard_unavailable"\} [1-9]\d*/);
    expect(metrics.text).toMatch(/mcp_gateway_thread_restarts_total\{kind="shard"\} 1/);
  });
});
