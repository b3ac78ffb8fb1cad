/**
 * Raw HTTP correctness on both uWS builds (issue 11 #6; ADR-0001 "Raw HTTP
 * behaviours per build"): what a load balancer, health checker or proxy may
 * send. Each request gets a prompt, correct status (RFC 9110/9112) or is
 * served — except where the legacy build (uWS 20.30, Node 20) cannot, which
 * ADR-0001 records as a known limit; only those assertions branch on the
 * build. Every wait is bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadedUwsBuild } from '../../../dist/src/main/uws.js';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../../fixtures/tool-service.js';
import { rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { listToolNames } from '../../helpers/mcp.js';
import { rawExchange, splitResponses, type RawExchange } from '../../helpers/raw-http.js';

const LIST = JSON.stringify(rpc('tools/list', undefined, 'raw'));
/** How long a prompt answer may take on this loaded machine. */
const PROMPT_MS = 2_000;

function legacy(): boolean {
  return loadedUwsBuild()?.role === 'legacy';
}

function listRequest(port: number, extraHeaders = '', target = '/mcp/core'): string {
  return (
    `POST ${target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json\r\n` +
    `${extraHeaders}content-length: ${LIST.length}\r\nconnection: close\r\n\r\n${LIST}`
  );
}

function statuses(x: RawExchange): number[] {
  return x.responses.map((r) => r.status);
}

/** An ADR-0001 limit (mostly the legacy build's): no status at all — the connection closes (at once or after uWS's ~12 s timeout), nothing is served. */
function expectLegacyNoAnswer(x: RawExchange): void {
  expect(x.bytes.length).toBe(0);
}

/** A prompt refusal with `status`, the connection closed (uWS's own error pages end with the connection). */
function expectPromptStatus(x: RawExchange, status: number): void {
  expect(statuses(x)).toEqual([status]);
  expect(x.rest.length).toBe(0);
  expect(x.elapsedMs).toBeLessThan(PROMPT_MS);
}

describe('raw HTTP requests get a prompt, correct answer', () => {
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

  it('HEAD on /health/live, /health/ready, /mcp/core and an unknown path: the GET status, no body, framing intact for the next request', async () => {
    const cases: Array<[string, number]> = [
      ['/health/live', 200],
      ['/health/ready', 200],
      ['/mcp/core', 405],
      ['/nope', 404],
    ];
    for (const [path, status] of cases) {
      // HEAD, then a pipelined GET on the same connection: a body after the HEAD answer would be read as the next response.
      const x = await rawExchange(gw.port, [`HEAD ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\nGET /health/live HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`], {
        waitMs: PROMPT_MS,
      });
      const head = splitResponses(x.bytes, true);
      expect(head.responses[0]?.status, path).toBe(status);
      expect(head.responses[0]?.body, path).toBe('');
      // What follows the HEAD answer's head must be the GET's status line.
      const afterHead = x.bytes.subarray(x.bytes.indexOf('\r\n\r\n') + 4).toString('latin1');
      expect(afterHead.startsWith('HTTP/1.1 200 '), `${path}: ${JSON.stringify(afterHead.slice(0, 40))}`).toBe(true);
      if (path === '/mcp/core') expect(head.responses[0]?.headers['allow']).toBe('POST');
    }
  });

  it('extension methods (FOO, PROPFIND): 501 on uWS 20.57; the legacy build closes before any handler (ADR-0001 limit)', async () => {
    for (const method of ['FOO', 'PROPFIND']) {
      for (const path of ['/mcp/core', '/health/live']) {
        const x = await rawExchange(gw.port, [`${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`], { waitMs: PROMPT_MS + 500 });
        if (legacy()) {
          expectLegacyNoAnswer(x);
          expect(x.closed).toBe(true);
          expect(x.elapsedMs).toBeLessThan(PROMPT_MS);
        } else expectPromptStatus(x, 501);
      }
    }
  });

  it('HTTP/1.0: 505 at once on uWS 20.57; no answer on the legacy build (ADR-0001 limit)', async () => {
    for (const request of ['GET /health/live HTTP/1.0\r\n\r\n', 'GET /health/live HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n']) {
      const x = await rawExchange(gw.port, [request], { waitMs: PROMPT_MS + 500 });
      if (legacy()) expectLegacyNoAnswer(x);
      else expectPromptStatus(x, 505);
    }
  });

  it('garbage request lines and absolute-form targets: a prompt status on uWS 20.57 where it gives one; no answer on the legacy build (ADR-0001 limits)', async () => {
    // null: no answer within the wait (uWS waits for more of the head until its idle timeout) — recorded in ADR-0001.
    const cases: Array<[string, number | null]> = [
      ['this is not http\r\n\r\n', 505],
      [`POST http://127.0.0.1:${gw.port}/mcp/core HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 0\r\n\r\n`, 505],
      ['GET / HTTP/1.1\r\n\r\n', 400], // HTTP/1.1 without Host (RFC 9112 §3.2)
      ['GET\r\n\r\n', null],
    ];
    for (const [request, modern] of cases) {
      const x = await rawExchange(gw.port, [request], { waitMs: PROMPT_MS + 500 });
      if (legacy() || modern === null) expectLegacyNoAnswer(x);
      else {
        expectPromptStatus(x, modern);
        expect(x.closed, request).toBe(true);
      }
    }
  });

  it('a control character in a header value: 400 on uWS 20.57 (its own check); no answer on the legacy build (ADR-0001 limit)', async () => {
    const x = await rawExchange(gw.port, [listRequest(gw.port, 'x-note: a\x01b\r\n')], { waitMs: PROMPT_MS + 500 });
    if (legacy()) expectLegacyNoAnswer(x);
    else {
      expectPromptStatus(x, 400);
      expect(x.closed).toBe(true);
    }
  });

  it('60 header lines: served on uWS 20.57; no answer on the legacy build (50 lines at most, ADR-0001 limit)', async () => {
    let extra = '';
    for (let i = 0; i < 53; i++) extra += `x-h${i}: ${i}\r\n`; // + host, content-type, accept, content-length, connection = 58 … plus the request line
    extra += 'x-last: 1\r\nx-last2: 2\r\n';
    const x = await rawExchange(gw.port, [listRequest(gw.port, extra)], { waitMs: PROMPT_MS + 500, expectResponses: 1 });
    if (legacy()) expectLegacyNoAnswer(x);
    else expect(statuses(x)).toEqual([200]);
  });

  it('an 8 KB header block split across TCP segments: served on uWS 20.57; closed without status on the legacy build (4 KiB, ADR-0001 limit)', async () => {
    const request = listRequest(gw.port, `x-pad: ${'p'.repeat(8 * 1024)}\r\n`);
    const x = await rawExchange(gw.port, [request.slice(0, 3000), request.slice(3000, 6000), request.slice(6000)], { gapMs: 30, waitMs: PROMPT_MS + 500, expectResponses: 1 });
    if (legacy()) {
      expectLegacyNoAnswer(x);
      expect(x.closed).toBe(true);
    } else expect(statuses(x)).toEqual([200]);
  });

  it('an 8 KB header block in one segment is served on both builds', async () => {
    const x = await rawExchange(gw.port, [listRequest(gw.port, `x-pad: ${'p'.repeat(8 * 1024)}\r\n`)], { waitMs: PROMPT_MS + 500, expectResponses: 1 });
    expect(statuses(x)).toEqual([200]);
  });

  it('keeps serving afterwards', async () => {
    expect(await listToolNames(gw, 'core')).toEqual(['echo']);
  });
});
