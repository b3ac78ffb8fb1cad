/**
 * Starts the real, built gateway (dist/: the same worker code production
 * runs) on 127.0.0.1 with an ephemeral port, and talks MCP to it.
 * `npm test` builds before running vitest.
 */
import { startGateway, type Gateway } from '../../dist/src/main/gateway.js';
import { validateConfig } from '../../dist/src/shared/config/load.js';

export type { Gateway };

/** Partial config merged over the defaults; `catalog.static.routes` replaces the demo route. */
export type ConfigOverrides = Record<string, unknown>;

/**
 * Starts a gateway with `overrides` (port 0, log level `silent` and 1 shard
 * unless given) and waits for its initial catalog load unless
 * `waitForInitialLoad` is false (e.g. a Portal that is down at start).
 */
export async function startTestGateway(overrides: ConfigOverrides, options: { waitForInitialLoad?: boolean } = {}): Promise<Gateway> {
  const base: ConfigOverrides = {
    server: { host: '127.0.0.1', port: 0 },
    workers: { shards: 1 },
    log: { level: 'silent' },
  };
  const gw = await startGateway(validateConfig(deepMerge(base, overrides)));
  if (options.waitForInitialLoad !== false) await gw.initialLoad();
  return gw;
}

function deepMerge(a: ConfigOverrides, b: ConfigOverrides): ConfigOverrides {
  const out: ConfigOverrides = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      typeof v === 'object' && v !== null && !Array.isArray(v) && typeof prev === 'object' && prev !== null && !Array.isArray(prev) && k !== 'routes'
        ? deepMerge(prev as ConfigOverrides, v as ConfigOverrides)
        : v;
  }
  return out;
}

/** One HTTP answer, body as text and parsed JSON when it is JSON. */
export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** Default MCP request headers (what Agent Builder sends). */
export const MCP_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json',
  accept: 'application/json',
});

/** POSTs `body` (an object is JSON-encoded, a string is sent verbatim) to `/mcp/{route}`. */
export async function mcpPost(gw: Gateway, route: string, body: unknown, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return httpRequest(gw, `/mcp/${route}`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Any request against the gateway. */
export async function httpRequest(gw: Gateway, path: string, init: RequestInit = {}): Promise<HttpAnswer> {
  const res = await fetch(`http://127.0.0.1:${gw.port}${path}`, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** A JSON-RPC request object. */
export function rpc(method: string, params?: unknown, id: string | number = 1): Record<string, unknown> {
  return params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
}
