/**
 * A demo HTTP Tool Service speaking the Tool Service wire contract v1
 * (SPEC §5, §7): `GET /manifest` and `POST /tools/<name>`.
 *
 * It is deliberately built on `node:http` rather than uWS so that it behaves
 * like an ordinary third-party Tool Service the gateway knows nothing about.
 *
 * Run standalone: `node dist/examples/demo-tool-service.js [--port N] [--host H]`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** Options for {@link startDemoToolService}. */
export interface DemoToolServiceOptions {
  /** Interface to bind; default `127.0.0.1`. */
  host?: string;
  /** Port to bind; default `0` (an ephemeral port). */
  port?: number;
  /** Value of the manifest's `service` field; default `demo-tools`. */
  serviceId?: string;
}

/** A running demo Tool Service. */
export interface DemoToolService {
  /** Base URL to put in a registry entry, e.g. `http://127.0.0.1:3001`. */
  url: string;
  /** The bound port (useful when started on port 0). */
  port: number;
  /** Stops listening and drops open (keep-alive) connections. */
  close(): Promise<void>;
}

/** One tool entry of a contract-v1 manifest. */
export interface DemoManifestTool {
  name: string;
  version: string;
  active: boolean;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  timeoutMs?: number;
  execution: { path: string };
}

/** The contract-v1 manifest served at `GET /manifest`. */
export interface DemoManifest {
  service: string;
  tools: DemoManifestTool[];
}

const MAX_BODY_BYTES = 1024 * 1024;
const TOOL_PATH_PREFIX = '/tools/';

type Args = Record<string, unknown>;

/** What a tool produces: one JSON body, or NDJSON frames written as they come. */
type ToolAnswer = { kind: 'json'; body: unknown } | { kind: 'ndjson'; frames: AsyncIterable<unknown> };

interface DemoTool {
  manifest: Omit<DemoManifestTool, 'execution'>;
  run(args: Args, signal: AbortSignal): Promise<ToolAnswer>;
}

/**
 * Argument violations are answered as a tool error result rather than an HTTP
 * error, so that the message reaches the calling model verbatim and it can
 * correct itself (the same reasoning as MCP SEP-1303).
 */
class ArgumentError extends Error {}

const json = (body: unknown): ToolAnswer => ({ kind: 'json', body });
const text = (value: string): { type: 'text'; text: string } => ({ type: 'text', text: value });

function requireString(args: Args, key: string): string {
  const value = args[key];
  if (typeof value !== 'string') throw new ArgumentError(`/${key} must be a string`);
  return value;
}

function requireNumber(args: Args, key: string): number {
  const value = args[key];
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new ArgumentError(`/${key} must be a number`);
  return value;
}

function requireInteger(args: Args, key: string, min: number, max: number, fallback?: number): number {
  const value = args[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ArgumentError(`/${key} must be an integer between ${min} and ${max}`);
  }
  return value;
}

