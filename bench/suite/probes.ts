/**
 * Probes: one request per distinct request of a load, checked before any
 * load runs, so a row never measures fast error answers by mistake. Every
 * request is bounded (5 s).
 */

/** A request as the probes and the load share it. */
export interface ProbeRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** An answer, its body as text and (when it parses) as JSON. */
export interface Answer {
  status: number;
  text: string;
  json: unknown;
}

/** Checks an answer; returns a problem, or undefined when it is correct. */
export type Check = (a: Answer) => string | undefined;

const PROBE_TIMEOUT_MS = 5000;

/** Sends one request (bounded by 5 s) and reads the whole answer. */
export async function send(url: string, req: ProbeRequest): Promise<Answer> {
  const res = await fetch(url, { method: req.method ?? 'GET', headers: req.headers ?? {}, body: req.body ?? null, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

const excerpt = (text: string): string => (text.length > 240 ? `${text.slice(0, 240)}…` : text);

/** Sends `req` to `url` and checks the answer; returns a problem with the answer's excerpt. */
export async function probeOne(url: string, req: ProbeRequest, check: Check): Promise<string | undefined> {
  let a: Answer;
  try {
    a = await send(url, req);
  } catch (err) {
    return `request to ${url} failed: ${(err as Error).message}`;
  }
  const problem = check(a);
  return problem === undefined ? undefined : `${url}: ${problem} (HTTP ${a.status}: ${excerpt(a.text)})`;
}

/** A 200 `tools/list` answer with exactly these tool names. */
export const checkList =
  (names: string[]): Check =>
  (a) => {
    if (a.status !== 200) return 'status is not 200';
    const tools = (a.json as { result?: { tools?: Array<{ name?: unknown }> } } | undefined)?.result?.tools;
    if (!Array.isArray(tools)) return 'no result.tools array';
    const got = tools.map((t) => t.name);
    if (got.length !== names.length || names.some((n) => !got.includes(n))) return `expected ${names.length} tools, got ${got.length}`;
    return undefined;
  };

const checkCallResult = (result: unknown): string | undefined => {
  const r = result as { content?: unknown; isError?: unknown } | undefined;
  if (!Array.isArray(r?.content)) return 'no content array';
  if (r?.isError === true) return 'isError: true';
  return undefined;
};

/** A 200 JSON-RPC answer whose `result` is a successful CallToolResult. */
export const checkGatewayCall: Check = (a) => (a.status !== 200 ? 'status is not 200' : checkCallResult((a.json as { result?: unknown } | undefined)?.result));
/** A 200 CallToolResult straight from a Tool Service. */
export const checkDirectCall: Check = (a) => (a.status !== 200 ? 'status is not 200' : checkCallResult(a.json));
/** A 200 `initialize` result with protocolVersion and serverInfo. */
export const checkInitialize: Check = (a) => {
  if (a.status !== 200) return 'status is not 200';
  const r = (a.json as { result?: { protocolVersion?: unknown; serverInfo?: unknown } } | undefined)?.result;
  return typeof r?.protocolVersion === 'string' && r.serverInfo !== undefined ? undefined : 'no result.protocolVersion / serverInfo';
};
/** Any 200 JSON answer (the bare uWS baseline's constant body). */
export const checkAnyJson: Check = (a) => (a.status === 200 && a.json !== undefined ? undefined : 'not a 200 JSON answer');
/** HTTP 200 carrying the JSON-RPC error `code`. */
export const checkRpcError =
  (code: number): Check =>
  (a) => {
    const err = (a.json as { error?: { code?: unknown } } | undefined)?.error;
    return a.status === 200 && err?.code === code ? undefined : `expected HTTP 200 with JSON-RPC error ${code}`;
  };
/** Exactly HTTP `status`. */
export const checkStatus =
  (status: number): Check =>
  (a) =>
    a.status === status ? undefined : `expected HTTP ${status}`;

/** The 2026-07-28 result envelope every modern answer carries (ADR-0014): `resultType` and the server's identity. */
const checkModernResult = (result: unknown): string | undefined => {
  const r = result as { resultType?: unknown; _meta?: Record<string, unknown> } | undefined;
  if (r?.resultType !== 'complete') return 'result.resultType is not "complete"';
  return r._meta?.['io.modelcontextprotocol/serverInfo'] === undefined ? 'no result._meta serverInfo' : undefined;
};

/** A 2026-07-28 `tools/list` answer: complete, these tool names, `ttlMs` and `cacheScope`. */
export const checkModernList =
  (names: string[]): Check =>
  (a) => {
    const r = (a.json as { result?: { ttlMs?: unknown; cacheScope?: unknown } } | undefined)?.result;
    const problem = checkList(names)(a) ?? checkModernResult(r);
    if (problem !== undefined) return problem;
    return typeof r?.ttlMs === 'number' && typeof r.cacheScope === 'string' ? undefined : 'no result.ttlMs / cacheScope';
  };

/** A 2026-07-28 `tools/call` answer: complete and a successful CallToolResult. */
export const checkModernCall: Check = (a) => checkGatewayCall(a) ?? checkModernResult((a.json as { result?: unknown } | undefined)?.result);
