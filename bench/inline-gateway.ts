/**
 * The honest comparator for `tools/call` (issue 9): the naive inline gateway
 * anyone would write in an afternoon — uWebSockets.js on one thread,
 * `JSON.parse` of the body, the tool name checked against the catalog,
 * undici `Pool.request` to the Tool Service over keep-alive connections, the
 * answer wrapped as a JSON-RPC result. No worker threads, no validation of
 * arguments, no streaming: what the sharded gateway must beat.
 *
 * Usage: `node dist/bench/inline-gateway.js --port P --upstream URL
 * [--tools N] [--connections C] [--host H]`. Loads `URL/manifest?tools=N` once
 * at start; serves `POST /mcp`. Prints `listening <port>` once accepting.
 */
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import type { HttpResponse } from 'uWebSockets.js';
import { uWS } from './uws.js';
import type { Manifest, ManifestTool } from './catalog.js';
import { listenUntilSignal } from './uws-listen.js';

const MAX_BODY_BYTES = 1024 * 1024;
const UPSTREAM_TIMEOUT_MS = 30_000;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    upstream: { type: 'string' },
    tools: { type: 'string', default: '50' },
    connections: { type: 'string', default: '64' },
  },
});
const upstream = values.upstream;
if (upstream === undefined) throw new Error('--upstream URL is required');
const manifest = (await (await fetch(`${upstream}/manifest?tools=${values.tools}`, { signal: AbortSignal.timeout(5000) })).json()) as Manifest;
const tools = new Map<string, ManifestTool>(manifest.tools.map((t) => [t.name, t]));
const pool = new Pool(upstream, { connections: Number(values.connections), headersTimeout: UPSTREAM_TIMEOUT_MS, bodyTimeout: UPSTREAM_TIMEOUT_MS });

const rpcError = (id: unknown, code: number, message: string): string => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });

async function answer(body: string): Promise<string> {
  let id: unknown = null;
  try {
    const msg = JSON.parse(body) as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } };
    id = msg.id ?? null;
    const tool = msg.method === 'tools/call' && typeof msg.params?.name === 'string' ? tools.get(msg.params.name) : undefined;
    if (tool === undefined) return rpcError(id, -32602, 'unknown tool');
    const res = await pool.request({
      path: tool.execution.path,
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ name: tool.name, version: tool.version, arguments: msg.params?.arguments ?? {} }),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) return rpcError(id, -32603, `Tool Service answered ${res.statusCode}`);
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${text}}`;
  } catch (err) {
    return rpcError(id, -32603, (err as Error).message);
  }
}

const app = uWS.App();
app.post('/mcp', (res: HttpResponse) => {
  let aborted = false;
  const chunks: Buffer[] = [];
  let size = 0;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((chunk, isLast) => {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      if (!aborted) res.cork(() => res.writeStatus('413 Payload Too Large').end('', true));
      aborted = true;
      return;
    }
    // uWS neuters `chunk` when this callback returns: copy it.
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!isLast || aborted) return;
    void answer(Buffer.concat(chunks).toString('utf8')).then((text) => {
      if (!aborted) res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(text));
    });
  });
});
app.any('/*', (res) => {
  res.writeStatus('404 Not Found').end();
});
listenUntilSignal(app, values.host, Number(values.port));
