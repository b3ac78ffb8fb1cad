/**
 * Calls Tool Services over HTTP with undici: one keep-alive Pool per Tool
 * Service origin, a deadline per call, a bounded answer size, and every
 * failure turned into an `isError` result (never an exception).
 */
import { Pool } from 'undici';
import type { CatalogTool } from '../../shared/catalog/types.js';
import type { CallContext } from '../../shared/threads/frames.js';
import { mapCallToolResult, mapJsonAnswer, statusError, toolError, type MappedResult } from './tool-result.js';

/** Settings the caller takes from `tools.*`. */
export interface UpstreamOptions {
  connectionsPerService: number;
  maxResponseBytes: number;
}

/** One tool call to send. */
export interface UpstreamCall {
  tool: CatalogTool;
  /** Already validated against the tool's inputSchema. */
  argumentsJson: string;
  routeKey: string;
  ctx: CallContext;
}

/** Outcome of one upstream call, with what metrics need. */
export interface UpstreamResult extends MappedResult {
  /** Short machine label of the failure cause, `ok` when the Tool Service answered a result. */
  cause: 'ok' | 'status' | 'timeout' | 'unreachable' | 'malformed' | 'too_large' | 'tool_error';
}

const NDJSON = 'application/x-ndjson';

/** Owns the pools; `close()` is graceful and idempotent. */
export class ToolServiceClient {
  private readonly pools = new Map<string, Pool>();
  private closed = false;

  constructor(private readonly options: UpstreamOptions) {}

  /** Calls the tool; resolves with a mapped result whatever happens upstream. */
  async call(call: UpstreamCall): Promise<UpstreamResult> {
    if (this.closed) return { ...toolError('gateway is shutting down; the tool was not called'), cause: 'unreachable' };
    const url = new URL(call.tool.executionUrl);
    const pool = this.poolFor(url.origin);
    const timeoutMs = call.tool.timeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: `application/json, ${NDJSON}`,
      'x-request-id': call.ctx.requestId,
      'x-mcp-route': call.routeKey,
    };
    if (call.ctx.sessionId !== '') headers['x-mcp-session-id'] = call.ctx.sessionId;
    if (call.ctx.traceparent !== '') headers['traceparent'] = call.ctx.traceparent;
    const body = `{"name":${JSON.stringify(call.tool.name)},"version":${JSON.stringify(call.tool.version)},"arguments":${call.argumentsJson}}`;
    try {
      const res = await pool.request({ path: url.pathname + url.search, method: 'POST', headers, body, signal });
      const contentType = String(res.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
      if (res.statusCode < 200 || res.statusCode > 299) {
        const snippet = (await readText(res.body, 4096).catch(() => null)) ?? '';
        return { ...statusError(res.statusCode, snippet), cause: 'status' };
      }
      if (contentType === NDJSON) return await consumeNdjson(res.body, this.options.maxResponseBytes);
      const text = await readText(res.body, this.options.maxResponseBytes);
      if (text === null) return { ...toolError(`Tool Service answer is larger than tools.maxResponseBytes (${this.options.maxResponseBytes})`), cause: 'too_large' };
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return { ...toolError('Tool Service answer is malformed: the body is not valid JSON'), cause: 'malformed' };
      }
      const mapped = mapJsonAnswer(value, text);
      return { ...mapped, cause: mapped.isError ? 'tool_error' : 'ok' };
    } catch (err) {
      return failure(err, signal, timeoutMs);
    }
  }

  /** Closes every pool gracefully (in-flight calls finish). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }

  private poolFor(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, { connections: this.options.connectionsPerService, keepAliveTimeout: 30_000, pipelining: 1 });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}

function failure(err: unknown, signal: AbortSignal, timeoutMs: number): UpstreamResult {
  if (signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError') {
    return { ...toolError(`Tool Service did not answer within ${timeoutMs} ms (timeout)`), cause: 'timeout' };
  }
  const e = err as Error & { code?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code ?? e.name;
  const what =
    code === 'ECONNREFUSED' ? 'connection refused' : code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' ? 'connection closed before the answer was complete' : e.message;
  return { ...toolError(`Tool Service unreachable: ${what} (${code})`), cause: 'unreachable' };
}

/** Reads a body up to `maxBytes`; `null` when it is larger (the rest is discarded). */
async function readText(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, maxBytes: number): Promise<string | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/**
 * Reads an NDJSON stream of progress / log frames to its one result or error
 * frame (SPEC §7). Progress and log frames are dropped here: forwarding them
 * as SSE belongs to the streaming transport.
 */
async function consumeNdjson(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, maxBytes: number): Promise<UpstreamResult> {
  const decoder = new TextDecoder();
  let pending = '';
  let size = 0;
  const handleLine = (line: string): UpstreamResult | null => {
    if (line.trim() === '') return null;
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      return { ...toolError('Tool Service stream is malformed: a line is not valid JSON'), cause: 'malformed' };
    }
    const type = typeof frame === 'object' && frame !== null ? (frame as { type?: unknown }).type : undefined;
    if (type === 'progress' || type === 'log') return null;
    if (type === 'result') {
      const result = (frame as { result?: unknown }).result;
      if (typeof result !== 'object' || result === null || Array.isArray(result)) {
        return { ...toolError('Tool Service stream is malformed: the result frame carries no result object'), cause: 'malformed' };
      }
      const mapped = mapCallToolResult(result);
      return { ...mapped, cause: mapped.isError ? 'tool_error' : 'ok' };
    }
    if (type === 'error') {
      const message = (frame as { message?: unknown }).message;
      return { ...toolError(`Tool Service reported an error: ${typeof message === 'string' ? message : 'no message'}`), cause: 'tool_error' };
    }
    return { ...toolError(`Tool Service stream is malformed: unknown frame type ${JSON.stringify(type ?? null)}`), cause: 'malformed' };
  };
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      return { ...toolError(`Tool Service answer is larger than tools.maxResponseBytes (${maxBytes})`), cause: 'too_large' };
    }
    pending += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      const done = handleLine(line);
      if (done) {
        body.destroy();
        return done;
      }
    }
  }
  const last = handleLine(pending + decoder.decode());
  return last ?? { ...toolError('Tool Service stream is malformed: it ended without a result frame'), cause: 'malformed' };
}
