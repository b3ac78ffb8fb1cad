/**
 * One server process for the hop bench (`bench/hop.ts`): answers every
 * `POST /mcp/*` with the same 50-tool `tools/list` response, computed in the
 * place the `--mode` picks, so that the only difference between modes is
 * where the answer comes from and how it travels:
 *
 *  - `bare`              answer on the uWS thread from a precomputed Buffer (as bench/bare-uws.ts)
 *  - `sab`               answer on the uWS thread from a SharedArrayBuffer template a worker
 *                        prepared at start, joined with the id tail by the gateway's `writeReply`
 *  - `post-per-request`  one `postMessage` per request to one worker (body copied into a new
 *                        ArrayBuffer, structured clone) and one `postMessage` of the answer string back
 *  - `batched`           the gateway's own call/result frames (src/shared/threads/call-frames.ts) over
 *                        `PortFrameWriter`: one transferred buffer per event-loop turn each way, one worker
 *  - `batched-2w`        as `batched` with two workers, requests routed by a counter
 *  - `ring`, `ring-2w`   the same frames over the gateway's shared-memory rings (src/shared/threads/ring.ts):
 *                        what the gateway does today
 *
 * No mode parses the request: parsing costs the same wherever it happens, and
 * the bench isolates the hand-off. Every mode copies the request body out of
 * uWS (uWS neuters the chunk after the callback), as any real server must.
 *
 * Usage: `node dist/bench/hop-server.js --mode M [--port P] [--host H] [--tools N]`.
 * Prints `listening <port>` once accepting. The same file is the worker script.
 */
import { once } from 'node:events';
import { MessageChannel, Worker, isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import type { HttpResponse } from 'uWebSockets.js';
import { assembleRpcAnswer, writeReply } from '../src/main/reply-writer.js';
import { PooledCallRequest } from '../src/shared/calls.js';
import { callFrameId, RESULT_HEAD, ResultKind, resultFrameCallId, resultFramePayloadLength, writeCall, writeResult } from '../src/shared/threads/call-frames.js';
import { createRing, RingReader, RingWriter, type RingMemory } from '../src/shared/threads/ring.js';
import { PortFrameReader, PortFrameWriter } from './port-frames.js';
import { generateManifest, toolsListResult } from './catalog.js';

// Not exported: importing this file would start a server (bench/hop.ts keeps its own list).
const HOP_MODES = ['bare', 'sab', 'post-per-request', 'batched', 'batched-2w', 'ring', 'ring-2w'] as const;
type HopMode = (typeof HOP_MODES)[number];

type WorkerRole = 'publish' | 'post' | 'batched' | 'ring';
interface HopWorkerData {
  role: WorkerRole;
  toolCount: number;
  port: MessagePort;
  /** `ring` role: calls arrive on `toWorker`, answers leave on `toAcceptor`. */
  rings?: { toWorker: RingMemory; toAcceptor: RingMemory };
}
/** Per-request message of `post-per-request`, both directions. */
interface PostCall {
  id: number;
  body: ArrayBuffer;
}
interface PostAnswer {
  id: number;
  body: string;
}

const MAX_BODY_BYTES = 1024 * 1024;
const JSON_TYPE = 'application/json';

/** The complete answer (id 1), byte-identical to bench/bare-uws.ts. */
function answerText(toolCount: number): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, result: toolsListResult(generateManifest(toolCount, { serviceId: 'bare' })) });
}

/**
 * The gateway's snapshot form (src/shared/snapshot/layout.ts): the answer
 * without its id, completed per request by the tail `<id>}`. Same length as
 * {@link answerText} once the tail `1}` is appended.
 */
function listTemplateText(toolCount: number): string {
  return `{"jsonrpc":"2.0","result":${JSON.stringify(toolsListResult(generateManifest(toolCount, { serviceId: 'bare' })))},"id":`;
}

// ---------------------------------------------------------------------------
// Worker side.

