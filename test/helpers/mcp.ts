/**
 * Typed views of gateway answers and the MCP calls the integration tests
 * make most (`tools/call`, `tools/list`). Everything here asserts shape loudly (throws with the
 * raw answer) so a wrong answer fails the test with something readable.
 */
import { mcpPost, rpc, type Gateway, type HttpAnswer } from './gateway.js';

/** A JSON-RPC response as the gateway writes it. */
export interface RpcResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** One MCP content block (only `type` is common to all). */
export type ContentBlock = { type: string } & Record<string, unknown>;

/** An MCP CallToolResult. */
export interface ToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** The answer parsed as a JSON-RPC response (throws with the raw text when it is not one). */
export function rpcBody(answer: HttpAnswer): RpcResponse {
  const body = answer.json as RpcResponse | undefined;
  if (typeof body !== 'object' || body === null || body.jsonrpc !== '2.0') {
    throw new Error(`not a JSON-RPC response (HTTP ${answer.status}): ${answer.text.slice(0, 500)}`);
  }
  return body;
}

/** The JSON-RPC error of an answer (throws when it has none). */
export function rpcError(answer: HttpAnswer): { code: number; message: string; data?: unknown } {
  const body = rpcBody(answer);
  if (body.error === undefined) throw new Error(`expected a JSON-RPC error, got: ${answer.text.slice(0, 500)}`);
  return body.error;
}

/** The CallToolResult of a `tools/call` answer (throws when the answer carries none). */
export function toolResult(answer: HttpAnswer): ToolResult {
  const body = rpcBody(answer);
  const result = body.result as ToolResult | undefined;
  if (result === undefined || !Array.isArray(result.content)) {
    throw new Error(`expected a CallToolResult (HTTP ${answer.status}): ${answer.text.slice(0, 500)}`);
  }
  return result;
}

/** Every text block of a result joined with newlines. */
export function resultText(result: ToolResult): string {
  return result.content
    .filter((b) => b.type === 'text')
    .map((b) => String(b['text']))
    .join('\n');
}

/** POSTs `tools/call`. */
export function callTool(gw: Gateway, route: string, name: string, args: unknown = {}, options: { id?: string | number; headers?: Record<string, string> } = {}): Promise<HttpAnswer> {
  return mcpPost(gw, route, rpc('tools/call', { name, arguments: args }, options.id ?? 1), options.headers ?? {});
}

/** Names listed by `tools/list` on a route (throws when the route does not answer a list). */
export async function listToolNames(gw: Gateway, route: string): Promise<string[]> {
  const answer = await mcpPost(gw, route, rpc('tools/list', undefined, 'list'));
  const result = rpcBody(answer).result as { tools?: Array<{ name: string }> } | undefined;
  if (answer.status !== 200 || result?.tools === undefined) {
    throw new Error(`tools/list on ${route} failed (HTTP ${answer.status}): ${answer.text.slice(0, 500)}`);
  }
  return result.tools.map((t) => t.name);
}
