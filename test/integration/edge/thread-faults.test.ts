/**
 * Threads that die under traffic (issue 11 #10): the in-flight calls of a
 * crashed shard get the HTTP status docs/contracts/errors.md gives `-32603`
 * (code and docs agree, read from the table itself, so a change to either
 * side alone fails here); and (#14) a crashed extra acceptor thread is
 * restarted while the gateway keeps serving — it used to abort the whole
 * process ("uv_loop_close() while having open handles"), because the thread
 * ended with its uWS sockets open.
 */
import { connect, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { eventually, waitUntil } from '../../helpers/eventually.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { toolResult } from '../../helpers/mcp.js';
import { parsePrometheus, sampleValue } from '../../helpers/prometheus.js';

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

  it("#10 a crashed shard's in-flight call is answered -32603 with its id and the HTTP status errors.md documents", async () => {
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

/** A kept-alive connection that has been answered once (so it is open on whichever acceptor thread took it). */
async function keptAlive(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined); // reset when its thread crashes: expected
  await new Promise<void>((resolve) => {
    socket.once('data', () => resolve());
    socket.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  });
  return socket;
}

describe('acceptor thread faults (issue 11 #14)', () => {
  let svc: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    gw = await startTestGateway({ workers: { shards: 1, acceptors: 2 }, catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('#14 a crashed extra acceptor thread with open connections is restarted; the process keeps serving', async () => {
    // Enough connections that the kernel's SO_REUSEPORT hash gives the crashing thread some.
    const sockets = await Promise.all(Array.from({ length: 16 }, () => keptAlive(gw.port)));
    await gw.crashAcceptor(1);
    const restarted = async (): Promise<number | undefined> => sampleValue(parsePrometheus((await httpRequest(gw, '/metrics')).text), 'mcp_gateway_thread_restarts_total', { kind: 'acceptor' });
    await eventually(async () => expect(await restarted()).toBe(1));
    // Every new connection is answered again, whichever thread takes it.
    for (let i = 0; i < 20; i++) {
      expect(toolResult(await mcpPost(gw, 'core', rpc('tools/call', { name: 'echo', arguments: { i } }, i))).isError).not.toBe(true);
    }
    for (const s of sockets) s.destroy();
  });
});