function runWorker(data: HopWorkerData): void {
  const { port } = data;
  switch (data.role) {
    case 'publish': {
      // Build the template once and publish its bytes in a SharedArrayBuffer,
      // as the refresh/shard workers publish snapshots to the acceptor.
      const bytes = Buffer.from(listTemplateText(data.toolCount));
      const sab = new SharedArrayBuffer(bytes.length);
      new Uint8Array(sab).set(bytes);
      port.postMessage({ type: 'published', sab });
      port.close();
      return;
    }
    case 'post': {
      const answer = answerText(data.toolCount);
      port.on('message', (msg: PostCall) => {
        const reply: PostAnswer = { id: msg.id, body: answer };
        port.postMessage(reply);
      });
      break;
    }
    case 'batched': {
      // The shard side of the gateway's hand-off: every call frame answered with a result frame.
      const result = JSON.stringify(toolsListResult(generateManifest(data.toolCount, { serviceId: 'bare' })));
      const writer = new PortFrameWriter(port);
      new PortFrameReader(port, (buf, offset) => {
        writeResult(writer, ResultKind.Result, callFrameId(buf, offset), 0, 200, result);
      });
      break;
    }
    case 'ring': {
      const result = JSON.stringify(toolsListResult(generateManifest(data.toolCount, { serviceId: 'bare' })));
      const rings = data.rings as { toWorker: RingMemory; toAcceptor: RingMemory };
      const writer = new RingWriter(rings.toAcceptor, { maxBacklogBytes: Number.POSITIVE_INFINITY });
      // A pending Atomics.waitAsync does not keep a worker alive; the port listener does (the shard has its parentPort).
      port.on('message', () => undefined);
      new RingReader(rings.toWorker, (buf, offset) => {
        writeResult(writer, ResultKind.Result, callFrameId(buf, offset), 0, 200, result);
      });
      break;
    }
  }
  parentPort?.postMessage('ready');
}

// ---------------------------------------------------------------------------
// Acceptor side.

/** Starts a worker running this file and returns the acceptor's end of its port once it is ready. */
async function startWorker(role: WorkerRole, toolCount: number): Promise<{ worker: Worker; port: MessagePort; rings: { toWorker: RingMemory; toAcceptor: RingMemory } }> {
  const { port1, port2 } = new MessageChannel();
  const rings = { toWorker: createRing(256 * 1024), toAcceptor: createRing(256 * 1024) };
  const data: HopWorkerData = { role, toolCount, port: port2, rings };
  const worker = new Worker(new URL(import.meta.url), { workerData: data, transferList: [port2] });
  worker.once('error', (err) => {
    console.error(`worker (${role}) failed:`, err);
    process.exit(1);
  });
  if (role !== 'publish') await once(worker, 'message');
  return { worker, port: port1, rings };
}

/**
 * Reads a request body the way every mode must: each chunk copied out of uWS
 * into a fresh ArrayBuffer (one chunk in the common case), with the abort and
 * size guards a real server needs. `onBody` runs synchronously in the last
 * `onData` callback.
 */
function readBody(res: HttpResponse, onAbort: () => void, onBody: (body: Uint8Array) => void): void {
  let done = false;
  let chunks: Uint8Array[] | undefined;
  let size = 0;
  res.onAborted(() => {
    done = true;
    onAbort();
  });
  res.onData((chunk, isLast) => {
    if (done) return;
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      done = true;
      res.cork(() => res.writeStatus('413 Payload Too Large').end('', true));
      return;
    }
    const copy = new Uint8Array(chunk.slice(0));
    if (!isLast) {
      chunks ??= [];
      chunks.push(copy);
      return;
    }
    done = true;
    if (chunks === undefined) {
      onBody(copy);
      return;
    }
    chunks.push(copy);
    const all = new Uint8Array(size);
    let o = 0;
    for (const c of chunks) {
      all.set(c, o);
      o += c.length;
    }
    onBody(all);
  });
}

