/**
 * The admin listener (`server.admin.port`): `GET /health/live`,
 * `GET /health/ready` and `GET /metrics` on a port of their own, so probes
 * and scrapes never share the traffic port (which then serves only
 * `/mcp/*`) and readiness details (manifest URLs, upstream errors) are not
 * served to MCP clients.
 *
 * Plain `node:http` on the main thread, not a second uWS app: its load is a
 * few probes and one scrape per interval, where uWS's per-request speed buys
 * nothing, while `node:http` reports a failed listen with its errno (uWS only
 * says `false`) and never sets SO_REUSEPORT, and its objects, timers and
 * parser live outside the traffic app. It shares the main thread with
 * acceptor 0; a probe costs that thread tens of microseconds, a scrape the
 * metrics aggregation it costs on the traffic port too
 * (docs/decisions/0013-drain-admin-observability.md has the measurement).
 *
 * It stays open for the whole drain — readiness says 503 `draining`,
 * liveness 200, metrics keep being scraped — and closes last.
 */
import { Buffer } from 'node:buffer';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from '../shared/log.js';
import type { HealthSource } from './ops-endpoints.js';
import { assertPortAvailable, listenError, type ListenTarget } from './port-check.js';

/** A running admin listener. */
export interface AdminListener {
  /** The bound port (the kernel's choice for port 0). */
  readonly port: number;
  /** Stops listening and closes every connection (keep-alive ones included). */
  close(): Promise<void>;
}

/** Bounds a slow or idle probe client: the admin port must never collect connections. */
const HEADERS_TIMEOUT_MS = 10_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

const LIVE = '{"status":"live"}';
const NOT_FOUND = '{"error":"not found"}';

/**
 * Checks the port (a port in use is `LISTEN_FAILED` naming
 * `server.admin.port`), then listens on `host:port`.
 */
export async function startAdminListener(options: { host: string; port: number; health: HealthSource; log: Logger }): Promise<AdminListener> {
  const target: ListenTarget = { host: options.host, port: options.port, hostKey: 'server.admin.host', portKey: 'server.admin.port' };
  await assertPortAvailable(target);
  const server = createServer({ headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: HEADERS_TIMEOUT_MS }, (req, res) => serve(req, res, options.health, options.log));
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(target, err)));
    server.listen({ host: options.host, port: options.port, exclusive: true }, () => resolve());
  });
  server.on('error', (err) => options.log.error({ err }, 'admin listener failed'));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return { port, close: () => closeServer(server) };
}

function serve(req: IncomingMessage, res: ServerResponse, health: HealthSource, log: Logger): void {
  const path = (req.url ?? '').split('?', 1)[0];
  if (req.method !== 'GET') {
    send(res, 404, 'application/json', NOT_FOUND);
  } else if (path === '/health/live') {
    send(res, 200, 'application/json', LIVE);
  } else if (path === '/health/ready') {
    const r = health.readiness();
    send(res, r.status, 'application/json', r.body);
  } else if (path === '/metrics') {
    health.metrics().then(
      (m) => send(res, 200, m.contentType, m.text),
      (err: unknown) => {
        log.error({ err }, 'metrics collection failed');
        send(res, 500, 'text/plain', 'metrics unavailable\n');
      },
    );
  } else {
    send(res, 404, 'application/json', NOT_FOUND);
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
