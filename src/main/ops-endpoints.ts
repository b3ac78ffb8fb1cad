/**
 * The operating endpoints: `GET /health/live`, `GET /health/ready` and
 * `GET /metrics`. Readiness and metrics come from a {@link HealthSource}
 * (directly on the main thread, by message on acceptor threads).
 */
import type { HttpResponse } from 'uWebSockets.js';
import type { Logger } from '../shared/log.js';
import type { Reply } from '../shared/protocol/reply.js';
import { writeReply } from './reply-writer.js';

/** Where readiness and process-wide metrics come from. */
export interface HealthSource {
  readiness(): { status: number; body: string };
  metrics(): Promise<{ contentType: string; text: string }>;
}

const LIVE: Reply = { status: 200, contentType: 'application/json', body: '{"status":"live"}' };
const NOT_FOUND: Reply = { status: 404, contentType: 'application/json', body: '{"error":"not found"}' };

/**
 * Answers one operating request on the traffic port (no admin listener);
 * false when `method path` is not an operating endpoint. `close`: the
 * gateway is draining, the connection closes after the answer.
 */
export function serveOps(res: HttpResponse, method: string, path: string, health: HealthSource, log: Logger, close = false): boolean {
  if (method !== 'get') return false;
  if (path === '/health/live') writeReply(res, LIVE, close);
  else if (path === '/health/ready') {
    const r = health.readiness();
    writeReply(res, { status: r.status, contentType: 'application/json', body: r.body }, close);
  } else if (path === '/metrics') serveMetrics(res, health, log, close);
  else return false;
  return true;
}

/** 404 for anything no endpoint serves. */
export function notFound(res: HttpResponse, close = false): void {
  writeReply(res, NOT_FOUND, close);
}

function serveMetrics(res: HttpResponse, health: HealthSource, log: Logger, close: boolean): void {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  health.metrics().then(
    (m) => {
      if (!aborted) res.cork(() => writeReply(res, { status: 200, contentType: m.contentType, body: m.text }, close));
    },
    (err: unknown) => {
      log.error({ err }, 'metrics collection failed');
      if (!aborted) res.cork(() => writeReply(res, { status: 500, contentType: 'text/plain', body: 'metrics unavailable\n' }, close));
    },
  );
}
