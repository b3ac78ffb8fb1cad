import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import { bodyTooLargeReply, gateMcpRequest, refusalReply, type GateResult, type RequestHead, type RouteEntry } from '../../../../src/shared/protocol/gate.js';
import { buildHttpPolicy } from '../../../../src/shared/protocol/http-policy.js';
import { replyText, type Reply } from '../../../../src/shared/protocol/reply.js';

type Snap = { name: string };

const policy = buildHttpPolicy({ ...DEFAULTS.server, host: '127.0.0.1', maxBodyBytes: 1024 * 1024, retryAfterSeconds: 7 });

const directory = new Map<string, RouteEntry<Snap>>([
  ['core', { shard: 1, snapshot: { name: 'core-snapshot' }, unavailable: null }],
  ['loading', { shard: 0, snapshot: null, unavailable: null }],
  ['refused', { shard: 0, snapshot: null, unavailable: { code: 'TOOL_NAME_CONFLICT', message: 'tool "search" is offered by both "a" and "b"' } }],
]);
const lookedUp: string[] = [];
const lookup = (key: string): RouteEntry<Snap> | undefined => {
  lookedUp.push(key);
  return directory.get(key);
};

const head = (over: Partial<RequestHead> = {}): RequestHead => ({
  method: 'post',
  path: '/mcp/core',
  host: '127.0.0.1:8080',
  origin: '',
  contentType: 'application/json',
  accept: 'application/json',
  protocolVersion: '',
  contentLength: 42,
  ...over,
});

interface Refusal {
  status: number;
  headers: ReadonlyArray<readonly [string, string]> | undefined;
  label: string;
  message: string;
  text: string;
}

/** Asserts the gate refused with a JSON-RPC transport error body (code -32000, id null) and returns it. */
function refusal(result: GateResult<Snap>): Refusal {
  expect(result.kind).toBe('reply');
  const { reply, label } = result as { reply: Reply; label: string };
  expect(reply.contentType).toBe('application/json');
  const text = replyText(reply);
  const body = JSON.parse(text) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
  expect(body.jsonrpc).toBe('2.0');
  expect(body.id).toBeNull();
  expect(body.error.code).toBe(-32000);
  return { status: reply.status, headers: reply.headers, label, message: body.error.message, text };
}

const gate = (over: Partial<RequestHead> = {}) => gateMcpRequest(head(over), policy, lookup);

