/**
 * Tool execution contract v1.1 golden examples (SPEC §5, §7): every
 * `docs/contracts/examples/execution/*.json` scripts a real fixture Tool
 * Service with the example's answer, and a real gateway (from dist/) must turn
 * it into exactly the example's `result`. Where an example gives
 * `expectedToolServiceRequest`, the request the Tool Service received must
 * match it too. Format: `docs/contracts/examples/README.md`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureToolService, type Behavior, type FixtureToolService } from '../fixtures/tool-service.js';
import { exchange } from '../helpers/mcp-client.js';
import { ExampleGateways, loadExamples, parseJson, resolvePlaceholders } from './support.js';

/** An execution example file. */
interface ExecutionExample {
  description: string;
  route: string;
  /** Config overrides of the gateway that runs this example (examples with equal overrides share one gateway). */
  gateway?: Record<string, unknown>;
  /** One manifest v1 tool entry. */
  tool: { name: string; execution: { path: string } } & Record<string, unknown>;
  /**
   * The MCP request. `era: "2026-07-28"` sends it on the modern wire (the
   * version header, Mcp-Method/Mcp-Name, `_meta` with the version,
   * `clientCapabilities` (default `{}`) and `meta`'s extra keys); `params`
   * adds members to `params` (MRTR `inputResponses`, `requestState`).
   */
  call: {
    arguments?: unknown;
    headers?: Record<string, string>;
    era?: '2026-07-28';
    clientCapabilities?: Record<string, unknown>;
    meta?: Record<string, unknown>;
    params?: Record<string, unknown>;
  };
  /** The fixture's Behavior, or `{kind: "unreachable"}`: the Tool Service is stopped before the call. */
  toolServiceAnswer: Behavior | { kind: 'unreachable' };
  expectedToolServiceRequest?: { method: string; path: string; headers: Record<string, string | null>; body: unknown };
  /** The JSON-RPC `result` (HTTP 200) … */
  result?: unknown;
  /** … or, for the v1.1 answers that are protocol errors (a refused MRTR input, a missing client capability), the `error` and its HTTP `status`. */
  error?: unknown;
  status?: number;
}

const MIN_EXAMPLES = 15;
const examples = loadExamples<ExecutionExample>('execution');

describe('Tool execution v1 golden examples (docs/contracts/examples/execution)', () => {
  const services = new Map<string, FixtureToolService>();
  const gateways = new ExampleGateways();

  beforeAll(async () => {
    for (const { file, example } of examples) {
      if (services.has(example.route)) throw new Error(`execution/${file}: route "${example.route}" is used by another example`);
      const svc = await startFixtureToolService();
      services.set(example.route, svc);
      svc.setManifest({ service: `${example.route}-service`, tools: [example.tool] });
      if (example.toolServiceAnswer.kind !== 'unreachable') svc.setBehavior(example.tool.execution.path, example.toolServiceAnswer);
      gateways.add(example.route, svc.url, example.gateway);
    }
    await gateways.start();
  });

  afterAll(async () => {
    await gateways.close();
    await Promise.all([...services.values()].map((s) => s.close()));
  });

  it(`has at least ${MIN_EXAMPLES} examples`, () => {
    expect(examples.length).toBeGreaterThanOrEqual(MIN_EXAMPLES);
  });

  it.each(examples.map((e) => [e.file, e.example] as const))('%s', async (file, example) => {
    const gw = gateways.of(example.route);
    const svc = services.get(example.route) as FixtureToolService;
    if (example.toolServiceAnswer.kind === 'unreachable') await svc.close();
    const { call } = example;
    const modern = call.era === '2026-07-28';
    const params: Record<string, unknown> = { name: example.tool.name, ...(call.arguments === undefined ? {} : { arguments: call.arguments }), ...call.params };
    if (modern) {
      params['_meta'] = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': call.clientCapabilities ?? {}, ...call.meta };
    }
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }));
    const eraHeaders: Record<string, string> = modern ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': example.tool.name } : {};
    const headers = { 'content-type': 'application/json', accept: 'application/json', ...eraHeaders, ...call.headers };

    const got = await exchange(gw, { method: 'POST', path: `/mcp/${example.route}`, headers, body });
    expect(got.end, `${file}: the answer ends normally`).toEqual({ complete: true });

    expect(got.status, `${file}: status (body ${got.text.slice(0, 300)})`).toBe(example.status ?? 200);
    const json = parseJson(got.text) as { jsonrpc?: string; id?: unknown; result?: unknown; error?: unknown } | undefined;
    expect(json?.id).toBe(1);
    if (example.error !== undefined) {
      expect(json?.error, `${file}: error`).toEqual(resolvePlaceholders(example.error, json?.error));
    } else {
      expect(json?.error, `${file}: a Tool Service answer never becomes a JSON-RPC error (except the v1.1 ones an example states)`).toBeUndefined();
      expect(json?.result, `${file}: result`).toEqual(resolvePlaceholders(example.result, json?.result));
    }

    const want = example.expectedToolServiceRequest;
    if (want !== undefined) {
      // The fixture records POSTs only, so a recorded request is a POST.
      expect(want.method).toBe('POST');
      expect(svc.requests.length, `${file}: the Tool Service was called once`).toBe(1);
      const received = svc.requests[0] as FixtureToolService['requests'][number];
      expect(received.path, `${file}: execution path`).toBe(want.path);
      for (const [name, value] of Object.entries(want.headers)) {
        const actual = received.headers[name.toLowerCase()];
        expect(actual, `${file}: header ${name}`).toEqual(value === null ? undefined : resolvePlaceholders(value, actual));
      }
      expect(received.body, `${file}: execution request body`).toEqual(resolvePlaceholders(want.body, received.body));
    }
  });
});
