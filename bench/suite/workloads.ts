/**
 * What the bench sends: the workload ids and labels, the routes' shapes, and
 * every request body (built once, before any load).
 */
import { generateManifest, sampleArguments, type Manifest, type ManifestTool } from '../catalog.js';
import type { LoadRequest } from '../harness.js';
import { checkGatewayCall, checkInitialize, checkList, checkRpcError, checkStatus, type Check } from './probes.js';

/** Workloads of the full run, in table order. */
export const WORKLOADS = ['list5', 'list50', 'list50-modern', 'list50-auth', 'list50-jwt', 'call', 'call-modern', 'call-auth', 'call-jwt', 'initialize', 'mixed', 'refresh'] as const;
/** One workload id. */
export type WorkloadId = (typeof WORKLOADS)[number];

/** Row labels of the report. */
export const WORKLOAD_LABEL: Record<WorkloadId, string> = {
  list5: 'tools/list · 5 tools',
  list50: 'tools/list · 50 tools',
  'list50-modern': 'tools/list · 50 tools · MCP 2026-07-28',
  'list50-auth': 'tools/list · 50 tools · API key',
  'list50-jwt': 'tools/list · 50 tools · JWT',
  call: 'tools/call · echo tool',
  'call-modern': 'tools/call · echo tool · MCP 2026-07-28',
  'call-auth': 'tools/call · echo tool · API key',
  'call-jwt': 'tools/call · echo tool · JWT',
  initialize: 'initialize',
  mixed: 'mixed · 40 routes',
  refresh: 'tools/list · 50 tools under refresh',
};

/**
 * A workload that is another one's request changed in one respect, sent to
 * the same gateway in the same run: its rows take their baseline from `of`
 * (bare uWS, the Tool Service alone) and are also divided by `of`'s row of
 * the same gateway — the cost of the era or of the credential check. Selecting
 * it selects `of` too.
 */
export interface Variant {
  of: WorkloadId;
  /** What `of`'s row is, for the report: "legacy request", "auth off". */
  reference: string;
}

/** The variant workloads and what each is compared with. */
export const VARIANTS: Partial<Record<WorkloadId, Variant>> = {
  'list50-modern': { of: 'list50', reference: 'legacy request' },
  'list50-auth': { of: 'list50', reference: 'auth off' },
  'list50-jwt': { of: 'list50', reference: 'auth off' },
  'call-modern': { of: 'call', reference: 'legacy request' },
  'call-auth': { of: 'call', reference: 'auth off' },
  'call-jwt': { of: 'call', reference: 'auth off' },
};

/** The workload whose baseline rows `w`'s rows are divided by (itself unless a variant). */
export const baseWorkload = (w: string): string => VARIANTS[w as WorkloadId]?.of ?? w;

/** Routes of the mixed load. */
export const MIXED_ROUTES = 40;
/** Routes of the refresh-under-load gateway. */
export const REFRESH_ROUTES = 40;
/** `catalog.refreshIntervalMs` of the refresh-under-load gateway. */
export const REFRESH_INTERVAL_MS = 50;
/** Tool counts of the mixed and refresh routes, in turn (route 0 has 50). */
export const ROUTE_SIZES = [50, 5, 10, 20] as const;
/** The MCP protocol version the bench's clients announce. */
export const PROTOCOL_VERSION = '2025-06-18';
/** Headers of an MCP client such as Agent Builder (stateless Streamable HTTP). */
export const MCP_HEADERS: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION };

const manifests = new Map<number, Manifest>();

/** The echo service's manifest of `tools` tools (memoised: generating is not free). */
export function manifest(tools: number): Manifest {
  let m = manifests.get(tools);
  if (m === undefined) {
    m = generateManifest(tools, { serviceId: 'echo' });
    manifests.set(tools, m);
  }
  return m;
}

/** Tool names of an n-tool catalog. */
export const toolNames = (n: number): string[] => manifest(n).tools.map((t) => t.name);
/** Tool count of mixed/refresh route `i`. */
export const routeSize = (i: number): number => ROUTE_SIZES[i % ROUTE_SIZES.length] ?? 50;
/** `r00`, `c07`, …: name of route `i` with a prefix. */
export const routeName = (prefix: string, i: number): string => `${prefix}${String(i).padStart(2, '0')}`;