describe('gateMcpRequest', () => {
  it('accepts a well-formed POST and hands over the route and its one snapshot reference', () => {
    const result = gate();
    expect(result).toEqual({ kind: 'accept', routeKey: 'core', route: directory.get('core'), snapshot: { name: 'core-snapshot' }, wantsSse: false, era: 'legacy' });
    if (result.kind === 'accept') expect(result.snapshot).toBe(directory.get('core')?.snapshot);
  });

  it('accepts every Accept form Agent Builder and SDK clients send, flagging SSE', () => {
    for (const accept of ['', '*/*', 'application/json']) {
      expect(gate({ accept })).toMatchObject({ kind: 'accept', wantsSse: false });
    }
    expect(gate({ accept: 'application/json, text/event-stream' })).toMatchObject({ kind: 'accept', wantsSse: true });
  });

  it('refuses a foreign Origin with 403 before looking at the route', () => {
    lookedUp.length = 0;
    const r = refusal(gate({ origin: 'https://evil.example.com', path: '/mcp/does-not-exist' }));
    expect(r.status).toBe(403);
    expect(r.label).toBe('forbidden');
    expect(r.message).toBe('Forbidden: Origin is not allowed');
    expect(r.text).not.toContain('does-not-exist');
    expect(lookedUp).toEqual([]);
  });

  it('refuses a foreign Host with 403', () => {
    const r = refusal(gate({ host: 'attacker.example.com' }));
    expect(r.status).toBe(403);
    expect(r.message).toBe('Forbidden: Host is not allowed');
  });

  it('accepts a loopback Origin and skips absent Origin/Host headers', () => {
    expect(gate({ origin: 'http://localhost:5173' }).kind).toBe('accept');
    expect(gate({ host: '' }).kind).toBe('accept');
  });

  it.each(['/mcp', '/mcp/'])('answers 400 "route key is required" for %s', (path) => {
    const r = refusal(gate({ path }));
    expect(r.status).toBe(400);
    expect(r.label).toBe('no_route_key');
    expect(r.message).toMatch(/^route key is required/);
  });

  it('answers 400 for a route key outside the grammar and never echoes it', () => {
    for (const key of ['<img src=x onerror=alert(1)>', 'Core', 'core_x', '-core', 'core-', 'a'.repeat(64), '%3Cb%3E', 'caf\u00e9', 'x\u0000y']) {
      const r = refusal(gate({ path: `/mcp/${key}` }));
      expect(r.status, key).toBe(400);
      expect(r.label).toBe('bad_route_key');
      expect(r.text).not.toContain(key);
      expect(r.message).toBe('invalid route key: must be a lowercase DNS label (^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$)');
    }
  });

  it('answers 404 naming an unknown route that follows the grammar', () => {
    const r = refusal(gate({ path: '/mcp/' + 'a'.repeat(63) }));
    expect(r.status).toBe(404);
    expect(r.label).toBe('unknown_route');
    expect(r.message).toBe(`Unknown route "${'a'.repeat(63)}"`);
  });

  it('answers 400 for extra path segments (not a route key, SPEC §3) without echoing them', () => {
    for (const path of ['/mcp/core/tools', '/mcp/core/', '/mcp//core', '/mcp/core/<b>']) {
      const r = refusal(gate({ path }));
      expect(r.status, path).toBe(400);
      expect(r.label).toBe('bad_route_key');
      expect(r.message).not.toContain('core');
    }
  });

  it('answers 404 for an unknown route before judging the method', () => {
    expect(refusal(gate({ method: 'get', path: '/mcp/nope' })).status).toBe(404);
  });

  it.each(['get', 'delete', 'put'])('answers 405 with allow: POST to %s', (method) => {
    const r = refusal(gate({ method }));
    expect(r.status).toBe(405);
    expect(r.headers).toEqual([['allow', 'POST']]);
    expect(r.message).toContain(method.toUpperCase());
  });

  it('answers 415 for a body that is not declared JSON', () => {
    for (const contentType of ['', 'text/plain', 'application/x-www-form-urlencoded']) {
      const r = refusal(gate({ contentType }));
      expect(r.status, contentType).toBe(415);
      expect(r.message).toBe('Unsupported Media Type: Content-Type must be application/json');
    }
    expect(gate({ contentType: 'application/json; charset=utf-8' }).kind).toBe('accept');
    expect(gate({ contentType: 'application/json-rpc' }).kind).toBe('accept');
  });

  it('answers 406 when Accept does not allow JSON', () => {
    for (const accept of ['text/html', 'text/event-stream']) {
      const r = refusal(gate({ accept }));
      expect(r.status, accept).toBe(406);
      expect(r.message).toBe('Not Acceptable: Accept must allow application/json');
    }
  });

  it('selects the era from MCP-Protocol-Version: absent or legacy → legacy, 2026-07-28 → modern (OWS ignored)', () => {
    for (const protocolVersion of ['', '2025-11-25', '2025-06-18', '2025-03-26', ' 2025-06-18 ']) expect(gate({ protocolVersion }), protocolVersion).toMatchObject({ kind: 'accept', era: 'legacy' });
    for (const protocolVersion of ['2026-07-28', '\t2026-07-28 ']) expect(gate({ protocolVersion }), protocolVersion).toMatchObject({ kind: 'accept', era: 'modern' });
  });

  it('refuses an unsupported MCP-Protocol-Version with -32022 once the body is read, listing the supported versions', () => {
    for (const protocolVersion of ['2024-11-05', 'v999.0.0', '2026-07-29']) {
      const result = gate({ protocolVersion });
      expect(result.kind, protocolVersion).toBe('refuse-after-body');
      if (result.kind !== 'refuse-after-body') continue;
      const body = JSON.parse(replyText(refusalReply(result.refusal, 7))) as { id: unknown; error: { code: number; data: unknown } };
      expect(result.refusal.status).toBe(400);
      expect(result.refusal.label).toBe('bad_protocol_version');
      expect(body.id).toBe(7);
      expect(body.error.code).toBe(-32022);
      expect(body.error.data).toEqual({ supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: protocolVersion });
    }
  });

  it('a 2026-07-28 request is refused once its body is read (to echo its id), except non-POST and a declared oversize', () => {
    const modern = { protocolVersion: '2026-07-28' };
    const later = [
      { path: '/mcp' },
      { path: '/mcp/Bad' },
      { path: '/mcp/nope' },
      { contentType: 'text/plain' },
      { accept: 'text/html' },
      { path: '/mcp/loading' },
      { origin: 'https://evil.example.com' },
      { host: 'evil.example.com' },
    ];
    for (const over of later) {
      expect(gate({ ...modern, ...over }).kind, JSON.stringify(over)).toBe('refuse-after-body');
    }
    const forbidden = gate({ ...modern, origin: 'https://evil.example.com', path: '/mcp/nope' });
    expect(forbidden.kind === 'refuse-after-body' && [forbidden.refusal.status, forbidden.refusal.label]).toEqual([403, 'forbidden']);
    for (const over of [{ origin: 'https://evil.example.com', method: 'get' }, { method: 'get' }, { contentLength: 1024 * 1024 + 1 }, { path: '/mcp/nope', method: 'delete' }]) {
      expect(gate({ ...modern, ...over }).kind, JSON.stringify(over)).toBe('reply');
    }
    // Legacy requests keep today's immediate, id-less refusals.
    expect(gate({ path: '/mcp/nope' }).kind).toBe('reply');
    expect(gate({ origin: 'https://evil.example.com' }).kind).toBe('reply');
  });

  it('answers 413 by Content-Length only above the limit', () => {
    expect(gate({ contentLength: 1024 * 1024 }).kind).toBe('accept');
    expect(gate({ contentLength: -1 }).kind).toBe('accept');
    const r = refusal(gate({ contentLength: 1024 * 1024 + 1 }));
    expect(r.status).toBe(413);
    expect(r.label).toBe('too_large');
    expect(r.message).toBe('Content Too Large: the body limit is 1048576 bytes');
  });

  it('builds the streaming 413 the same way', () => {
    const reply = bodyTooLargeReply(policy);
    expect(reply.status).toBe(413);
    expect(JSON.parse(replyText(reply))).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Content Too Large: the body limit is 1048576 bytes' },
    });
  });

  it('answers 503 with Retry-After for a route without a usable snapshot, with a reason code and no internal detail', () => {
    const loading = refusal(gate({ path: '/mcp/loading' }));
    expect(loading.status).toBe(503);
    expect(loading.label).toBe('unavailable');
    expect(loading.headers).toEqual([['retry-after', '7']]);
    expect(loading.message).toBe('route "loading" has no usable catalog: its catalog is still loading');
    expect(JSON.parse(loading.text).error.data).toEqual({ reason: 'CATALOG_PENDING' });
    const refused = refusal(gate({ path: '/mcp/refused' }));
    expect(refused.status).toBe(503);
    expect(refused.headers).toEqual([['retry-after', '7']]);
    expect(refused.message).toBe('route "refused" has no usable catalog: its catalog was refused or could not be loaded (TOOL_NAME_CONFLICT)');
    expect(JSON.parse(refused.text).error.data).toEqual({ reason: 'TOOL_NAME_CONFLICT' });
  });

  it('puts the refusal detail into the 503 message only with server.exposeErrorDetails', () => {
    const devPolicy = buildHttpPolicy({ ...DEFAULTS.server, host: '127.0.0.1', retryAfterSeconds: 7, exposeErrorDetails: true });
    const result = gateMcpRequest(head({ path: '/mcp/refused' }), devPolicy, lookup);
    expect(result.kind).toBe('reply');
    const text = result.kind === 'reply' ? replyText(result.reply) : '';
    expect(JSON.parse(text).error.message).toBe(
      'route "refused" has no usable catalog: its catalog was refused or could not be loaded (TOOL_NAME_CONFLICT): tool "search" is offered by both "a" and "b"',
    );
  });

  it('checks the request before reporting a missing snapshot', () => {
    expect(refusal(gate({ path: '/mcp/loading', contentType: 'text/plain' })).status).toBe(415);
  });
});
