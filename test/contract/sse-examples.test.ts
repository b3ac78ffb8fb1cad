/**
 * Streaming contract v0.3 golden transcripts (docs/contracts/streaming-v0.3.md):
 * every `docs/contracts/examples/sse/*.json` scripts a real fixture Tool
 * Service with the example's NDJSON lines (or JSON answer), sends the
 * example's request to a real gateway (from dist/), and compares the answer:
 * status, headers, and either the SSE events in order (each `event: message`
 * with its `data` deep-equal to the example, placeholders allowed) or the
 * plain JSON body. SSE comments (heartbeats) are not events and are skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureToolService, type Behavior, type FixtureToolService } from '../fixtures/tool-service.js';
import { exchange } from '../helpers/mcp-client.js';
import { parseSse, sseEvents, type SseComment } from '../helpers/sse.js';
import { ExampleGateways, loadExamples, parseJson, resolvePlaceholders } from './support.js';

/** An `sse/*.json` example. */
interface SseExample {
  description: string;
  /** Config overrides of the gateway that runs this example (examples with equal overrides share one gateway). */
  gateway?: Record<string, unknown>;
  /** The one manifest v1 tool entry the example's Tool Service offers. */
  tool: { name: string; execution: { path: string } } & Record<string, unknown>;
  request: { headers: Record<string, string>; body: unknown };
  /** The fixture's scripted answer: `ndjson` lines (with `delayMs`) or a `json` body. */
  toolServiceAnswer: Behavior;
  response: {
    status: number;
    /** Lowercase names; `null` = must be absent. */
    headers: Record<string, string | null>;
    /** SSE answers: the events in order. */
    events?: Array<{ event: string; data: unknown }>;
    /** Plain JSON answers: the parsed body. */
    body?: unknown;
  };
}

const MIN_EXAMPLES = 4;
const examples = loadExamples<SseExample>('sse');
const ROUTE_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The route of an example: its file name without `.json` (a valid route key by the README's naming rule). */
const routeOf = (file: string): string => file.replace(/\.json$/, '');

describe('Streaming v0.3 golden transcripts (docs/contracts/examples/sse)', () => {
  const services = new Map<string, FixtureToolService>();
  const gateways = new ExampleGateways();

  beforeAll(async () => {
    for (const { file, example } of examples) {
      const route = routeOf(file);
      if (!ROUTE_RE.test(route)) throw new Error(`sse/${file}: the file name must be a valid route key`);
      const svc = await startFixtureToolService();
      services.set(route, svc);
      svc.setManifest({ service: `${route}-service`, tools: [example.tool] });
      svc.setBehavior(example.tool.execution.path, example.toolServiceAnswer);
      gateways.add(route, svc.url, example.gateway);
    }
    await gateways.start();
  });

  afterAll(async () => {
    await gateways.close();
    await Promise.all([...services.values()].map((s) => s.close()));
  });

  it(`has at least ${MIN_EXAMPLES} examples, each with either events or a body`, () => {
    expect(examples.length).toBeGreaterThanOrEqual(MIN_EXAMPLES);
    for (const { file, example } of examples) {
      expect(typeof example.description, `sse/${file}: description`).toBe('string');
      expect((example.response.events === undefined) !== (example.response.body === undefined), `sse/${file}: exactly one of response.events / response.body`).toBe(true);
    }
    // The contract needs both kinds: streamed answers and answers that stay plain JSON.
    expect(examples.filter((e) => e.example.response.events !== undefined).length).toBeGreaterThanOrEqual(MIN_EXAMPLES);
    expect(examples.some((e) => e.example.response.body !== undefined)).toBe(true);
  });

  it.each(examples.map((e) => [e.file, e.example] as const))('%s', async (file, example) => {
    const route = routeOf(file);
    const gw = gateways.of(route);
    const body = Buffer.from(JSON.stringify(example.request.body));

    const got = await exchange(gw, { method: 'POST', path: `/mcp/${route}`, headers: example.request.headers, body });
    expect(got.end, `${file}: the answer ends normally`).toEqual({ complete: true });

    expect(got.status, `${file}: status (body ${got.text.slice(0, 300)})`).toBe(example.response.status);
    for (const [name, value] of Object.entries(example.response.headers)) {
      expect(got.headers[name], `${file}: header ${name}`).toBe(value === null ? undefined : value);
    }
    if (example.response.body !== undefined) {
      expect(got.text, `${file}: a plain JSON answer has no SSE framing`).not.toMatch(/^(event|data):/m);
      const json = parseJson(got.text);
      expect(json, `${file}: body`).toEqual(resolvePlaceholders(example.response.body, json));
      return;
    }
    const sse = parseSse(got.text);
    expect(sse.tail, `${file}: the stream ends with a complete event`).toBe('');
    const comments = sse.items.filter((i): i is SseComment => i.kind === 'comment');
    for (const c of comments) expect(c.line, `${file}: the only comments are heartbeats`).toBe(': keep-alive');
    const events = sseEvents(sse.items);
    for (const e of events) expect(e.fields, `${file}: every event is "event: message" + one "data:" line`).toEqual(['event', 'data']);
    const actual = events.map((e) => ({ event: e.event, data: parseJson(e.data) }));
    const expected = example.response.events ?? [];
    expect(actual, `${file}: events in order`).toEqual(resolvePlaceholders(expected, actual));
  });
});
