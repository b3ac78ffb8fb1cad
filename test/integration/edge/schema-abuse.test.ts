/**
 * Hostile tool schemas end to end (issue 11 #1, #8): a Tool Service's
 * `inputSchema` is third-party input the shard evaluates against untrusted
 * arguments. A catastrophic-backtracking `pattern` must not stall the shard
 * for the other routes it serves (one shard here: every route shares it),
 * and a `$ref` loop or a 100,000-level schema is refused at catalog build
 * with the Tool Service and the tool named — not accepted and then failing
 * every call, not a bare RangeError.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { callTool, resultText, rpcError, toolResult } from '../../helpers/mcp.js';

/** The issue's pattern; with V8's backtracking engine 28 characters took 6.9 s and each one more doubles it. */
const EVIL_PATTERN = '^(a+)+$';
/** 40 characters: minutes of backtracking on the old engine, microseconds on a linear one. */
const EVIL_ARGUMENT = 'a'.repeat(39) + '!';
/**
 * How long the evil call and a call on another route of the same shard may
 * take together. Far above a linear engine on a busy 2-core machine, far
 * below what backtracking needs for {@link EVIL_ARGUMENT}.
 */
const STALL_BOUND_MS = 5_000;

interface RouteReadiness {
  state: string;
  lastError: { code: string; message: string } | null;
}

describe('hostile tool schemas (issue 11 #1, #8)', () => {
  let regexSvc: FixtureToolService;
  let otherSvc: FixtureToolService;
  let loopSvc: FixtureToolService;
  let deepSvc: FixtureToolService;
  let gw: Gateway;

  beforeAll(async () => {
    regexSvc = await startFixtureToolService();
    regexSvc.setManifest(manifestFor([{ name: 'match', inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: EVIL_PATTERN } }, required: ['s'] } }], 'regex-tools'));
    regexSvc.setBehavior('/tools/match', { kind: 'echo' });
    otherSvc = await startFixtureToolService();
    otherSvc.setManifest(manifestFor([{ name: 'echo' }], 'other-tools'));
    otherSvc.setBehavior('/tools/echo', { kind: 'echo' });
    loopSvc = await startFixtureToolService();
    loopSvc.setManifest(
      manifestFor(
        [
          {
            name: 'looped',
            inputSchema: {
              type: 'object',
              properties: { x: { $ref: '#/$defs/a' } },
              $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } },
            },
          },
        ],
        'loop-tools',
      ),
    );
    loopSvc.setBehavior('/tools/looped', { kind: 'echo' });
    deepSvc = await startFixtureToolService();
    const depth = 100_000;
    // Nested data inside the schema (a `default`), which no schema-level depth check walks: the RangeError.
    const deepSchema = '{"type":"object","default":' + '{"a":'.repeat(depth) + '{}' + '}'.repeat(depth) + '}';
    deepSvc.setManifestRaw(`{"service":"deep-tools","tools":[{"name":"deep","version":"1.0.0","active":true,"description":"Deep.","inputSchema":${deepSchema},"execution":{"path":"/tools/deep"}}]}`);
    gw = await startTestGateway({
      workers: { shards: 1 },
      catalog: {
        static: {
          routes: {
            regex: [{ id: 'regex', baseUrl: regexSvc.url }],
            other: [{ id: 'other', baseUrl: otherSvc.url }],
            loop: [{ id: 'loop', baseUrl: loopSvc.url }],
            deep: [{ id: 'deep', baseUrl: deepSvc.url }],
          },
        },
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([regexSvc, otherSvc, loopSvc, deepSvc].map((s) => s?.close()));
  });

  it('#1 a catastrophic-backtracking pattern argument is refused at once and the other routes of its shard keep being served', async () => {
    const started = performance.now();
    const evil = callTool(gw, 'regex', 'match', { s: EVIL_ARGUMENT }, { id: 'evil' });
    const other = callTool(gw, 'other', 'echo', { n: 1 }, { id: 'other' });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), STALL_BOUND_MS)));
    const both = await Promise.race([Promise.all([evil, other]), bound]).finally(() => clearTimeout(timer));
    expect(both, `the shard answered nothing within ${STALL_BOUND_MS} ms of a ${EVIL_ARGUMENT.length}-character argument for ${EVIL_PATTERN}`).not.toBe('stalled');
    if (both === 'stalled') return;
    const [evilAnswer, otherAnswer] = both;
    const elapsed = performance.now() - started;
    expect(elapsed).toBeLessThan(STALL_BOUND_MS);
    // The argument breaks the pattern: a tool execution error naming the place, and the Tool Service is never called.
    const refused = toolResult(evilAnswer);
    expect(refused.isError).toBe(true);
    expect(resultText(refused)).toMatch(/\/s: must match pattern/);
    expect(regexSvc.requests).toHaveLength(0);
    expect(toolResult(otherAnswer).isError).not.toBe(true);
    // A matching argument still passes the same pattern.
    const ok = await callTool(gw, 'regex', 'match', { s: 'aaaa' });
    expect(toolResult(ok).isError).not.toBe(true);
    expect(regexSvc.requests).toHaveLength(1);
  });

  it('#8 a $ref loop is refused at catalog build, naming the Tool Service and the tool; calls get 503 with the reason, not "nests too deeply"', async () => {
    const ready = (await httpRequest(gw, '/health/ready')).json as { routes: Record<string, RouteReadiness> };
    const loop = ready.routes['loop'];
    expect(loop?.state).toBe('refused');
    expect(loop?.lastError?.code).toBe('MANIFEST_INVALID');
    // The Tool Service by its registry id, the tool by name@version, and the loop itself.
    expect(loop?.lastError?.message).toContain('Tool Service "loop"');
    expect(loop?.lastError?.message).toContain('(looped@1.0.0)');
    expect(loop?.lastError?.message).toMatch(/\$ref loop/);
    const call = await mcpPost(gw, 'loop', rpc('tools/call', { name: 'looped', arguments: { x: 1 } }, 3));
    expect(call.status).toBe(503);
    expect(rpcError(call).data).toEqual({ reason: 'MANIFEST_INVALID' });
    expect(call.text).not.toMatch(/nests too deeply/);
    expect(loopSvc.requests).toHaveLength(0);
  });

  it('#8 a schema nested 100,000 levels deep is refused naming the Tool Service and the tool, not a bare RangeError', async () => {
    const ready = (await httpRequest(gw, '/health/ready')).json as { routes: Record<string, RouteReadiness> };
    const deep = ready.routes['deep'];
    expect(deep?.state).toBe('refused');
    expect(deep?.lastError?.code).toBe('MANIFEST_INVALID');
    expect(deep?.lastError?.message).toContain('Tool Service "deep"');
    expect(deep?.lastError?.message).toContain('(deep@1.0.0)');
    expect(deep?.lastError?.message).toMatch(/nests deeper than/);
    expect(deep?.lastError?.message).not.toMatch(/Maximum call stack size exceeded/);
    // The shard and the other routes are unharmed.
    expect(toolResult(await callTool(gw, 'other', 'echo', {})).isError).not.toBe(true);
  });
});
