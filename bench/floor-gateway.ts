/**
 * The floor of `tools/call` on the bench's machine (issue 9): the two shapes
 * the prototypes measured, each as small as it can be, so that a
 * bench run shows what any gateway of that shape costs here — and how much of
 * the real gateway's cost is the shape and how much is everything else it
 * does (validation, limits, timeouts, strict framing, metrics, SSE, auth).
 *
 *  - `inline`:  one thread — uWebSockets.js, `JSON.parse` of the body, the
 *               tool name checked, the client's argument bytes spliced into a
 *               pre-built upstream request, one `write` on a keep-alive
 *               `net.Socket`, nothing of the answer parsed but its head's
 *               `Content-Length`, the body wrapped as a JSON-RPC result;
 *  - `sharded`: the same, with everything after the parse on one worker
 *               thread, reached through the gateway's own shared-memory rings
 *               (src/shared/threads/ring.ts; one ring each way, `Atomics`
 *               notify on empty → non-empty; bench/floor-shard-worker.ts): the acceptor sends
 *               `[callId][tool][argument bytes]`, the worker answers
 *               `[callId][status][body]`, the acceptor writes the envelope.
 *
 * Not a gateway: no timeouts, no chunked answers, no limits, no error paths
 * beyond a 502; a Tool Service that misbehaves breaks it. Only the echo Tool
 * Service of the bench stands behind it.
 *
 * Usage: `node dist/bench/floor-gateway.js --mode inline|sharded --port P
 * --upstream URL [--tools N] [--connections C] [--host H]`. Prints
 * `listening <port>` once accepting; serves `POST /mcp`.
 */
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { HttpResponse } from 'uWebSockets.js';
import { ArgumentsScan, scanArguments } from '../src/shared/protocol/arguments-span.js';
import { createRing, RingReader, RingWriter } from '../src/shared/threads/ring.js';
import type { Manifest } from './catalog.js';
import { LeanPool, requestBytes, toolRequests, toolSpecs, type FloorWorkerInput, type ToolRequest } from './floor-client.js';

const FLOOR_MODES = ['inline', 'sharded'] as const;
type FloorMode = (typeof FLOOR_MODES)[number];
const RING_BYTES = 1024 * 1024;
/** [start, end, nesting] of the arguments (the floor does not bound nesting). */
const span = new Int32Array(3);

/** The JSON-RPC answer around the Tool Service's body (or a gateway error). */
function envelope(idText: string, status: number, body: Uint8Array): string {
  if (status !== 200) return `{"jsonrpc":"2.0","id":${idText},"error":{"code":-32603,"message":"Tool Service answered ${status}"}}`;
  return `{"jsonrpc":"2.0","id":${idText},"result":${Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')}}`;
}

/** One request on the acceptor: its response object, whether it was aborted, its id as JSON. */
interface Pending {
  res: HttpResponse;
  aborted: boolean;
  idText: string;
}

function reply(p: Pending, text: string): void {
  if (!p.aborted) p.res.cork(() => p.res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(text));
}

async function runServer(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mode: { type: 'string', default: 'inline' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      upstream: { type: 'string' },
      tools: { type: 'string', default: '50' },
      connections: { type: 'string', default: '64' },
    },
  });
  const mode = values.mode as FloorMode;
  if (!FLOOR_MODES.includes(mode)) throw new Error(`--mode: expected one of ${FLOOR_MODES.join(', ')}, got ${values.mode}`);
  if (values.upstream === undefined) throw new Error('--upstream URL is required');
  const upstream = new URL(values.upstream);
  const connections = Number(values.connections);
  const manifest = (await (await fetch(`${values.upstream}/manifest?tools=${values.tools}`, { signal: AbortSignal.timeout(5000) })).json()) as Manifest;
  const specs = toolSpecs(upstream, manifest);
  const toolIndex = new Map(manifest.tools.map((t, i) => [t.name, i]));

  let forward: (p: Pending, tool: number, args: Uint8Array) => void;
  if (mode === 'inline') {
    const pool = new LeanPool(upstream, connections);
    const tools = toolRequests(specs);
    forward = (p, tool, args) => pool.call(requestBytes(tools[tool] as ToolRequest, args), (status, body) => reply(p, envelope(p.idText, status, body)));
  } else {
    const input: FloorWorkerInput = { upstream: values.upstream, connections, tools: specs, toWorker: createRing(RING_BYTES), toAcceptor: createRing(RING_BYTES) };
    const worker = new Worker(new URL('./floor-shard-worker.js', import.meta.url), { workerData: input, name: 'floor-shard' });
    await new Promise((resolve) => worker.once('message', resolve));
    // Calls in flight by id: a slot table, no Map.
    const slots: Array<Pending | null> = [];
    const free: number[] = [];
    const writer = new RingWriter(input.toWorker, { maxBacklogBytes: Number.POSITIVE_INFINITY });
    new RingReader(input.toAcceptor, (buf, offset, length) => {
      const callId = buf.readUInt32LE(offset);
      const p = slots[callId] as Pending;
      slots[callId] = null;
      free.push(callId);
      reply(p, envelope(p.idText, buf.readUInt32LE(offset + 4), buf.subarray(offset + 8, offset + length)));
    });
    forward = (p, tool, args) => {
      const callId = free.pop() ?? slots.length;
      slots[callId] = p;
      const at = writer.reserve(8 + args.length);
      writer.buf.writeUInt32LE(callId, at);
      writer.buf.writeUInt32LE(tool, at + 4);
      writer.buf.set(args, at + 8);
      writer.commit();
    };
  }

  const { uWS } = await import('./uws.js');
  const { listenUntilSignal } = await import('./uws-listen.js');
  const app = uWS.App();
  app.post('/mcp', (res: HttpResponse) => {
    const p: Pending = { res, aborted: false, idText: 'null' };
    const chunks: Buffer[] = [];
    res.onAborted(() => {
      p.aborted = true;
    });
    res.onData((chunk, isLast) => {
      // uWS neuters `chunk` when this callback returns: copy it.
      const copy = Buffer.from(chunk.slice(0));
      if (!isLast) {
        chunks.push(copy);
        return;
      }
      const body = chunks.length === 0 ? copy : Buffer.concat([...chunks, copy]);
      const msg = JSON.parse(body.toString('utf8')) as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } };
      p.idText = JSON.stringify(msg.id ?? null);
      const tool = msg.method === 'tools/call' && typeof msg.params?.name === 'string' ? toolIndex.get(msg.params.name) : undefined;
      if (tool === undefined) {
        reply(p, `{"jsonrpc":"2.0","id":${p.idText},"error":{"code":-32602,"message":"unknown tool"}}`);
        return;
      }
      forward(p, tool, scanArguments(body, span) === ArgumentsScan.Found ? body.subarray(span[0], span[1]) : Buffer.from(JSON.stringify(msg.params?.arguments ?? {})));
    });
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });
  listenUntilSignal(app, values.host, Number(values.port));
}

await runServer();
