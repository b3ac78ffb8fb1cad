/**
 * Minimal, fast Tool Service for benchmarks (SPEC §7 wire contract).
 *
 * `GET /manifest` serves `generateManifest(N)`; `POST /tools/*` reads the body
 * and answers a constant MCP CallToolResult. It is built on uWebSockets.js
 * and does no parsing so that, in a `tools/call` bench through the gateway,
 * nearly all measured cost is the gateway's, not the downstream's.
 *
 * Usage: `node dist/bench/echo-tool-service.js --port P --tools N [--host H]
 * [--service-id ID] [--churn]`. `--port 0` picks a free port. `N` also comes
 * from `BENCH_TOOLS` (default 50). Prints `listening <port>` once accepting.
 *
 * `GET /manifest?tools=K` serves a K-tool manifest instead of N (0–500), so
 * one service can stand behind routes of different sizes; other query
 * parameters are ignored (a bench gives each route its own `manifestPath`,
 * e.g. `/manifest?tools=5&route=r07`, so the gateway fetches it per route).
 *
 * `--churn` (refresh-under-load bench): every manifest answer embeds a new
 * revision counter in every tool description, so each refresh of the gateway
 * sees changed catalogs and must rebuild and swap them. `POST /churn/pause`
 * freezes the counter (manifests stable, byte for byte, and 304 to a matching
 * If-None-Match), `POST /churn/resume`
 * restarts it, `GET /churn/stats` answers `{churning, revision, manifests}`.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { uWS } from './uws.js';
import { generateManifest } from './catalog.js';
import { listenUntilSignal } from './uws-listen.js';

// Tool bodies are tiny ({name, version, arguments}); the limit only guards
// against a runaway client holding memory.
const MAX_BODY_BYTES = 1024 * 1024;

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env['PORT'] ?? '0' },
    host: { type: 'string', default: '127.0.0.1' },
    tools: { type: 'string', default: process.env['BENCH_TOOLS'] ?? '50' },
    'service-id': { type: 'string', default: 'echo' },
    churn: { type: 'boolean', default: false },
  },
});

const port = Number(values.port);
const toolCount = Number(values.tools);
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port: ${values.port}`);
if (!Number.isInteger(toolCount) || toolCount < 0) throw new Error(`--tools: not a count: ${values.tools}`);

// Everything answered is precomputed: the hot path only writes bytes.
const MAX_QUERY_TOOLS = 500;
const REVISION_MARK = '\u0000REV\u0000';

interface ManifestVariant {
  /** Static body and its strong ETag. */
  body: Buffer;
  etag: string;
  /** Churn template: the JSON split where the revision counter goes. */
  parts: string[] | null;
}

const variants = new Map<number, ManifestVariant>();

function variant(tools: number): ManifestVariant {
  let v = variants.get(tools);
  if (v === undefined) {
    const manifest = generateManifest(tools, { serviceId: values['service-id'] });
    const body = Buffer.from(JSON.stringify(manifest));
    // A strong ETag lets the gateway's refresh cost a 304 (SPEC §7 If-None-Match).
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    let parts: string[] | null = null;
    if (values.churn) {
      for (const t of manifest.tools) t.description = `${t.description} Catalog revision ${REVISION_MARK}.`;
      parts = JSON.stringify(manifest).split(JSON.stringify(REVISION_MARK).slice(1, -1));
    }
    v = { body, etag, parts };
    variants.set(tools, v);
  }
  return v;
}
variant(toolCount);

let churning = values.churn;
let revision = 0;
let manifestsServed = 0;

const okBody = Buffer.from('{"content":[{"type":"text","text":"ok"}]}');
const tooLargeBody = Buffer.from('{"error":"request body too large"}');
const notFoundBody = Buffer.from('{"error":"not found"}');

const app = uWS.App();

app.get('/manifest', (res, req) => {
  manifestsServed++;
  const q = req.getQuery('tools');
  const tools = q === undefined || q === '' ? toolCount : Number(q);
  if (!Number.isInteger(tools) || tools < 0 || tools > MAX_QUERY_TOOLS) {
    res.writeStatus('400 Bad Request').writeHeader('content-type', 'application/json').end(`{"error":"tools must be an integer 0-${MAX_QUERY_TOOLS}"}`);
    return;
  }
  const v = variant(tools);
  if (v.parts !== null) {
    // Churn: a new revision per answer while churning (never a 304), the
    // frozen one while paused (304 to a matching If-None-Match, like any
    // well-behaved Tool Service).
    if (churning) revision++;
    const etag = `"r${revision}-${tools}"`;
    if (!churning && req.getHeader('if-none-match') === etag) {
      res.writeStatus('304 Not Modified').writeHeader('etag', etag).end();
      return;
    }
    res
      .writeStatus('200 OK')
      .writeHeader('content-type', 'application/json')
      .writeHeader('etag', etag)
      .end(v.parts.join(String(revision)));
    return;
  }
  // Synchronous answer: uWS has the response corked in this top-level call.
  if (req.getHeader('if-none-match') === v.etag) {
    res.writeStatus('304 Not Modified').writeHeader('etag', v.etag).end();
    return;
  }
  res.writeStatus('200 OK').writeHeader('content-type', 'application/json').writeHeader('etag', v.etag).end(v.body);
});

if (values.churn) {
  const stats = (): string => JSON.stringify({ churning, revision, manifests: manifestsServed });
  app.post('/churn/pause', (res) => {
    churning = false;
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(stats());
  });
  app.post('/churn/resume', (res) => {
    churning = true;
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(stats());
  });
  app.get('/churn/stats', (res) => {
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(stats());
  });
}

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

listenUntilSignal(app, values.host, port);