let nextId = 1;
/** A JSON-RPC request with a fresh small id. */
export const rpc = (method: string, params?: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: nextId++ % 1000, method, ...(params !== undefined ? { params } : {}) });
/** `tools/list`, id 1 (the bare uWS baseline answers id 1). */
export const listBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
/** The MCP revision of the modern-era rows (ADR-0014). */
export const MODERN_VERSION = '2026-07-28';
/** `_meta` of every 2026-07-28 request, as the SDK v2 client sends it (docs/contracts/mcp-endpoint.md §8.2 rule 3). */
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'agent-builder-bench', version: '1.0.0' },
};
/** Headers of a 2026-07-28 request: the era, `Mcp-Method` and, for `tools/call`, `Mcp-Name` (§8.2 rules 5–6). */
export const modernHeaders = (method: string, name?: string): Record<string, string> => ({
  ...MCP_HEADERS,
  'mcp-protocol-version': MODERN_VERSION,
  'mcp-method': method,
  ...(name !== undefined ? { 'mcp-name': name } : {}),
});
/** 2026-07-28 `tools/list`, id 1, as docs/contracts/examples/mcp/modern-tools-list.json sends it (plus clientInfo). */
export const modernListBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: MODERN_META } });

/** `initialize` as an Agent Builder client sends it. */
export const initBody = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'agent-builder-bench', version: '1.0.0' } },
});

/** The tool every `tools/call` row calls: the first tool of the 50-tool catalog. */
export function echoTool(): ManifestTool {
  const tool = manifest(50).tools[0];
  if (tool === undefined) throw new Error('empty catalog');
  return tool;
}

/** The `tools/call` row's bodies: to an MCP server (legacy and 2026-07-28), and straight to the Tool Service. */
export function echoCallBodies(): { mcp: string; modern: string; direct: string; path: string; name: string } {
  const tool = echoTool();
  const args = sampleArguments(tool.inputSchema);
  return {
    mcp: rpc('tools/call', { name: tool.name, arguments: args }),
    modern: rpc('tools/call', { name: tool.name, arguments: args, _meta: MODERN_META }),
    direct: JSON.stringify({ name: tool.name, version: tool.version, arguments: args }),
    path: tool.execution.path,
    name: tool.name,
  };
}

function callBody(tools: number, index: number): string {
  const tool = manifest(tools).tools[index % tools];
  if (tool === undefined) throw new Error('empty catalog');
  return rpc('tools/call', { name: tool.name, arguments: sampleArguments(tool.inputSchema) });
}

/** One request of the mixed load with the check its probe applies. */
export type CheckedRequest = LoadRequest & { check: Check };

/**
 * The mixed, Agent-Builder-like request sequence: over `routes` routes
 * named `prefix00…`, per 20 requests 14 tools/call (each a different tool
 * with full arguments), 2 tools/list, 1 initialize, 1
 * notifications/initialized, 1 call of an unknown tool (JSON-RPC error) and
 * 1 request to an unknown route (404).
 */
export function mixedRequests(routes = MIXED_ROUTES, prefix = 'r'): CheckedRequest[] {
  const out: CheckedRequest[] = [];
  for (let i = 0; i < 100; i++) {
    const r = (i * 7) % routes;
    const size = routeSize(r);
    const slot = i % 20;
    const base = { method: 'POST' as const, headers: MCP_HEADERS, path: `/mcp/${routeName(prefix, r)}` };
    if (slot < 14) out.push({ ...base, body: callBody(size, i), check: checkGatewayCall });
    else if (slot < 16) out.push({ ...base, body: rpc('tools/list'), check: checkList(toolNames(size)) });
    else if (slot === 16) out.push({ ...base, body: initBody, check: checkInitialize });
    else if (slot === 17) out.push({ ...base, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), check: checkStatus(202) });
    else if (slot === 18) out.push({ ...base, body: rpc('tools/call', { name: 'no_such_tool', arguments: {} }), check: checkRpcError(-32602) });
    else out.push({ ...base, path: `/mcp/unknown-route-${r}`, body: rpc('tools/list'), check: checkStatus(404) });
  }
  return out;
}

/** The mixed load's description for the report's notes. */
export const MIXED_NOTE = `mixed: ${MIXED_ROUTES} routes of ${ROUTE_SIZES.join('/')} tools; per 20 requests 14 tools/call (distinct tools, full arguments), 2 tools/list, 1 initialize, 1 notifications/initialized (202), 1 unknown tool (JSON-RPC error -32602, HTTP 200), 1 unknown route (404, expected).`;
