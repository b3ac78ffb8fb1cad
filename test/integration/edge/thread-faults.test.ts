/**
 * Threads that die under traffic (issue 11 #10): the in-flight calls of a
 * crashed shard get the HTTP status docs/contracts/errors.md gives `-32603`
 * (code and docs agree, read from the table itself, so a change to either
 * side alone fails here).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { eventually, waitUntil } from '../../helpers/eventually.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { toolResult } from '../../helpers/mcp.js';

const ERRORS_MD = new URL('../../../docs/contracts/errors.md', import.meta.url);

/** The HTTP status errors.md documents for a JSON-RPC code (the first status of its row's last column). */
function documentedStatus(code: number): number {
  const row = readFileSync(ERRORS_MD, 'utf8')
    .split('\n')
    .find((line) => line.startsWith('|') && line.includes(`| \`${code}\` |`));
  expect(row, `errors.md has a row for ${code}`).toBeDefined();
  const cells = (row as string).split('|').map((c) => c.trim());
  const status = /^(\d{3})/.exec(cells[cells.length - 2] ?? '')?.[1];
  expect(status, `errors.md row of ${code}: ${row}`).toBeDefined();
  return Number(status);
}

describe('thread faults (issue 11 #10)', () => {
  let svc: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'held' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    svc.setBehavior('/tools/held', { kind: 'hold', then: { kind: 'echo' } });
    gw = await startTestGateway({ workers: { shards: 1 }, catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    svc?.release();
    await gw?.close();
    await svc?.close();
  });

  it('#10 a crashed shard\'s in-flight call is answered -32603 with its id and the HTTP status errors.md documents', async () => {
    const heldBefore = svc.held;
    const pending = mcpPost(gw, 'core', rpc('tools/call', { name: 'held', arguments: {} }, 'in-flight'));
    await waitUntil(() => svc.held > heldBefore, 'the call reached the Tool Service');
    await gw.crashShard(0);
    const lost = await pending;
    expect(lost.json).toMatchObject({ jsonrpc: '2.0', id: 'in-flight', error: { code: -32603 } });
    expect(lost.status, 'HTTP status of -32603 vs docs/contracts/errors.md').toBe(documentedStatus(-32603));
    // Served again once the shard is back.
    await eventually(async () => expect(toolResult(await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: {} }, 2))).isError).not.toBe(true));
  });
});
