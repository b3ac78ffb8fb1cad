/**
 * The one HTTP client of the tests that reads an answer as it arrives:
 * node:http, one fresh connection per exchange (`agent: false`), the body
 * sent byte for byte with any headers (a foreign Host included, which
 * `fetch` refuses), the answer readable while it streams (SSE), and a client
 * disconnect on demand. `gateway.ts`'s `mcpPost`/`httpRequest` remain the
 * shortcut for a whole JSON answer; `raw-http.ts` is for requests HTTP
 * clients will not send (malformed framing, chunked bodies).
 */
import { request } from 'node:http';
import { waitUntil } from './eventually.js';
import { parseSse, type SseItem } from './sse.js';

/** Where to send: a gateway, or anything with a port on 127.0.0.1. */
export interface Target {
  port: number;
}

/** One request, sent exactly as given; `host` defaults to `127.0.0.1:<port>`, `content-length` is set when there is a body. */
export interface ExchangeRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** Status and headers (lowercase names; repeated headers joined with ", "). */
export interface ExchangeHead {
  status: number;
  headers: Record<string, string>;
}

/** How an exchange ended: `complete` when the answer ended normally, else why not. */
export interface ExchangeEnd {
  complete: boolean;
  error?: string;
}

/** An exchange in progress. */
export interface OpenExchange {
  /** Resolves once the response head arrived (rejects when the connection fails before). */
  head: Promise<ExchangeHead>;
  /** The body received so far. */
  text(): string;
  /** The complete SSE blocks received so far. */
  items(): SseItem[];
  /** Resolves when the exchange is over. */
  done: Promise<ExchangeEnd>;
  /** Client disconnect: destroys the socket. */
  disconnect(): void;
  /** Waits (bounded) until `condition` holds for the SSE items received; the error shows what was received. */
  waitFor(condition: (items: SseItem[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
}

/** A finished exchange. */
export interface ExchangeResult extends ExchangeHead {
  text: string;
  end: ExchangeEnd;
}

/** What an MCP client that takes streams sends as Accept. */
export const SSE_ACCEPT = 'application/json, text/event-stream';

/** Starts one exchange. */
export function openExchange(target: Target, req: ExchangeRequest): OpenExchange {
  const body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
  const headers: Record<string, string> = { host: `127.0.0.1:${target.port}`, ...req.headers };
  if (body !== undefined) headers['content-length'] = String(body.length);
  let text = '';
  let settleDone!: (end: ExchangeEnd) => void;
  const done = new Promise<ExchangeEnd>((resolve) => (settleDone = resolve));
  let settleHead!: (head: ExchangeHead) => void;
  let failHead!: (err: Error) => void;
  const head = new Promise<ExchangeHead>((resolve, reject) => {
    settleHead = resolve;
    failHead = reject;
  });
  // A caller that only awaits `done` must not see an unhandled rejection.
  head.catch(() => undefined);
  const clientRequest = request({ host: '127.0.0.1', port: target.port, method: req.method, path: req.path, headers, agent: false }, (res) => {
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
    settleHead({ status: res.statusCode ?? 0, headers: h });
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.on('end', () => settleDone({ complete: true }));
    res.on('close', () => settleDone({ complete: res.complete }));
    res.on('error', (err) => settleDone({ complete: false, error: err.message }));
  });
  // A server may answer (413) and close before the whole body is written; the answer, if any, still counts.
  clientRequest.on('error', (err) => {
    failHead(err);
    settleDone({ complete: false, error: err.message });
  });
  clientRequest.end(body);
  const items = (): SseItem[] => parseSse(text).items;
  return {
    head,
    text: () => text,
    items,
    done,
    disconnect: () => clientRequest.destroy(),
    waitFor: (condition, what, timeoutMs = 5_000) =>
      waitUntil(
        () => condition(items()),
        () => `${what}; received: ${text.slice(0, 2000)}`,
        timeoutMs,
        5,
      ),
  };
}

/** One whole exchange: its head, the body as text, and how it ended. */
export async function exchange(target: Target, req: ExchangeRequest): Promise<ExchangeResult> {
  const open = openExchange(target, req);
  const head = await open.head;
  const end = await open.done;
  return { ...head, text: open.text(), end };
}

/** Starts a JSON-RPC POST to `/mcp/{route}` that accepts SSE (`headers` override the defaults). */
export function openCall(target: Target, route: string, body: unknown, headers: Record<string, string> = {}): OpenExchange {
  return openExchange(target, {
    method: 'POST',
    path: `/mcp/${route}`,
    headers: { 'content-type': 'application/json', accept: SSE_ACCEPT, ...headers },
    body: JSON.stringify(body),
  });
}

/** A whole {@link openCall}, with the SSE items of its body. */
export async function sseCall(target: Target, route: string, body: unknown, headers: Record<string, string> = {}): Promise<ExchangeResult & { items: SseItem[] }> {
  const call = openCall(target, route, body, headers);
  const head = await call.head;
  const end = await call.done;
  return { ...head, text: call.text(), items: call.items(), end };
}

/** A `tools/call` request body, with `_meta` when given. */
export function toolsCallBody(id: string | number, name: string, meta?: Record<string, unknown>, args: Record<string, unknown> = {}): Record<string, unknown> {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } };
}
