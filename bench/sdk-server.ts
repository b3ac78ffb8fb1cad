/**
 * The memory reference for `tools/call` (issue 9): the official MCP
 * TypeScript SDK (v1) serving the bench's tools the way its stateless
 * example (`examples/server/simpleStatelessStreamableHttp.ts`) does — an
 * Express app from `createMcpExpressApp()`, and per request a new
 * `McpServer` with its tools and a `StreamableHTTPServerTransport` with
 * `sessionIdGenerator: undefined`, both closed when the response closes.
 * Answers are JSON (`enableJsonResponse`), as the gateway's are.
 *
 * Each tool is registered with a zod schema converted once, at start, from
 * the tool's JSON Schema (the SDK validates arguments with it), and forwards
 * the call to the echo Tool Service with undici `Pool.request`, like the
 * inline gateway, so the three are comparable.
 *
 * Usage: `node dist/bench/sdk-server.js --port P --upstream URL [--tools N]
 * [--connections C]`. Loads `URL/manifest?tools=N` once; serves `POST /mcp`.
 * Prints `listening <port>` once accepting.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Pool } from 'undici';
import { z } from 'zod';
import type { Manifest } from './catalog.js';

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
const pool = new Pool(upstream, { connections: Number(values.connections), headersTimeout: UPSTREAM_TIMEOUT_MS, bodyTimeout: UPSTREAM_TIMEOUT_MS });
const tools = manifest.tools.map((t) => ({ tool: t, schema: z.fromJSONSchema(t.inputSchema as Parameters<typeof z.fromJSONSchema>[0]) }));

async function forward(path: string, name: string, version: string, args: unknown): Promise<CallToolResult> {
  const res = await pool.request({ path, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ name, version, arguments: args }) });
  const text = await res.body.text();
  if (res.statusCode !== 200) return { content: [{ type: 'text', text: `Tool Service answered ${res.statusCode}` }], isError: true };
  return JSON.parse(text) as CallToolResult;
}

function getServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-stateless', version: '1.0.0' });
  for (const { tool, schema } of tools) {
    server.registerTool(tool.name, { title: tool.title, description: tool.description, inputSchema: schema, annotations: tool.annotations }, (args: unknown) =>
      forward(tool.execution.path, tool.name, tool.version, args),
    );
  }
  return server;
}

// The SDK ships no Express types here: the handler sees Node's request (plus the parsed JSON body) and response.
const app = createMcpExpressApp({ host: values.host });
app.post('/mcp', async (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => {
  const server = getServer();
  try {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
  } catch (err) {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: (err as Error).message }, id: null }));
  }
});

const listener: Server = app.listen(Number(values.port), values.host, () => {
  console.log(`listening ${(listener.address() as AddressInfo).port}`);
});
const stop = (): void => {
  listener.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
