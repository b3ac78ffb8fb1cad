/**
 * Request ids past 2^53 end to end (issue 11 #13): `JSON.parse` rounds
 * 9007199254740993 to 9007199254740992, so an answer built from the parsed id
 * names another request. Every answer — acceptor-made (ping, tools/list,
 * errors) and shard-made (tools/call results and failures) — must echo the
 * id's exact JSON text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { mcpPost, startTestGateway, type Gateway } from '../../helpers/gateway.js';

/** Ids JSON.parse does not keep exactly, as they are written on the wire. */
const IDS = ['9007199254740993', '-9007199254740993', '123456789012345678901234567890'];

/** A request body whose id is `idText` verbatim. */
const body = (idText: string, method: string, params?: unknown): string => `{"jsonrpc":"2.0","id":${idText},"method":"${method}"${params === undefined ? '' : `,"params":${JSON.stringify(params)}`}}`;

describe('ids above 2^53 are echoed exactly (issue 11 #13)', () => {
  let svc: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'broken' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    svc.setBehavior('/tools/broken', { kind: 'json', status: 500, body: { error: 'down' } });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  const CASES: Array<[string, string, unknown]> = [
    ['ping', 'ping', undefined],
    ['tools/list', 'tools/list', undefined],
    ['tools/call (result)', 'tools/call', { name: 'echo', arguments: { a: 1 } }],
    ['tools/call (tool error)', 'tools/call', { name: 'broken', arguments: {} }],
    ['tools/call (unknown tool, -32602)', 'tools/call', { name: 'nope', arguments: {} }],
    ['unknown method (-32601)', 'prompts/list', undefined],
  ];

  it.each(CASES)('%s', async (_label, method, params) => {
    for (const id of IDS) {
      const answer = await mcpPost(gw, 'core', body(id, method, params));
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text, `${method} with id ${id}`).toMatch(new RegExp(`"id":${id}[,}]`));
    }
  });
});
