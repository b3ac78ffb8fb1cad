/**
 * HTTP-level fuzz against the real gateway (issue 11): fast-check generated
 * raw connections (test/fuzz/http-requests.ts) — methods, targets, versions,
 * header sets with duplicates and control characters, lying or conflicting
 * framing, JSON-RPC bodies, pipelining and split writes. Every byte that
 * comes back must be well-formed HTTP/1.1 responses (status line, headers,
 * framing) with a status the gateway or uWS documents; nothing may be thrown
 * on a gateway thread; the gateway keeps serving and a normal `tools/call`
 * works afterwards. Bounded: FUZZ_HTTP_RUNS connections (default 400), 16 at
 * a time, each watched for at most 1.2 s (a request that declares more body
 * than it sends is rightly waited for; the client gives up).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzRuns, fuzzSeed } from '../../fuzz/arbitraries.js';
import { rawScript, type RawScript } from '../../fuzz/http-requests.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { callTool, listToolNames, toolResult } from '../../helpers/mcp.js';
import { rawExchange, type RawExchange } from '../../helpers/raw-http.js';

const RUNS = fuzzRuns(400);
const PARALLEL = 16;
const WAIT_MS = 1_200;
/** Statuses the gateway (or uWS before it) answers with (docs/contracts/mcp-endpoint.md, ADR-0001). */
const KNOWN_STATUSES = new Set([200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 431, 501, 503, 505]);

describe('HTTP-level fuzz: every answer well-formed, the gateway keeps serving', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  const escaped: unknown[] = [];
  const onUncaught = (err: unknown): void => {
    escaped.push(err);
  };
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
    process.on('uncaughtException', onUncaught);
  });
  afterAll(async () => {
    process.off('uncaughtException', onUncaught);
    await gw?.close();
    await svc?.close();
  });

  it(`${RUNS} generated connections`, { timeout: 120_000 }, async () => {
    const scripts = fc.sample(rawScript, { numRuns: RUNS, seed: fuzzSeed() });
    const failures: string[] = [];
    let answered = 0;
    const check = (script: RawScript, x: RawExchange): void => {
      const what = JSON.stringify(Buffer.concat(script.writes).toString('latin1').slice(0, 400));
      if (x.rest.length > 0) failures.push(`malformed bytes ${JSON.stringify(x.rest.toString('latin1').slice(0, 120))} after ${x.responses.length} responses to ${what}`);
      if (x.responses.length > script.requests) failures.push(`${x.responses.length} responses to ${script.requests} requests: ${what}`);
      for (const r of x.responses) if (!KNOWN_STATUSES.has(r.status)) failures.push(`status ${r.status} to ${what}`);
      answered += x.responses.length;
    };
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < scripts.length) {
        const script = scripts[next++] as RawScript;
        check(script, await rawExchange(gw.port, script.writes, { gapMs: script.writes.length > 1 ? 5 : 0, waitMs: WAIT_MS, expectResponses: script.requests, head: script.heads }));
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    expect(failures.slice(0, 10)).toEqual([]);
    // The generator must reach the endpoints, not only uWS's refusals.
    expect(answered).toBeGreaterThan(RUNS / 4);
    expect(escaped.map(String)).toEqual([]);
    expect(await listToolNames(gw, 'core')).toEqual(['echo']);
    const call = await callTool(gw, 'core', 'echo', { after: 'fuzz' });
    expect(toolResult(call).isError).not.toBe(true);
  });
});
