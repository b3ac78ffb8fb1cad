/**
 * The Tool Service connection limits through a real gateway (config → shard →
 * lean HTTP/1.1 client): `tools.connectionsPerService` and
 * `tools.maxQueuedCallsPerService` at and past their edge, and
 * `tools.maxResponseHeaderBytes` against a service with an oversize head.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/eventually.js';
import { callTool, resultText, toolResult } from '../helpers/mcp.js';

describe('Tool Service connection limits (tools.*)', () => {
  let held: FixtureToolService;
  let bigHead: Server;
  let bigHeadUrl = '';
  let gw: Gateway;
  const HEADER_LIMIT = 2048;

  beforeAll(async () => {
    held = await startFixtureToolService();
    held.setManifest(manifestFor([{ name: 'hold' }], 'held-tools'));
    held.setBehavior('/tools/hold', { kind: 'hold', then: { kind: 'echo' } });
    // A Tool Service whose answers carry one header of `?pad=N` bytes.
    bigHead = createServer((req, res) => {
      if (req.url === '/manifest') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(manifestFor([{ name: 'padded' }, { name: 'over' }], 'big-head')));
        return;
      }
      req.resume();
      req.on('end', () => {
        const pad = req.url === '/tools/over' ? HEADER_LIMIT : HEADER_LIMIT / 2;
        res.writeHead(200, { 'content-type': 'application/json', 'x-pad': 'p'.repeat(pad) });
        res.end('{"content":[{"type":"text","text":"padded"}]}');
      });
    });
    await new Promise<void>((resolve) => bigHead.listen(0, '127.0.0.1', resolve));
    bigHeadUrl = `http://127.0.0.1:${(bigHead.address() as { port: number }).port}`;
    gw = await startTestGateway({
      catalog: { static: { routes: { held: [{ id: 'held', baseUrl: held.url }], head: [{ id: 'head', baseUrl: bigHeadUrl }] } } },
      tools: { connectionsPerService: 2, maxQueuedCallsPerService: 1, maxResponseHeaderBytes: HEADER_LIMIT },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await held?.close();
    bigHead?.closeAllConnections();
    await new Promise<void>((resolve) => bigHead?.close(() => resolve()));
  });

  it('runs 2 calls on 2 connections, queues the 3rd and refuses the 4th as busy without calling the Tool Service', async () => {
    const calls = [1, 2, 3].map((i) => callTool(gw, 'held', 'hold', { i }, { id: i }));
    await eventually(() => expect(held.held).toBe(2));
    const refused = await callTool(gw, 'held', 'hold', { i: 4 }, { id: 4 });
    expect(refused.status).toBe(200);
    const result = toolResult(refused);
    expect(result.isError).toBe(true);
    expect(resultText(result)).toBe('Tool Service busy: all 2 connections are in use and 1 calls wait (tools.maxQueuedCallsPerService); the tool was not called');
    expect(held.requests.filter((r) => r.path === '/tools/hold').length).toBe(2);
    held.release();
    const answers = await Promise.all(calls);
    expect(answers.map((a) => toolResult(a).isError)).toEqual([undefined, undefined, undefined]);
    expect(held.requests.filter((r) => r.path === '/tools/hold').length).toBe(3);
  });

  it('accepts a response head within tools.maxResponseHeaderBytes and refuses one past it', async () => {
    expect(toolResult(await callTool(gw, 'head', 'padded'))).toEqual({ content: [{ type: 'text', text: 'padded' }] });
    const over = toolResult(await callTool(gw, 'head', 'over'));
    expect(over.isError).toBe(true);
    expect(resultText(over)).toBe(`Tool Service answer is malformed: the response head is larger than ${HEADER_LIMIT} bytes (tools.maxResponseHeaderBytes)`);
  });
});