function rejectUnknownKeys(args: Args, allowed: readonly string[]): void {
  for (const key of Object.keys(args)) {
    if (!allowed.includes(key)) throw new ArgumentError(`/${key} is not an allowed property`);
  }
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const TOOLS: readonly DemoTool[] = [
  {
    manifest: {
      name: 'echo',
      version: '1.0.0',
      active: true,
      title: 'Echo',
      description: 'Returns the given text unchanged.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string', description: 'Text to echo back.' } },
        required: ['text'],
        additionalProperties: false,
      },
      annotations: READ_ONLY,
      timeoutMs: 5000,
    },
    async run(args) {
      rejectUnknownKeys(args, ['text']);
      return json({ content: [text(requireString(args, 'text'))] });
    },
  },
  {
    manifest: {
      name: 'add',
      version: '1.0.0',
      active: true,
      title: 'Add two numbers',
      description: 'Adds a and b and returns {"sum": a + b}.',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
      outputSchema: {
        type: 'object',
        properties: { sum: { type: 'number' } },
        required: ['sum'],
        additionalProperties: false,
      },
      annotations: READ_ONLY,
      timeoutMs: 5000,
    },
    async run(args) {
      rejectUnknownKeys(args, ['a', 'b']);
      // Plain JSON on purpose: it exercises the gateway's wrapping of non-CallToolResult answers.
      return json({ sum: requireNumber(args, 'a') + requireNumber(args, 'b') });
    },
  },
  {
    manifest: {
      name: 'word_count',
      version: '1.0.0',
      active: true,
      title: 'Count words',
      description: 'Counts the words and characters of a text.',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
        additionalProperties: false,
      },
      outputSchema: {
        type: 'object',
        properties: { words: { type: 'integer', minimum: 0 }, characters: { type: 'integer', minimum: 0 } },
        required: ['words', 'characters'],
        additionalProperties: false,
      },
      annotations: READ_ONLY,
      timeoutMs: 5000,
    },
    async run(args) {
      rejectUnknownKeys(args, ['text']);
      const value = requireString(args, 'text');
      const trimmed = value.trim();
      // Characters are code points, so that an emoji counts once, as a reader would count it.
      return json({ words: trimmed === '' ? 0 : trimmed.split(/\s+/u).length, characters: [...value].length });
    },
  },
  {
    manifest: {
      name: 'current_time',
      version: '1.0.0',
      active: true,
      title: 'Current time',
      description: 'Returns the current time, optionally in an IANA time zone (default UTC).',
      inputSchema: {
        type: 'object',
        properties: {
          timeZone: { type: 'string', description: 'IANA time zone, e.g. "Asia/Seoul".', minLength: 1, maxLength: 64 },
        },
        additionalProperties: false,
      },
      outputSchema: {
        type: 'object',
        properties: {
          iso: { type: 'string' },
          epochMs: { type: 'integer' },
          timeZone: { type: 'string' },
          formatted: { type: 'string' },
        },
        required: ['iso', 'epochMs', 'timeZone', 'formatted'],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      timeoutMs: 5000,
    },
    async run(args) {
      rejectUnknownKeys(args, ['timeZone']);
      const timeZone = args['timeZone'] === undefined ? 'UTC' : requireString(args, 'timeZone');
      let formatter: Intl.DateTimeFormat;
      try {
        formatter = new Intl.DateTimeFormat('en-US', { timeZone, dateStyle: 'full', timeStyle: 'long' });
      } catch {
        throw new ArgumentError(`/timeZone "${timeZone}" is not a known IANA time zone`);
      }
      const now = new Date();
      const formatted = formatter.format(now);
      return json({
        content: [text(`${formatted} (${timeZone})`)],
        structuredContent: { iso: now.toISOString(), epochMs: now.getTime(), timeZone, formatted },
      });
    },
  },
  {
    manifest: {
      name: 'slow',
      version: '1.0.0',
      active: true,
      title: 'Slow answer',
      description: 'Waits the given number of milliseconds before answering; for timeout experiments.',
      inputSchema: {
        type: 'object',
        properties: { ms: { type: 'integer', minimum: 0, maximum: 30000 } },
        required: ['ms'],
        additionalProperties: false,
      },
      annotations: READ_ONLY,
      // Above the 30 s maximum wait, so that only a gateway-side cap can cut it short.
      timeoutMs: 35000,
    },
    async run(args, signal) {
      rejectUnknownKeys(args, ['ms']);
      const ms = requireInteger(args, 'ms', 0, 30000);
      await sleep(ms, undefined, { signal });
      return json({ content: [text(`waited ${ms} ms`)] });
    },
  },
  {
    manifest: {
      name: 'count_with_progress',
      version: '1.0.0',
      active: true,
      title: 'Count with progress',
      description: 'Counts from 1 to steps, streaming a progress frame per step (NDJSON).',
      inputSchema: {
        type: 'object',
        properties: {
          steps: { type: 'integer', minimum: 1, maximum: 50 },
          delayMs: { type: 'integer', minimum: 0, maximum: 2000, default: 100 },
        },
        required: ['steps'],
        additionalProperties: false,
      },
      annotations: READ_ONLY,
      // 50 steps × 2000 ms is the longest legal run; leave headroom for the final frames.
      timeoutMs: 105000,
    },
    async run(args, signal) {
      rejectUnknownKeys(args, ['steps', 'delayMs']);
      const steps = requireInteger(args, 'steps', 1, 50);
      const delayMs = requireInteger(args, 'delayMs', 0, 2000, 100);
      async function* frames(): AsyncGenerator<unknown> {
        for (let i = 1; i <= steps; i++) {
          await sleep(delayMs, undefined, { signal });
          yield { type: 'progress', progress: i, total: steps, message: `step ${i}` };
        }
        yield { type: 'log', level: 'info', data: { message: `counted ${steps} steps`, steps, delayMs } };
        yield { type: 'result', result: { content: [text(`counted to ${steps}`)] } };
      }
      return { kind: 'ndjson', frames: frames() };
    },
  },
  {
    manifest: {
      name: 'always_fails',
      version: '1.0.0',
      active: true,
      title: 'Always fails',
      description: 'Always answers with a tool error result (isError: true); for error-path experiments.',
      inputSchema: {
        type: 'object',
        properties: { reason: { type: 'string' } },
        additionalProperties: false,
      },
      annotations: READ_ONLY,
      timeoutMs: 5000,
    },
    async run(args) {
      rejectUnknownKeys(args, ['reason']);
      const reason = args['reason'] === undefined ? 'this tool always fails' : requireString(args, 'reason');
      return json({ content: [text(`always_fails: ${reason}`)], isError: true });
    },
  },
];

