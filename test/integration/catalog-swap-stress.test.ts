/**
 * Proof that catalog swaps are atomic (docs/decisions/0003-route-snapshot-layout.md,
 * docs/decisions/0007-catalog-refresh.md "Consequences"): 20 routes whose
 * Tool Services bump a version number N every 100 answered requests, once a
 * client has seen the current N (every tool of one manifest carries the same
 * N: in its description, its version and its execution path `?v=N`),
 * refreshed every 10 ms, while 20 keep-alive connections send 2,000 mixed
 * `tools/list` / `tools/call` requests. Every `tools/list` must carry ONE N
 * across all its tools (no torn read), every answer must be 200 without a
 * JSON-RPC error, and on one connection the N seen per route never goes
 * backwards. Bumping by requests served, not by the clock, makes the number
 * of swaps under load the same on a fast machine and on a slow one.
 */
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixturePortal, type FixturePortal } from '../fixtures/portal.js';
import { startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/eventually.js';

const ROUTES = Array.from({ length: 20 }, (_, i) => `r${String(i).padStart(2, '0')}`);
const TOOLS = ['t0', 't1', 't2'];
const REQUESTS = 2_000;
const CONCURRENCY = 20;
/** Answers between two catalog versions. */
const BUMP_EVERY = 100;

/** Version N of a route's manifest: every tool carries N in its description, version and execution path. */
function manifest(route: string, n: number): unknown {
  return {
    service: `${route}-svc`,
    tools: TOOLS.map((name) => ({
      name,
      version: `${n}.0.0`,
      active: true,
      description: `${route}/${name} v=${n}`,
      inputSchema: { type: 'object' },
      execution: { path: `/tools/${name}?v=${n}` },
    })),
  };
}

interface Answer {
  status: number;
  body: { result?: { tools?: Array<{ name: string; description: string }>; structuredContent?: { name?: string; version?: string }; isError?: boolean }; error?: unknown };
  text: string;
}

async function post(client: Client, route: string, payload: unknown): Promise<Answer> {
  const res = await client.request({
    method: 'POST',
    path: `/mcp/${route}`,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(payload),
  });
  const text = await res.body.text();
  let body: Answer['body'] = {};
  try {
    body = JSON.parse(text) as Answer['body'];
  } catch {
    // left empty: the status/shape checks below report it
  }
  return { status: res.statusCode, body, text };
}

describe('atomic catalog swaps under load', { timeout: 120_000 }, () => {
  const services: FixtureToolService[] = [];
  let portal: FixturePortal;
  let gw: Gateway;
  let version = 1;

  beforeAll(async () => {
    const routes: Record<string, Array<{ id: string; baseUrl: string }>> = {};
    for (const route of ROUTES) {
      const s = await startFixtureToolService();
      s.setManifest(manifest(route, version));
      for (const name of TOOLS) s.setBehavior(`/tools/${name}`, { kind: 'echo' });
      services.push(s);
      routes[route] = [{ id: `${route}-svc`, baseUrl: s.url }];
    }
    portal = await startFixturePortal({ revision: 'stress', routes });
    gw = await startTestGateway({
      workers: { shards: 2 },
      catalog: { source: 'portal', portal: { url: portal.url, timeoutMs: 1_000 }, refreshIntervalMs: 10, refreshJitterRatio: 0, manifestMaxBackoffMs: 0, manifestConcurrency: 20 },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
    await portal?.close();
    await Promise.all(services.map((s) => s.close()));
  }, 30_000);

  it('never serves a torn catalog, never fails a request, never goes back in version on one connection', async () => {
    const problems: string[] = [];
    const seen = new Set<number>();
    let lists = 0;
    let calls = 0;

    // The bumper: every BUMP_EVERY answers, every Tool Service publishes N+1 — but only once some
    // client has seen N, so that each version is swapped in while the load runs, however fast it runs.
    let answered = 0;
    let bumpedAt = 0;
    const answeredOne = (): void => {
      answered++;
      if (answered - bumpedAt < BUMP_EVERY || !seen.has(version)) return;
      bumpedAt = answered;
      version++;
      services.forEach((s, i) => {
        s.setManifest(manifest(ROUTES[i] as string, version));
      });
    };

    const origin = `http://127.0.0.1:${gw.port}`;
    let next = 0;
    const worker = async (w: number): Promise<void> => {
      // One keep-alive connection per worker; its requests are strictly sequential.
      const client = new Client(origin, { pipelining: 1 });
      const lastSeen = new Map<string, number>();
      try {
        for (let i = next++; i < REQUESTS; i = next++) {
          const route = ROUTES[(i * 7 + w) % ROUTES.length] as string;
          const tool = TOOLS[i % TOOLS.length] as string;
          const isList = i % 2 === 0;
          const answer = await post(
            client,
            route,
            isList ? { jsonrpc: '2.0', id: i, method: 'tools/list' } : { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: tool, arguments: { i } } },
          );
          const published = version;
          answeredOne();
          if (answer.status !== 200 || answer.body.error !== undefined || answer.body.result === undefined) {
            problems.push(`${route} #${i}: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
            continue;
          }
          let n: number;
          if (isList) {
            lists++;
            const tools = answer.body.result.tools ?? [];
            const versions = new Set(tools.map((t) => Number(/ v=(\d+)$/.exec(t.description)?.[1])));
            if (tools.length !== TOOLS.length || versions.size !== 1) {
              problems.push(`${route} #${i}: torn or wrong tools/list: ${JSON.stringify(tools.map((t) => t.description))}`);
              continue;
            }
            n = [...versions][0] as number;
            for (const t of tools) if (t.description !== `${route}/${t.name} v=${n}`) problems.push(`${route} #${i}: foreign tool ${t.description}`);
          } else {
            calls++;
            const sc = answer.body.result.structuredContent;
            n = Number(/^(\d+)\.0\.0$/.exec(sc?.version ?? '')?.[1]);
            if (answer.body.result.isError === true || sc?.name !== tool || !Number.isInteger(n)) {
              problems.push(`${route} #${i}: bad tools/call answer ${answer.text.slice(0, 300)}`);
              continue;
            }
          }
          if (!(n >= 1 && n <= published)) problems.push(`${route} #${i}: version ${n} was never published (latest ${published})`);
          const before = lastSeen.get(route) ?? 0;
          if (n < before) problems.push(`${route} #${i} (connection ${w}): version went back from ${before} to ${n}`);
          lastSeen.set(route, Math.max(before, n));
          seen.add(n);
        }
      } finally {
        await client.close();
      }
    };

    await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
    console.info(`swap stress: ${lists} tools/list + ${calls} tools/call, ${seen.size} distinct catalog versions observed (N bumped to ${version})`);
    expect(problems.slice(0, 20)).toEqual([]);
    expect(lists + calls).toBe(REQUESTS);
    // Swaps really happened during the load.
    expect(seen.size).toBeGreaterThanOrEqual(3);

    // And the last version lands on every route.
    const final = version;
    const check = new Client(origin);
    try {
      await eventually(async () => {
        for (const route of ROUTES) {
          const answer = await post(check, route, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
          expect(answer.body.result?.tools?.map((t) => t.description)).toEqual(TOOLS.map((t) => `${route}/${t} v=${final}`));
        }
      });
    } finally {
      await check.close();
    }
  });
});
