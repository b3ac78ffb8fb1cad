/**
 * Golden MCP examples as test input (SPEC §3, §9 item 6): every
 * `docs/contracts/examples/mcp/*.json` is sent over real HTTP to one real
 * gateway (built, from dist/) in front of real fixture Tool Services, and the
 * status, the listed headers and the body must match. The format is defined
 * in `docs/contracts/examples/README.md`. Deleting examples fails the suite.
 */
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureToolService, type Behavior, type FixtureToolService } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/mcp-client.js';
import { loadExamples, parseJson, resolvePlaceholders } from './support.js';

/** One Tool Service behind a route, as an example declares it. */
interface DeclaredService {
  id: string;
  manifestPath?: string;
  manifest: unknown;
  /** Tool path → scripted answer (the fixture's {@link Behavior}). */
  answers: Record<string, Behavior>;
}

/** An MCP example file (docs/contracts/examples/README.md). */
interface McpExample {
  description: string;
  routes?: Record<string, DeclaredService[]>;
  toolServiceRequests?: number;
  request: {
    method: string;
    path: string;
    headers?: Record<string, string>;
    body?: unknown;
    bodyText?: string;
    bodySize?: number;
  };
  response: {
    status: number;
    headers?: Record<string, string | null>;
    body?: unknown;
    bodyText?: string;
  };
}

/** Below this many files the folder has lost examples (the seed's failure mode, SPEC §9 item 6). */
const MIN_EXAMPLES = 25;

const examples = loadExamples<McpExample>('mcp');

/** Every route declared by any example; a key declared twice must be declared identically. */
function collectRoutes(): Map<string, DeclaredService[]> {
  const routes = new Map<string, DeclaredService[]>();
  const declaredBy = new Map<string, string>();
  for (const { file, example } of examples) {
    for (const [key, services] of Object.entries(example.routes ?? {})) {
      const prev = routes.get(key);
      if (prev !== undefined && !isDeepStrictEqual(prev, services)) {
        throw new Error(`mcp/${file} declares route "${key}" differently from mcp/${declaredBy.get(key)}; shared routes must be identical`);
      }
      routes.set(key, services);
      declaredBy.set(key, file);
    }
  }
  return routes;
}

function requestBody(req: McpExample['request']): Buffer | undefined {
  if (req.bodySize !== undefined) {
    // A JSON string literal padded to the exact size: valid JSON, only too large.
    return Buffer.from(`"${'x'.repeat(Math.max(0, req.bodySize - 2))}"`);
  }
  if (req.bodyText !== undefined) return Buffer.from(req.bodyText, 'utf8');
  if (req.body !== undefined) return Buffer.from(JSON.stringify(req.body), 'utf8');
  return undefined;
}

describe('MCP endpoint golden examples (docs/contracts/examples/mcp)', () => {
  const services = new Map<string, FixtureToolService[]>();
  let gw: Gateway;

  beforeAll(async () => {
    const routes = collectRoutes();
    const config: Record<string, unknown[]> = {};
    for (const [key, declared] of routes) {
      const started: FixtureToolService[] = [];
      const entries: unknown[] = [];
      for (const d of declared) {
        const svc = await startFixtureToolService();
        started.push(svc);
        svc.setManifest(d.manifest);
        for (const [path, behavior] of Object.entries(d.answers)) svc.setBehavior(path, behavior);
        entries.push({ id: d.id, baseUrl: svc.url, ...(d.manifestPath ? { manifestPath: d.manifestPath } : {}) });
      }
      services.set(key, started);
      config[key] = entries;
    }
    gw = await startTestGateway({ catalog: { static: { routes: config } } });
  });

  afterAll(async () => {
    await gw?.close();
    await Promise.all([...services.values()].flat().map((s) => s.close()));
  });

  it(`has at least ${MIN_EXAMPLES} examples`, () => {
    expect(examples.length).toBeGreaterThanOrEqual(MIN_EXAMPLES);
  });

  it.each(examples.map((e) => [e.file, e.example] as const))('%s', async (file, example) => {
    expect(typeof example.description, `${file}: description`).toBe('string');
    const { request: req, response: want } = example;
    const routeKey = /^\/mcp\/([^/]+)$/.exec(req.path)?.[1];
    const routeServices = (routeKey !== undefined ? services.get(routeKey) : undefined) ?? [];
    const before = routeServices.reduce((n, s) => n + s.requests.length, 0);

    const got = await exchange(gw, { method: req.method, path: req.path, headers: req.headers ?? {}, body: requestBody(req) });
    expect(got.end, `${file}: the answer ends normally`).toEqual({ complete: true });

    expect(got.status, `${file}: status (body ${got.text.slice(0, 300)})`).toBe(want.status);
    for (const [name, value] of Object.entries(want.headers ?? {})) {
      expect(got.headers[name.toLowerCase()], `${file}: header ${name}`).toBe(value === null ? undefined : value);
    }
    if (want.bodyText !== undefined) expect(got.text, `${file}: body text`).toBe(want.bodyText);
    if (want.body !== undefined) {
      const json = parseJson(got.text);
      expect(json, `${file}: body is not JSON: ${got.text.slice(0, 300)}`).not.toBeUndefined();
      expect(json, `${file}: body`).toEqual(resolvePlaceholders(want.body, json));
    }
    if (example.toolServiceRequests !== undefined) {
      const after = routeServices.reduce((n, s) => n + s.requests.length, 0);
      expect(after - before, `${file}: requests received by the route's Tool Services`).toBe(example.toolServiceRequests);
    }
  });
});
