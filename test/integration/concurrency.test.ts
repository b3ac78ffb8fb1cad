/**
 * Concurrency through real threads (SPEC §2): routes spread over two shard
 * workers, many parallel `tools/list` and slow `tools/call` requests each
 * answered to its own id and route, and the bounded per-shard queue
 * (`workers.maxPendingCallsPerShard`) refusing with 503 + Retry-After, then
 * recovering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway, type HttpAnswer } from '../helpers/gateway.js';
import { callTool, listToolNames, rpcBody, rpcError, toolResult } from '../helpers/mcp.js';

/** Route keys chosen so that, with 2 shards, two land on shard 0 and two on shard 1 (FNV-1a). */
const ROUTES = ['core', 'process', 'information', 'alpha'] as const;
const PARALLEL = 200;

describe('two shard workers under many concurrent requests', () => {
  let svcA: FixtureToolService;
  let svcB: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    [svcA, svcB] = await Promise.all([startFixtureToolService(), startFixtureToolService()]);
    svcA.setManifest(manifestFor([{ name: 'echo' }, { name: 'slow' }], 'svc-a'));
    svcB.setManifest(manifestFor([{ name: 'echo' }, { name: 'slow' }, { name: 'extra' }], 'svc-b'));
    for (const svc of [svcA, svcB]) {
      svc.setBehavior('/tools/echo', { kind: 'echo' });
      svc.setBehavior('/tools/slow', { kind: 'delay', ms: 50, then: { kind: 'echo' } });
      svc.setBehavior('/tools/extra', { kind: 'echo' });
    }
    gw = await startTestGateway({
      workers: { shards: 2 },
      catalog: {
        static: {
          routes: {
            core: [{ id: 'svc-a', baseUrl: svcA.url }],
            process: [{ id: 'svc-b', baseUrl: svcB.url }],
            information: [{ id: 'svc-a', baseUrl: svcA.url }],
            alpha: [{ id: 'svc-b', baseUrl: svcB.url }],
          },
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await svcA?.close();
    await svcB?.close();
  });

  it('places the routes on both shards', async () => {
    const answer = await httpRequest(gw, '/health/ready');
    expect(answer.status).toBe(200);
    const routes = (answer.json as { routes: Record<string, { shard: number; state: string }> }).routes;
    for (const route of ROUTES) expect(routes[route]?.state).toBe('ready');
    expect(new Set(ROUTES.map((r) => routes[r]?.shard))).toEqual(new Set([0, 1]));
    expect(routes['core']?.shard).not.toBe(routes['information']?.shard);
  });

  it(`answers ${PARALLEL} parallel tools/list and tools/call requests across routes, each matched to its id and route`, async () => {
    const expectedTools: Record<string, string[]> = {
      core: ['echo', 'slow'],
      information: ['echo', 'slow'],
      process: ['echo', 'extra', 'slow'],
      alpha: ['echo', 'extra', 'slow'],
    };
    const callsBefore = svcA.requests.length + svcB.requests.length;
    const jobs = Array.from({ length: PARALLEL }, (_, i) => {
      const route = ROUTES[i % ROUTES.length] as string;
      const id = i % 2 === 0 ? i : `req-${i}`;
      const kind = i % 3 === 0 ? 'list' : i % 3 === 1 ? 'echo' : 'slow';
      const body = kind === 'list' ? rpc('tools/list', undefined, id) : rpc('tools/call', { name: kind, arguments: { token: `t-${i}` } }, id);
      return { i, route, id, kind, answer: mcpPost(gw, route, body) };
    });
    const answers = await Promise.all(jobs.map(async (j) => ({ ...j, answer: await j.answer })));
    let calls = 0;
    for (const { i, route, id, kind, answer } of answers) {
      expect(answer.status, `request ${i}`).toBe(200);
      expect(rpcBody(answer).id, `request ${i}`).toBe(id);
      if (kind === 'list') {
        const tools = (rpcBody(answer).result as { tools: Array<{ name: string }> }).tools;
        expect(tools.map((t) => t.name).sort(), `request ${i}`).toEqual(expectedTools[route]);
        continue;
      }
      calls++;
      const result = toolResult(answer);
      expect(result.isError, `request ${i}: ${answer.text}`).not.toBe(true);
      const received = result.structuredContent as { name: string; arguments: { token: string } };
      expect(received.name).toBe(kind);
      expect(received.arguments.token, `request ${i}`).toBe(`t-${i}`);
      const headers = (result._meta as { headers: Record<string, string> }).headers;
      expect(headers['x-mcp-route'], `request ${i}`).toBe(route);
    }
    expect(calls).toBe(answers.filter((a) => a.kind !== 'list').length);
    expect(svcA.requests.length + svcB.requests.length - callsBefore).toBe(calls);
  });
});

describe('workers.maxPendingCallsPerShard bounds the calls in flight', () => {
  /** Its tool `hold` answers only once the test releases the calls: a known number stay in flight, whatever the timing. */
  let held: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    held = await startFixtureToolService();
    held.setManifest(manifestFor([{ name: 'hold' }], 'held-tools'));
    held.setBehavior('/tools/hold', { kind: 'hold', then: { kind: 'echo' } });
    gw = await startTestGateway({
      workers: { shards: 1, maxPendingCallsPerShard: 2 },
      catalog: { static: { routes: { core: [{ id: 'held', baseUrl: held.url }] } } },
    });
  });
  afterAll(async () => {
    held?.release();
    await gw?.close();
    await held?.close();
  });

  it('refuses the third concurrent call with 503 + Retry-After, keeps answering tools/list, and recovers', async () => {
    const first = callTool(gw, 'core', 'hold', { n: 1 }, { id: 'first' });
    const second = callTool(gw, 'core', 'hold', { n: 2 }, { id: 'second' });
    await held.whenRequests(2);
    expect(held.held).toBe(2); // both calls reached the Tool Service and wait there

    const third = await callTool(gw, 'core', 'hold', { n: 3 }, { id: 'third' });
    expect(third.status).toBe(503);
    expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(rpcBody(third).id).toBe('third');
    expect(rpcError(third).message).toMatch(/maxPendingCallsPerShard/);
    expect((rpcError(third) as { data?: { reason?: string } }).data?.reason).toBe('SHARD_QUEUE_FULL');
    expect(held.requests.length).toBe(2);

    // Answered by the acceptor from the snapshot: not bounded by the shard queue.
    expect(await listToolNames(gw, 'core')).toEqual(['hold']);

    held.release();
    const settled: HttpAnswer[] = await Promise.all([first, second]);
    for (const answer of settled) {
      expect(answer.status).toBe(200);
      expect(toolResult(answer).isError).not.toBe(true);
    }
    expect(settled.map((a) => rpcBody(a).id)).toEqual(['first', 'second']);

    for (const n of [4, 5]) {
      const later = await callTool(gw, 'core', 'hold', { n }, { id: `later-${n}` });
      expect(later.status).toBe(200);
      expect(toolResult(later).isError).not.toBe(true);
    }
    const pair = await Promise.all([callTool(gw, 'core', 'hold', { n: 6 }), callTool(gw, 'core', 'hold', { n: 7 })]);
    for (const answer of pair) expect(answer.status).toBe(200);
  });
});