async function runServer(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mode: { type: 'string', default: 'bare' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      tools: { type: 'string', default: '50' },
    },
  });
  const mode = values.mode as HopMode;
  if (!HOP_MODES.includes(mode)) throw new Error(`--mode: expected one of ${HOP_MODES.join(', ')}, got ${values.mode}`);
  const port = Number(values.port);
  const toolCount = Number(values.tools);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port: ${values.port}`);
  if (!Number.isInteger(toolCount) || toolCount < 0) throw new Error(`--tools: not a count: ${values.tools}`);

  // Loaded here, not at the top: worker threads running this file never need it.
  const { uWS } = await import('./uws.js');
  const app = uWS.App();
  const noop = (): void => {};
  const workers: Worker[] = [];

  switch (mode) {
    case 'bare': {
      const answer = Buffer.from(answerText(toolCount));
      app.post('/mcp/*', (res) => {
        readBody(res, noop, () => {
          res.cork(() => {
            res.writeStatus('200 OK').writeHeader('content-type', JSON_TYPE).end(answer);
          });
        });
      });
      break;
    }
    case 'sab': {
      const { worker, port: link } = await startWorker('publish', toolCount);
      const [msg] = (await once(link, 'message')) as [{ type: 'published'; sab: SharedArrayBuffer }];
      link.close();
      await worker.terminate();
      const template = new Uint8Array(msg.sab);
      app.post('/mcp/*', (res) => {
        readBody(res, noop, () => {
          // As the acceptor answers tools/list: template bytes + `<id>}`, joined in a scratch buffer.
          res.cork(() => writeReply(res, { status: 200, contentType: JSON_TYPE, body: template, bodyTail: '1}' }));
        });
      });
      break;
    }
    case 'post-per-request': {
      const { worker, port: link } = await startWorker('post', toolCount);
      workers.push(worker);
      const pending = new Map<number, { res: HttpResponse; aborted: boolean }>();
      let nextId = 1;
      link.on('message', (msg: PostAnswer) => {
        const call = pending.get(msg.id);
        if (call === undefined) return;
        pending.delete(msg.id);
        if (call.aborted) return;
        call.res.cork(() => writeReply(call.res, { status: 200, contentType: JSON_TYPE, body: msg.body }));
      });
      app.post('/mcp/*', (res) => {
        const call = { res, aborted: false };
        readBody(
          res,
          () => {
            call.aborted = true;
          },
          (body) => {
            const id = nextId;
            nextId = (nextId + 1) >>> 0 || 1;
            pending.set(id, call);
            // Structured clone, no transfer: the ArrayBuffer is copied once more.
            const msg: PostCall = { id, body: body.buffer as ArrayBuffer };
            link.postMessage(msg);
          },
        );
      });
      break;
    }
    case 'batched':
    case 'batched-2w':
    case 'ring':
    case 'ring-2w': {
      const n = mode.endsWith('-2w') ? 2 : 1;
      const useRing = mode.startsWith('ring');
      const started = await Promise.all(Array.from({ length: n }, () => startWorker(useRing ? 'ring' : 'batched', toolCount)));
      workers.push(...started.map((s) => s.worker));
      // The gateway's acceptor-side hand-off: a call frame out, a result frame back, the envelope written here.
      const inFlight = new Map<number, { res: HttpResponse; aborted: boolean }>();
      const writers = started.map((s) => (useRing ? new RingWriter(s.rings.toWorker, { maxBacklogBytes: Number.POSITIVE_INFINITY }) : new PortFrameWriter(s.port)));
      for (const s of started) {
        const onAnswer = (buf: Buffer, offset: number): void => {
          const id = resultFrameCallId(buf, offset);
          const call = inFlight.get(id);
          inFlight.delete(id);
          if (call === undefined || call.aborted) return;
          const start = offset + RESULT_HEAD;
          const body = assembleRpcAnswer('1', false, buf.subarray(start, start + resultFramePayloadLength(buf, offset)), false);
          call.res.cork(() => call.res.writeStatus('200 OK').writeHeader('content-type', JSON_TYPE).end(body));
        };
        if (useRing) new RingReader(s.rings.toAcceptor, onAnswer);
        else new PortFrameReader(s.port, onAnswer);
      }
      const request = new PooledCallRequest();
      request.toolName = 'list';
      let counter = 0;
      let nextCallId = 1;
      app.post('/mcp/*', (res, req) => {
        const routeKey = req.getUrl().slice('/mcp/'.length);
        const call = { res, aborted: false };
        readBody(
          res,
          () => {
            call.aborted = true;
          },
          (body) => {
            const shard = counter;
            counter = (counter + 1) % n;
            const id = nextCallId;
            nextCallId = (nextCallId + 1) >>> 0 || 1;
            request.routeKey = routeKey;
            request.argumentsJson = Buffer.from(body).toString('utf8');
            inFlight.set(id, call);
            writeCall(writers[shard] as RingWriter | PortFrameWriter, id, request);
          },
        );
      });
      break;
    }
  }

  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });

  app.listen(values.host, port, (listenSocket) => {
    if (listenSocket === false) {
      console.error(`cannot listen on ${values.host}:${port}`);
      process.exit(1);
    }
    console.log(`listening ${uWS.us_socket_local_port(listenSocket)} mode ${mode} workers ${workers.length}`);
    const stop = (): void => {
      uWS.us_listen_socket_close(listenSocket);
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

if (isMainThread) {
  await runServer();
} else {
  runWorker(workerData as HopWorkerData);
}
