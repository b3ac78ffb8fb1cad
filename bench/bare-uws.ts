/**
 * Physical-limit baseline: the least work any uWS-based MCP server can do for
 * a `tools/list` — read the request body, write a constant answer of the same
 * size as a real 50-tool `tools/list` response. The gateway's rows are read as
 * ratios against this server measured in the same run.
 *
 * Usage: `node dist/bench/bare-uws.js --port P [--host H] [--tools N]`
 * (`--port 0` picks a free port). Prints `listening <port>` once accepting.
 */
import { parseArgs } from 'node:util';
import { uWS } from './uws.js';
import { generateManifest, toolsListResult } from './catalog.js';
import { listenUntilSignal } from './uws-listen.js';

// Same order of magnitude as the gateway's default `server.maxBodyBytes`.
const MAX_BODY_BYTES = 1024 * 1024;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env['PORT'] ?? '0' },
    host: { type: 'string', default: '127.0.0.1' },
    tools: { type: 'string', default: '50' },
  },
});

const port = Number(values.port);
const toolCount = Number(values.tools);
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port: ${values.port}`);
if (!Number.isInteger(toolCount) || toolCount < 0) throw new Error(`--tools: not a count: ${values.tools}`);

// The exact bytes a correct gateway would send for this catalog (id 1).
const answer = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result: toolsListResult(generateManifest(toolCount, { serviceId: 'bare' })) }));
const tooLarge = Buffer.from('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body too large"}}');
const notFound = Buffer.from('{"error":"not found"}');

const app = uWS.App();

app.post('/mcp/*', (res) => {
  let done = false;
  const chunks: Buffer[] = [];
  let size = 0;
  res.onAborted(() => {
    done = true;
  });
  res.onData((chunk, isLast) => {
    if (done) return;
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      done = true;
      res.cork(() => {
        res.writeStatus('413 Payload Too Large').writeHeader('content-type', 'application/json').end(tooLarge, true);
      });
      return;
    }
    // uWS neuters `chunk` after the callback returns, so any real server must
    // copy it; the baseline pays that copy too to stay an honest lower bound.
    chunks.push(Buffer.from(chunk.slice(0)));
    if (isLast) {
      done = true;
      // The collected body is intentionally unused: parsing is the gateway's
      // work, which this baseline exists to make visible.
      res.cork(() => {
        res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(answer);
      });
    }
  });
});

app.any('/*', (res) => {
  res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(notFound);
});

listenUntilSignal(app, values.host, port);
