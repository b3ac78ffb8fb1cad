/**
 * Header rules of the MCP endpoint that are decided before the body is read
 * or parsed (docs/contracts/mcp-endpoint.md): Origin/Host (DNS-rebinding
 * protection), Content-Type, Accept. (`MCP-Protocol-Version` selects the
 * protocol era: modern.ts.)
 */
import type { GatewayConfig } from '../config/schema.js';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Compiled header policy; built once per acceptor thread from the config. */
export interface HttpPolicy {
  readonly maxBodyBytes: number;
  readonly retryAfterSeconds: number;
  /** Put refusal details (internal addresses, upstream errors) into client-facing messages; development only. */
  readonly exposeErrorDetails: boolean;
  originAllowed(origin: string): boolean;
  hostAllowed(host: string): boolean;
}

/**
 * `decide` with its last answer kept: a header a client repeats on every
 * request (Host, Accept) is parsed once per change. Per thread (one policy,
 * one module instance per isolate); `decide` must be a pure function.
 */
function lastValueKept<T>(decide: (value: string) => T): (value: string) => T {
  let lastValue: string | undefined;
  let lastAnswer: T | undefined;
  return (value) => {
    if (value !== lastValue) {
      lastAnswer = decide(value);
      lastValue = value;
    }
    return lastAnswer as T;
  };
}

/** True when `host` names a loopback interface (the bind address or a Host header's name). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** `host[:port]` → lowercase hostname without port, keeping IPv6 brackets. */
function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

/**
 * Builds the policy. With the lists unset and a loopback bind address, exactly
 * localhost / 127.0.0.1 / [::1] on any port are allowed for both headers; with
 * the lists unset on any other bind address, Host is not checked and any
 * Origin is refused (server-to-server clients send none).
 */
export function buildHttpPolicy(server: GatewayConfig['server']): HttpPolicy {
  const loopbackBind = isLoopbackHost(server.host);
  const origins = server.allowedOrigins?.map((o) => o.toLowerCase().replace(/\/$/, ''));
  const hosts = server.allowedHosts?.map((h) => h.toLowerCase());
  const originSet = new Set(origins ?? []);
  const hostSet = new Set(hosts ?? []);

  const originAllowed = (origin: string): boolean => {
    const o = origin.toLowerCase();
    if (origins) return originSet.has(o);
    if (!loopbackBind) return false;
    try {
      const u = new URL(o);
      return (u.protocol === 'http:' || u.protocol === 'https:') && isLoopbackHost(u.hostname);
    } catch {
      return false;
    }
  };
  // A client sends the same Host on every request: no lowercasing, slicing or regex per request.
  const hostAllowed = lastValueKept((host: string): boolean => {
    if (hosts) return hostSet.has(host.toLowerCase()) || hostSet.has(hostnameOf(host));
    if (!loopbackBind) return true;
    return isLoopbackHost(hostnameOf(host));
  });
  return { maxBodyBytes: server.maxBodyBytes, retryAfterSeconds: server.retryAfterSeconds, exposeErrorDetails: server.exposeErrorDetails, originAllowed, hostAllowed };
}

/** `application/json` or `application/json-rpc`, parameters (charset) allowed. */
export function isJsonContentType(contentType: string): boolean {
  if (contentType === 'application/json') return true; // what nearly every client sends
  const semi = contentType.indexOf(';');
  const type = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json' || type === 'application/json-rpc';
}

/** What the client's Accept header lets the gateway answer with. */
export interface AcceptDecision {
  readonly json: boolean;
  readonly sse: boolean;
}

/** The four decisions, shared (index: json + 2 × sse): a parse allocates nothing that outlives it. */
const ACCEPT_DECISIONS: readonly AcceptDecision[] = [
  { json: false, sse: false },
  { json: true, sse: false },
  { json: false, sse: true },
  { json: true, sse: true },
].map((d) => Object.freeze(d));

/**
 * Accept rules: a missing header, `*\/*`, `application/*` or `application/json`
 * allow JSON; `text/event-stream` additionally allows SSE.
 */
export const parseAccept = lastValueKept((accept: string): AcceptDecision => {
  if (accept === '') return ACCEPT_DECISIONS[1] as AcceptDecision;
  let json = false;
  let sse = false;
  for (const part of accept.split(',')) {
    const semi = part.indexOf(';');
    const type = (semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase();
    if (type === 'application/json' || type === '*/*' || type === 'application/*') json = true;
    else if (type === 'text/event-stream') sse = true;
  }
  return ACCEPT_DECISIONS[(json ? 1 : 0) + (sse ? 2 : 0)] as AcceptDecision;
});