/** Builds the manifest the demo service serves, for tests and docs that want to compare against it. */
export function demoManifest(serviceId = 'demo-tools'): DemoManifest {
  return {
    service: serviceId,
    tools: TOOLS.map((tool) => ({ ...tool.manifest, execution: { path: TOOL_PATH_PREFIX + tool.manifest.name } })),
  };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new HttpError(413, `body exceeds ${limit} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        reject(new HttpError(413, `body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, extraHeaders: Record<string, string> = {}): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
    ...extraHeaders,
  });
  res.end(payload);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function writeFrames(res: ServerResponse, frames: AsyncIterable<unknown>): Promise<void> {
  res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
  // Headers go out at once so the caller sees the stream start before the first (possibly delayed) frame.
  res.flushHeaders();
  for await (const frame of frames) {
    if (res.destroyed) return;
    res.write(JSON.stringify(frame) + '\n');
  }
  res.end();
}

async function handleToolCall(req: IncomingMessage, res: ServerResponse, tool: DemoTool): Promise<void> {
  const raw = await readBody(req, MAX_BODY_BYTES);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
  if (!isPlainObject(body)) throw new HttpError(400, 'request body must be a JSON object');
  const { name, version } = body;
  const args = body['arguments'] ?? {};
  if (name !== undefined && name !== tool.manifest.name) {
    throw new HttpError(400, `body names tool "${String(name)}" but was posted to ${TOOL_PATH_PREFIX}${tool.manifest.name}`);
  }
  if (version !== undefined && version !== tool.manifest.version) {
    throw new HttpError(400, `tool ${tool.manifest.name} has no version "${String(version)}"`);
  }
  if (!isPlainObject(args)) throw new HttpError(400, '"arguments" must be a JSON object');

  // Stop timers and streams when the caller (e.g. a timed-out gateway) hangs up.
  const aborter = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) aborter.abort();
  });

  let answer: ToolAnswer;
  try {
    answer = await tool.run(args, aborter.signal);
  } catch (error) {
    if (error instanceof ArgumentError) {
      sendJson(res, 200, { content: [text(`invalid arguments: ${error.message}`)], isError: true });
      return;
    }
    throw error;
  }
  if (answer.kind === 'json') sendJson(res, 200, answer.body);
  else await writeFrames(res, answer.frames);
}

function createHandler(serviceId: string) {
  const manifestBody = JSON.stringify(demoManifest(serviceId));
  const toolsByName = new Map(TOOLS.map((tool) => [tool.manifest.name, tool]));

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/manifest') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: 'method not allowed' }, { allow: 'GET, HEAD' });
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(manifestBody),
        'cache-control': 'no-cache',
      });
      res.end(req.method === 'HEAD' ? undefined : manifestBody);
      return;
    }
    if (path.startsWith(TOOL_PATH_PREFIX)) {
      const name = decodeURIComponent(path.slice(TOOL_PATH_PREFIX.length));
      const tool = toolsByName.get(name);
      if (!tool) {
        sendJson(res, 404, { error: `unknown tool "${name}"` });
        return;
      }
      if (req.method !== 'POST') {
        sendJson(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
        return;
      }
      await handleToolCall(req, res, tool);
      return;
    }
    sendJson(res, 404, { error: 'not found' });
  };
}

function onHandlerError(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    // Mid-stream failure: cutting the connection is the only honest signal left.
    res.destroy();
    return;
  }
  if (error instanceof HttpError) {
    // After a 413 the rest of the body is unread, so this connection cannot be reused.
    sendJson(res, error.status, { error: error.message }, error.status === 413 ? { connection: 'close' } : {});
    return;
  }
  if (error instanceof Error && error.name === 'AbortError') {
    res.destroy();
    return;
  }
  sendJson(res, 500, { error: error instanceof Error ? error.message : 'internal error' });
}

function formatUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Starts the demo Tool Service.
 *
 * @returns its base URL and bound port, and `close()`, which also drops
 *   keep-alive connections so callers never wait for idle sockets to time out.
 */
export async function startDemoToolService(opts: DemoToolServiceOptions = {}): Promise<DemoToolService> {
  const host = opts.host ?? '127.0.0.1';
  const handler = createHandler(opts.serviceId ?? 'demo-tools');
  const sockets = new Set<Socket>();

  const server: Server = createServer({ keepAlive: true }, (req, res) => {
    handler(req, res).catch((error: unknown) => onHandlerError(res, error));
  });
  // Longer than undici's default 4 s idle keep-alive, so the gateway's pooled connections are the ones to close first.
  server.keepAliveTimeout = 30_000;
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('demo tool service: unexpected listen address');
  const port = address.port;

  let closing: Promise<void> | undefined;
  return {
    url: formatUrl(host, port),
    port,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return closing;
    },
  };
}

function isMainModule(): boolean {
  const entry = process.argv[1];
  return entry !== undefined && import.meta.url === pathToFileURL(entry).href;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: 'string' }, host: { type: 'string' } },
    allowPositionals: false,
  });
  const port = values.port === undefined ? 3001 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be an integer between 0 and 65535, got "${values.port}"`);
  }
  const host = values.host ?? '127.0.0.1';
  const service = await startDemoToolService({ host, port });
  console.log(`demo tool service listening on ${service.url}`);
  const shutdown = (): void => {
    service.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

if (isMainModule()) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
