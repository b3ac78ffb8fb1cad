/**
 * Request smuggling at the HTTP edge (issue 11 #4; ADR-0001 "Raw HTTP
 * behaviours per build"): two `Content-Length` lines (equal or not), two
 * `Host` lines, `Transfer-Encoding` with `Content-Length`, DEL in a header
 * value. Each is refused — 400 and the connection closed, or (a smuggled
 * request following in the same read) closed at once — and nothing of it
 * reaches a Tool Service; the gateway keeps serving. Raw sockets: no client
 * library sends these.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { listToolNames } from '../../helpers/mcp.js';
import { rawExchange, type RawExchange } from '../../helpers/raw-http.js';

const CALL = JSON.stringify(rpc('tools/call', { name: 'echo', arguments: { text: 'front' } }, 'front'));
const HIDDEN_CALL = JSON.stringify(rpc('tools/call', { name: 'echo', arguments: { text: 'hidden' } }, 'hidden'));

/** A POST head for /mcp/core with `extra` header lines (each ending in CRLF). */
function postHead(port: number, extra: string): string {
  return `POST /mcp/core HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json\r\n${extra}\r\n`;
}

/** A hidden request: a complete tools/call, to be smuggled in a body. */
function hiddenRequest(port: number): string {
  return `${postHead(port, `content-length: ${HIDDEN_CALL.length}\r\n`)}${HIDDEN_CALL}`;
}

function expectRefusedAndClosed(x: RawExchange, what: string): void {
  // Either 400 and closed, or (a request followed in the same read) closed without an answer; never served.
  expect(x.closed, `${what}: connection closed`).toBe(true);
  expect(x.elapsedMs, `${what}: promptly`).toBeLessThan(2_000);
  expect(x.rest.length, `${what}: nothing malformed`).toBe(0);
  for (const r of x.responses) expect(r.status, what).toBe(400);
}

describe('request smuggling and header abuse are refused at the edge', () => {
  let svc: FixtureToolService;
  let gw: Gateway;
  beforeAll(async () => {
    svc = await startFixtureToolService();
    svc.setManifest(manifestFor([{ name: 'echo' }]));
    svc.setBehavior('/tools/echo', { kind: 'echo' });
    gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await svc?.close();
  });

  it('two equal Content-Length lines: 400 naming the fault, connection closed, the tool does not run', async () => {
    const before = svc.requests.length;
    const x = await rawExchange(gw.port, [postHead(gw.port, `content-length: ${CALL.length}\r\ncontent-length: ${CALL.length}\r\n`) + CALL]);
    expectRefusedAndClosed(x, 'two equal Content-Length');
    expect(x.responses).toHaveLength(1);
    expect((x.responses[0]?.json as { error: { message: string } } | undefined)?.error.message).toBe('Bad Request: duplicate Content-Length');
    expect(svc.requests.length).toBe(before);
    expect(await listToolNames(gw, 'core')).toEqual(['echo']);
  });

  it('two Content-Length lines hiding a second request in the body: neither request runs', async () => {
    const before = svc.requests.length;
    const hidden = hiddenRequest(gw.port);
    // The first line covers the visible body only; the second covers the hidden request too (RFC 9112 §6.3 refuses both).
    const head = postHead(gw.port, `content-length: ${CALL.length}\r\ncontent-length: ${CALL.length + hidden.length}\r\n`);
    const x = await rawExchange(gw.port, [head + CALL + hidden]);
    expectRefusedAndClosed(x, 'smuggled request');
    // Let a hidden call that slipped through reach the Tool Service before counting.
    await new Promise((r) => setTimeout(r, 200));
    expect(svc.requests.slice(before).map((r) => JSON.stringify(r.body))).toEqual([]);
  });

  it('the same, with the hidden request arriving in a later TCP segment', async () => {
    const before = svc.requests.length;
    const hidden = hiddenRequest(gw.port);
    const head = postHead(gw.port, `content-length: ${CALL.length}\r\ncontent-length: ${CALL.length + hidden.length}\r\n`);
    const x = await rawExchange(gw.port, [head + CALL, hidden], { gapMs: 50 });
    expectRefusedAndClosed(x, 'smuggled request, later segment');
    await new Promise((r) => setTimeout(r, 200));
    expect(svc.requests.length).toBe(before);
  });

  it('two Host lines (a foreign one second): 400 and closed', async () => {
    const x = await rawExchange(gw.port, [postHead(gw.port, `host: evil.example\r\ncontent-length: ${CALL.length}\r\n`) + CALL]);
    expectRefusedAndClosed(x, 'two Host');
    // uWS 20.57 refuses this itself (its own 400); the legacy build leaves it to the gateway.
    expect(x.responses).toHaveLength(1);
  });

  it('Transfer-Encoding with Content-Length stays refused (400 or closed without a status), nothing runs', async () => {
    const before = svc.requests.length;
    const chunkedCall = `${CALL.length.toString(16)}\r\n${CALL}\r\n0\r\n\r\n`;
    const x = await rawExchange(gw.port, [postHead(gw.port, `transfer-encoding: chunked\r\ncontent-length: ${CALL.length}\r\n`) + chunkedCall]);
    expectRefusedAndClosed(x, 'TE + CL');
    expect(svc.requests.length).toBe(before);
  });

  it('DEL in a header value (both uWS builds accept it): 400 and closed, the tool does not run', async () => {
    const before = svc.requests.length;
    for (const line of ['x-note: a\x7fb\r\n', 'traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\x7f\r\n', 'mcp-session-id: s\x7f1\r\n']) {
      const x = await rawExchange(gw.port, [postHead(gw.port, `${line}content-length: ${CALL.length}\r\n`) + CALL]);
      expectRefusedAndClosed(x, JSON.stringify(line));
      expect(x.responses).toHaveLength(1);
      expect((x.responses[0]?.json as { error: { message: string } } | undefined)?.error.message).toBe('Bad Request: control character in a header value');
    }
    expect(svc.requests.length).toBe(before);
    expect(await listToolNames(gw, 'core')).toEqual(['echo']);
  });

  it('a tab inside a header value is allowed (RFC 9110 §5.5)', async () => {
    const x = await rawExchange(gw.port, [postHead(gw.port, `x-note: a\tb\r\ncontent-length: ${CALL.length}\r\nconnection: close\r\n`) + CALL], { expectResponses: 1 });
    expect(x.responses.map((r) => r.status)).toEqual([200]);
  });
});
