/**
 * Pipelining behind a `tools/call` (issue 11 #3; ADR-0001, docs/contracts/mcp-endpoint.md
 * "HTTP layer"). Neither uWS build answers a pipelined request while an
 * answer is pending: it closes the connection. The gateway makes the outcome
 * deterministic — never "no answer, but the tool ran":
 *
 * - a request in the same read as the call's body: the call is held until
 *   the read is parsed, uWS closes the connection, and the call never reaches
 *   the Tool Service;
 * - a request arriving later, while the call runs: a client disconnect — the
 *   call is cancelled at the Tool Service (outcome `aborted`).
 *
 * Requests answered synchronously (ping, tools/list) pipeline normally, in order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { waitUntil, sleep } from '../../helpers/eventually.js';
import { listToolNames } from '../../helpers/mcp.js';
import { rawExchange } from '../../helpers/raw-http.js';

function post(port: number, body: unknown, close = false): string {
  const text = JSON.stringify(body);
  return (
    `POST /mcp/core HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json\r\n` +
    `content-length: ${Buffer.byteLength(text)}\r\n${close ? 'connection: close\r\n' : ''}\r\n${text}`
  );
}

describe('pipelined requests behind a tools/call', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'slow' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    svc.setBehavior('/tools/slow', { kind: 'hold', then: { kind: 'echo' } });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('tools/call then ping in one write, 20 times: the connection closes and the tool never runs (never "no answer + side effect")', async () => {
    const before = svc.requests.length;
    for (let i = 0; i < 20; i++) {
      const x = await rawExchange(gw.port, [post(gw.port, rpc('tools/call', { name: 'echo', arguments: { i } }, `c${i}`)) + post(gw.port, rpc('ping', undefined, `p${i}`))]);
      expect(x.closed, `run ${i}`).toBe(true);
      expect(x.bytes.length, `run ${i}: uWS answers nothing once it closed`).toBe(0);
    }
    // A call that slipped through would reach the Tool Service shortly after.
    await sleep(300);
    expect(svc.requests.length - before).toBe(0);
    expect(await listToolNames(gw, 'core')).toEqual(['echo', 'slow']);
  });

  it('a request arriving while the call runs: the call is cancelled at the Tool Service (a client disconnect)', async () => {
    svc.hold();
    const before = svc.requests.length;
    const exchange = rawExchange(gw.port, [post(gw.port, rpc('tools/call', { name: 'slow', arguments: {} }, 'late')), post(gw.port, rpc('ping', undefined, 'p'))], {
      gapMs: 400,
    });
    await svc.whenRequests(before + 1);
    const x = await exchange;
    expect(x.closed).toBe(true);
    expect(x.bytes.length).toBe(0);
    await waitUntil(() => svc.requests[before]?.closed === true, 'the Tool Service request closed', 5_000);
    expect(svc.requests[before]?.complete).toBe(false);
    svc.release();
  });

  it('synchronous answers pipeline in order: ping, tools/list, then a tools/call last', async () => {
    const x = await rawExchange(
      gw.port,
      [post(gw.port, rpc('ping', undefined, 1)) + post(gw.port, rpc('tools/list', undefined, 2)) + post(gw.port, rpc('tools/call', { name: 'echo', arguments: { n: 3 } }, 3), true)],
      { expectResponses: 3, waitMs: 5_000 },
    );
    expect(x.responses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(x.responses.map((r) => (r.json as { id: unknown }).id)).toEqual([1, 2, 3]);
  });
});
