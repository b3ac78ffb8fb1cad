import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';

describe('gateway smoke', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('lists and calls a tool through a shard worker', async () => {
    const list = await mcpPost(gw, 'core', rpc('tools/list'));
    expect(list.status).toBe(200);
    expect((list.json as { result: { tools: Array<{ name: string }> } }).result.tools.map((t) => t.name)).toEqual(['echo']);
    const call = await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: { x: 1 } }, 7));
    expect(call.status).toBe(200);
    const result = call.json as { id: number; result: { structuredContent: { arguments: unknown } } };
    expect(result.id).toBe(7);
    expect(result.result.structuredContent.arguments).toEqual({ x: 1 });
  });

  it('tools/list answers end with their own id, one after another: long, short, non-ASCII, past the room after the template', async () => {
    // The acceptor writes each answer's id into the room after its template copy (src/main/list-templates.ts);
    // an id too long for it takes the copying path. Every answer must be the whole list with exactly its id.
    for (const id of ['a-rather-long-request-id-0123456789', 7, 'é→😀', 'x'.repeat(300), 'y']) {
      const list = await mcpPost(gw, 'core', rpc('tools/list', undefined, id));
      expect(list.status).toBe(200);
      const answer = list.json as { id: unknown; result: { tools: Array<{ name: string }> } };
      expect(answer.id).toBe(id);
      expect(answer.result.tools.map((t) => t.name)).toEqual(['echo']);
    }
  });
});
