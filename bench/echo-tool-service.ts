/**
 * Minimal, fast Tool Service for benchmarks (SPEC §7 wire contract).
 *
 * `GET /manifest` serves `generateManifest(N)`; `POST /tools/*` reads the body
 * and answers a constant MCP CallToolResult. It is built on uWebSockets.js
 * and does no parsing so that, in a `tools/call` bench through the gateway,
 * nearly all measured cost is the gateway's, not the downstream's.
 *
 * Usage: `node dist/bench/echo-tool-service.js --port P --tools N [--host H]
 * [--service-id ID]`. `--port 0` picks a free port. `N` also comes from
 * `BENCH_TOOLS` (default 50). Prints `listening <port>` once accepting.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';
import { generateManifest } from './catalog.js';

// Tool bodies are tiny ({name, version, arguments}); the limit only guards
// against a runaway client holding memory.
const MAX_BODY_BYTES = 1024 * 1024;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PORT ?? '0' },
    host: { type: 'string', default: '127.0.0.1' },
    tools: { type: 'string', default: process.env.BENCH_TOOLS ?? '50' },
    'service-id': { type: 'string', default: 'echo' },
  },
});

const port = Number(values.port);
const toolCount = Number(values.tools);
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port: ${values.port}`);
if (!Number.isInteger(toolCount) || toolCount < 0) throw new Error(`--tools: not a count: ${values.tools}`);

// Everything answered is precomputed: the hot path only writes bytes.
const manifestBody = Buffer.from(JSON.stringify(generateManifest(toolCount, { serviceId: values['service-id'] })));
// A strong ETag lets the gateway's refresh cost a 304 (SPEC §7 If-None-Match).
const etag = `"${createHash('sha256').update(manifestBody).digest('base64url').slice(0, 27)}"`;
const okBody = Buffer.from('{"content":[{"type":"text","text":"ok"}]}');
const tooLargeBody = Buffer.from('{"error":"request body too large"}');
const notFoundBody = Buffer.from('{"error":"not found"}');

const app = uWS.App();

app.get('/manifest', (res, req) => {
  // Synchronous answer: uWS has the response corked in this top-level call.
  if (req.getHeader('if-none-match') === etag) {
    res.writeStatus('304 Not Modified').writeHeader('etag', etag).end();
    return;
  }
  res.writeStatus('200 OK').writeHeader('content-type', 'application/json').writeHeader('etag', etag).end(manifestBody);
});

app.post('/tools/*', (res) => {
  let done = false;
  let size = 0;
  // Required by uWS for any asynchronous answer; after an abort `res` is dead.
  res.onAborted(() => {
    done = true;
  });
  res.onData((chunk, isLast) => {
    if (done) return;
    // The body is read to the end (and counted) but not parsed: the contract
    // says the service answers any tool with a fixed result.
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      done = true;
      res.cork(() => {
        res.writeStatus('413 Payload Too Large').writeHeader('content-type', 'application/json').end(tooLargeBody, true);
      });
      return;
    }
    if (isLast) {
      done = true;
      // onData runs outside the route handler, so cork explicitly to send
      // status, headers and body in one syscall.
      res.cork(() => {
        res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(okBody);
      });
    }
  });
});

app.any('/*', (res) => {
  res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(notFoundBody);
});

app.listen(values.host, port, (listenSocket) => {
  if (listenSocket === false) {
    console.error(`cannot listen on ${values.host}:${port}`);
    process.exit(1);
  }
  console.log(`listening ${uWS.us_socket_local_port(listenSocket)}`);
  const stop = (): void => {
    uWS.us_listen_socket_close(listenSocket);
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
});
