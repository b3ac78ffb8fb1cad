/**
 * The refresh worker's one HTTP operation: a bounded GET of a JSON document
 * (the Portal registry, a Tool Service manifest) on `node:http` /
 * `node:https` — not undici, whose WASM parser and bundle add 13–22 MB of
 * RSS to the thread that uses it against ~4 MB for Node's built-in client
 * (ADR-0020; the refresh worker was the only thread that made undici
 * requests). One deadline covers connect, head and body; the body is read
 * only for a 200 and only up to `maxBytes`; a 304 keeps its socket, any
 * other status with a body is discarded unread (the socket is closed rather
 * than drained).
 */
import { Buffer } from 'node:buffer';
import http from 'node:http';
import https from 'node:https';
import type { RefreshUpstreamAuth } from './upstream-auth.js';

/** Why a GET produced no answer; `detail` says more (a socket error's code, the limit, the deadline). */
export type GetFailureReason = 'timeout' | 'too-large' | 'network';

/** A GET that produced no answer (the callers word the message: it names their config key). */
export class GetFailure extends Error {
  constructor(
    readonly reason: GetFailureReason,
    readonly detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = 'GetFailure';
  }
}

/** An answer: its status, its `ETag`, and for a 200 its body as text ('' otherwise). */
export interface GetAnswer {
  status: number;
  etag: string | null;
  text: string;
}

/** What one GET needs. */
export interface GetOptions {
  headers: Readonly<Record<string, string>>;
  /** Connect + head + body, all of it. */
  timeoutMs: number;
  /** Bytes of a 200 body read at most; past it the request fails (`too-large`) and the socket is closed. */
  maxBytes: number;
  /** An `https` agent with an origin's TLS material (auth.upstream.profiles); undefined: the default agent of the URL's scheme. */
  agent?: https.Agent | undefined;
}

/**
 * Keep-alive for the sockets of one refresh cycle (and of the next, at short
 * intervals). Node's agent drops an idle socket a second before the server's
 * `Keep-Alive: timeout` hint expires; without a hint it would keep it until
 * the server closes it — possibly just as the next GET is written. Idle
 * sockets therefore close after 4 s (undici's default, which these GETs used
 * before, ADR-0020). For an active request the socket timeout only emits
 * 'timeout': the request's own deadline governs it.
 */
export const KEEP_ALIVE_AGENT_OPTIONS = { keepAlive: true, timeout: 4_000 } as const;
const HTTP_AGENT = new http.Agent(KEEP_ALIVE_AGENT_OPTIONS);
const HTTPS_AGENT = new https.Agent(KEEP_ALIVE_AGENT_OPTIONS);

/** GETs `url` (http: or https:); resolves with the answer or rejects with a {@link GetFailure}. */
export function httpGet(url: string, options: GetOptions): Promise<GetAnswer> {
  return new Promise((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      reject(new GetFailure('network', `not a URL: ${url}`));
      return;
    }
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') {
      reject(new GetFailure('network', `unsupported scheme ${target.protocol}`));
      return;
    }
    let settled = false;
    const fail = (failure: GetFailure): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      // A half-read answer leaves its socket unusable for the next request: close it.
      req.destroy();
      reject(failure);
    };
    const agent = secure ? (options.agent ?? HTTPS_AGENT) : HTTP_AGENT;
    const req = (secure ? https : http).request(target, { method: 'GET', headers: options.headers, agent }, (res) => {
      const status = res.statusCode ?? 0;
      const header = res.headers['etag'];
      const etag = typeof header === 'string' ? header : null;
      if (status !== 200) {
        settled = true;
        clearTimeout(deadline);
        if (status === 304 || res.headers['content-length'] === '0') {
          // No body (an unchanged document, the steady state of every poll): the socket stays for the next GET.
          res.resume();
        } else {
          // Nothing of another status's body is needed; closing costs less than reading an arbitrary amount of it.
          req.destroy();
        }
        resolve({ status, etag, text: '' });
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) {
          fail(new GetFailure('too-large', `more than ${options.maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ status, etag, text: Buffer.concat(chunks, size).toString('utf8') });
      });
      // The connection closed before the body's end (a reset, or fewer bytes than Content-Length announced).
      res.on('close', () => {
        if (!res.complete) fail(new GetFailure('network', 'connection closed before the answer was complete'));
      });
      res.on('error', (err: Error & { code?: string }) => fail(new GetFailure('network', err.code ?? err.message)));
    });
    req.on('error', (err: Error & { code?: string }) => fail(new GetFailure('network', err.code ?? err.message)));
    const deadline = setTimeout(() => fail(new GetFailure('timeout', `no complete answer within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.end();
  });
}

/**
 * The refresh worker's GET of a JSON document (the Portal registry, a
 * manifest): `Accept: application/json`, `If-None-Match` when an ETag is
 * known, and the origin's credential profile (auth.upstream.profiles:
 * headers, CA, client certificate). Rejects like {@link httpGet}, or with
 * whatever reading the profile threw (a credential file that cannot be read).
 */
export async function conditionalGet(url: string, etag: string | null, options: { timeoutMs: number; maxBytes: number; upstreamAuth?: RefreshUpstreamAuth | undefined }): Promise<GetAnswer> {
  const auth = options.upstreamAuth?.forUrl(url);
  return httpGet(url, {
    headers: { ...auth?.headers, accept: 'application/json', ...(etag !== null ? { 'if-none-match': etag } : {}) },
    timeoutMs: options.timeoutMs,
    maxBytes: options.maxBytes,
    agent: auth?.agent,
  });
}

/**
 * The words for a failed GET in a PORTAL_/MANIFEST_UNREACHABLE message:
 * `tooLarge` names the limit's config key; an error from before the request
 * (a credential file that cannot be read) by its code or message.
 */
export function failureText(err: unknown, timeoutMs: number, tooLarge: string): string {
  if (err instanceof GetFailure) {
    if (err.reason === 'timeout') return `timed out after ${timeoutMs} ms`;
    return err.reason === 'too-large' ? tooLarge : err.detail;
  }
  const e = err as Error & { code?: string };
  return e.code ?? e.message;
}
