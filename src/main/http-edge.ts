/**
 * The acceptor's answers decided from the request line and head alone,
 * before any endpoint runs (ADR-0001 "Raw HTTP behaviours per build"):
 *
 * - a head that {@link RequestHeadCopy.read} refuses: 400, and the
 *   connection closes. Answered at the end of the read (read-end.ts), never
 *   from inside the handler: uWS keeps parsing the rest of the read after a
 *   handler returns, even after `end(body, true)`, so a smuggled second
 *   request (the tail of a body under two `Content-Length`s) would run. Held
 *   open instead, the refused request makes uWS close the connection itself
 *   when a further request follows in the same read — then no answer goes
 *   out, and nothing behind it ran;
 * - a method outside RFC 9110's registry of common methods (`FOO`,
 *   `PROPFIND`): 501 (RFC 9110 §9.1) — uWS 20.57 passes them to the app;
 *   20.30 closes the connection before any handler runs;
 * - `HEAD`: the status `GET` would get, never a body (RFC 9110 §9.3.2): uWS
 *   sends whatever `end(body)` is given, and its `endWithoutBody` aborts the
 *   process on 20.30, so the answer is an empty `end()` (Content-Length: 0).
 *   `/health/live`, `/health/ready` and `/metrics` (where this port serves
 *   them) answer their status; `/mcp/*` answers 405 (`Allow: POST`), as for
 *   `GET`; anything else 404.
 */
import { performance } from 'node:perf_hooks';
import type { HttpResponse } from 'uWebSockets.js';
import { JsonRpcErrorCode } from '../shared/errors.js';
import type { AcceptorMetrics } from '../shared/metrics.js';
import { errorResponseForIdText } from '../shared/protocol/jsonrpc.js';
import type { Reply } from '../shared/protocol/reply.js';
import type { HeadFault } from './head-guard.js';
import type { HealthSource } from './ops-endpoints.js';
import { ReadEndQueue } from './read-end.js';
import { writeReply } from './reply-writer.js';

/** Lowercase methods of RFC 9110 §9 and PATCH (RFC 5789); others are answered 501. */
export const KNOWN_METHODS: ReadonlySet<string> = new Set(['get', 'head', 'post', 'put', 'delete', 'connect', 'options', 'trace', 'patch']);

const NOT_IMPLEMENTED: Reply = {
  status: 501,
  contentType: 'application/json',
  body: errorResponseForIdText('null', JsonRpcErrorCode.TransportError, 'Not Implemented: unknown HTTP method'),
};

/** A refused head waiting for the end of its read. */
interface HeadRefusal {
  res: HttpResponse;
  fault: HeadFault;
  aborted: boolean;
  startedAt: number;
  /** A HEAD request: the 400 goes without its body. */
  head: boolean;
}

/** One acceptor thread's answers at the HTTP layer. */
export class HttpEdge {
  private readonly refusals = new ReadEndQueue<HeadRefusal>((r) => this.answerRefusal(r));

  constructor(private readonly metrics: AcceptorMetrics) {}

  /** A head {@link RequestHeadCopy.read} refused: 400 and close at the end of the read (see the file comment). */
  refuseHead(res: HttpResponse, fault: HeadFault, head: boolean): void {
    const refusal: HeadRefusal = { res, fault, aborted: false, startedAt: performance.now(), head };
    res.onAborted(() => {
      refusal.aborted = true;
    });
    this.refusals.push(refusal);
  }

  /** 501 for a method outside {@link KNOWN_METHODS}. */
  notImplemented(res: HttpResponse, close: boolean): void {
    writeReply(res, NOT_IMPLEMENTED, close);
    this.metrics.record('(none)', 'http', 'not_implemented', 0);
  }

  /** `HEAD`: the status `GET` would get, without a body. */
  head(res: HttpResponse, path: string, servesOps: boolean, health: HealthSource, close: boolean): void {
    let status = '404 Not Found';
    if (path === '/mcp' || path.startsWith('/mcp/')) {
      status = '405 Method Not Allowed';
      res.writeStatus(status).writeHeader('allow', 'POST');
      res.end(undefined, close);
      return;
    }
    if (servesOps && (path === '/health/live' || path === '/metrics')) status = '200 OK';
    else if (servesOps && path === '/health/ready') status = health.readiness().status === 200 ? '200 OK' : '503 Service Unavailable';
    res.writeStatus(status);
    res.end(undefined, close);
  }

  private answerRefusal(r: HeadRefusal): void {
    this.metrics.record('(none)', 'http', 'bad_header', (performance.now() - r.startedAt) / 1000);
    if (r.aborted) return; // uWS closed the connection: a further request followed in the same read
    if (r.head) {
      r.res.cork(() => r.res.writeStatus('400 Bad Request').end(undefined, true));
      return;
    }
    const reply: Reply = {
      status: 400,
      contentType: 'application/json',
      body: errorResponseForIdText('null', JsonRpcErrorCode.TransportError, `Bad Request: ${r.fault}`),
    };
    r.res.cork(() => writeReply(r.res, reply, true));
  }
}
