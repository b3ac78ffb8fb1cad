/**
 * Overload protection per Tool Service through a real gateway: the circuit
 * breaker opens after repeated failures and refuses calls without calling
 * the service (readiness and metrics show it), lets a probe through after
 * `openMs` and closes on its success; the bulkhead runs at most
 * `maxConcurrentPerService` calls, queues `maxQueuedPerService` (each until
 * its tool's timeout) and refuses the rest at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { eventually } from '../helpers/eventually.js';
import { httpRequest, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { callTool, resultText, toolResult } from '../helpers/mcp.js';

const calls = (svc: FixtureToolService, tool: string): number => svc.requests.filter((r) => r.path === `/tools/${tool}`).length;

describe('circuit breaker per Tool Service', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'flaky' }], 'flaky-tools'));
    svc.setBehavior('/tools/flaky', { kind: 'json', status: 503, body: { error: 'down' } });
    gw = await startTestGateway({
      catalog: { static: { routes: { core: [{ id: 'flaky-svc', baseUrl: svc.url }] } } },
      tools: { circuitBreaker: { consecutiveFailures: 3, openMs: 400 } },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('opens after consecutive failures, refuses without calling, shows it, half-opens and closes on a good probe', async () => {
    for (let i = 0; i < 3; i++) expect(resultText(toolResult(await callTool(gw, 'core', 'flaky')))).toMatch(/HTTP 503/);
    expect(calls(svc, 'flaky')).toBe(3);

    const refused = toolResult(await callTool(gw, 'core', 'flaky'));
    expect(refused.isError).toBe(true);
    expect(resultText(refused)).toMatch(/^Tool Service "flaky-svc" is unavailable: its circuit is open after repeated failures; the tool was not called \(retry in 1 s\)$/);
    expect(calls(svc, 'flaky')).toBe(3);

    const ready = (await httpRequest(gw, '/health/ready')).json as { toolServices: Record<string, { circuit: string; shards: Record<string, { circuit: string }> }> };
    expect(ready.toolServices['flaky-svc']).toMatchObject({ circuit: 'open', shards: { '0': { circuit: 'open' } } });
    const metrics = (await httpRequest(gw, '/metrics')).text;
    expect(metrics).toMatch(/mcp_gateway_tool_service_circuit\{service="flaky-svc",state="open"\} 1/);
    expect(metrics).toMatch(/mcp_gateway_tool_calls_total\{route="core",service="flaky-svc",cause="circuit_open"\} 1/);

    svc.setBehavior('/tools/flaky', { kind: 'echo' });
    await eventually(async () => {
      const r = (await httpRequest(gw, '/health/ready')).json as { toolServices: Record<string, { circuit: string }> };
      expect(r.toolServices['flaky-svc']?.circuit).toBe('half_open');
    });
    expect(toolResult(await callTool(gw, 'core', 'flaky')).isError).toBeUndefined();
    expect(calls(svc, 'flaky')).toBe(4);
    await eventually(async () => expect(((await httpRequest(gw, '/health/ready')).json as { toolServices: object }).toolServices).toEqual({}));
    expect(toolResult(await callTool(gw, 'core', 'flaky')).isError).toBeUndefined();
  });
});

describe('bulkhead per Tool Service', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'hold' }, { name: 'quick', timeoutMs: 300 }], 'held-tools'));
    svc.setBehavior('/tools/hold', { kind: 'hold', then: { kind: 'echo' } });
    svc.setBehavior('/tools/quick', { kind: 'hold', then: { kind: 'echo' } });
    gw = await startTestGateway({
      catalog: { static: { routes: { core: [{ id: 'held-svc', baseUrl: svc.url }] } } },
      tools: { bulkhead: { maxConcurrentPerService: 2, maxQueuedPerService: 1 } },
    });
  });
  afterAll(async () => {
    svc?.release();
    await gw?.close();
    await svc?.close();
  });

  it('runs 2, queues 1, refuses the 4th at once; the queued one runs when a slot frees', async () => {
    const running = [1, 2].map((i) => callTool(gw, 'core', 'hold', { i }, { id: i }));
    await eventually(() => expect(svc.held).toBe(2));
    const queued = callTool(gw, 'core', 'hold', { i: 3 }, { id: 3 });
    const refused = toolResult(await callTool(gw, 'core', 'hold', { i: 4 }, { id: 4 }));
    expect(refused.isError).toBe(true);
    expect(resultText(refused)).toMatch(/^Tool Service "held-svc" is at capacity .*; the tool was not called \(retry in 1 s\)$/);
    expect(calls(svc, 'hold')).toBe(2);
    svc.release();
    const answers = await Promise.all([...running, queued]);
    expect(answers.map((a) => toolResult(a).isError)).toEqual([undefined, undefined, undefined]);
    expect(calls(svc, 'hold')).toBe(3);
    svc.hold();
  });

  it('a queued call that gets no slot within its tool timeout is answered busy, never sent', async () => {
    const running = [1, 2].map((i) => callTool(gw, 'core', 'hold', { i }, { id: `r${i}` }));
    await eventually(() => expect(svc.held).toBe(2));
    const late = toolResult(await callTool(gw, 'core', 'quick', {}, { id: 'late' }));
    expect(resultText(late)).toBe('Tool Service "held-svc" is at capacity: no free slot within the tool\'s 300 ms (tools.bulkhead.maxConcurrentPerService); the tool was not called');
    expect(calls(svc, 'quick')).toBe(0);
    svc.release();
    await Promise.all(running);
  });
});
