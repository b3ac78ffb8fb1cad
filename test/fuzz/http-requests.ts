/**
 * fast-check generators of raw HTTP/1.x traffic for the HTTP-level fuzz test
 * (test/integration/edge/http-fuzz.test.ts, issue 11): request lines (known,
 * extension and garbage methods; origin-, absolute- and odd-form targets;
 * versions), header sets (duplicates, control characters and DEL, lying or
 * conflicting framing), bodies (JSON-RPC from arbitraries.ts, or bytes), and
 * pipelining (several requests in one write, or one request split across
 * writes). Plain bytes: what a hostile client or a broken proxy could send.
 */
import fc from 'fast-check';
import { rpcBody } from './arbitraries.js';

/** One connection's traffic: the writes, in order (a write may hold several requests, or part of one). */
export interface RawScript {
  writes: Buffer[];
  /** How many requests the script holds (an upper bound of the answers: a smuggled request must not be answered). */
  requests: number;
  /** Per request, whether it is a HEAD (its answer has no body). */
  heads: boolean[];
}

/** A request hidden in the body under a second, larger `Content-Length` (request smuggling). */
const HIDDEN = Buffer.from('GET /health/live HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');

const method = fc.oneof(
  { weight: 6, arbitrary: fc.constant('POST') },
  { weight: 3, arbitrary: fc.constantFrom('GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE') },
  { weight: 1, arbitrary: fc.constantFrom('FOO', 'PROPFIND', 'post', 'P0ST', 'GET GET', '', 'CONNECT') },
);

const target = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('/mcp/core', '/mcp/core?x=1', '/health/live', '/health/ready', '/metrics') },
  { weight: 2, arbitrary: fc.constantFrom('/mcp', '/mcp/', '/mcp/UPPER', '/mcp/nope', '/nope', '/mcp/core/extra', '/%00', '/mcp/%2e%2e') },
  { weight: 1, arbitrary: fc.constantFrom('http://127.0.0.1/mcp/core', '*', 'mcp/core', `/${'a'.repeat(3000)}`, '/a b') },
);

const version = fc.oneof({ weight: 12, arbitrary: fc.constant('HTTP/1.1') }, { weight: 1, arbitrary: fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 ', 'HTTQ/1.1', '') });

/** Header values: mostly ordinary, sometimes with control characters, DEL, obs-text or long. */
const headerValue = fc.oneof(
  { weight: 8, arbitrary: fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_./:;=,'.split('')), maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constantFrom('a\x7fb', 'a\x01b', 'a\tb', '\x00', 'caf\xe9', 'x'.repeat(5000), ' padded ') },
);

const headerName = fc.constantFrom(
  'host',
  'content-type',
  'accept',
  'origin',
  'mcp-protocol-version',
  'x-request-id',
  'traceparent',
  'mcp-session-id',
  'mcp-method',
  'mcp-name',
  'x-extra',
  'Content-Type',
  'expect',
  'connection',
);

/** The body and its framing: correct, missing, lying, duplicated, chunked, or chunked together with Content-Length. */
const framedBody = fc
  .record({
    body: fc.oneof({ weight: 4, arbitrary: rpcBody.map((b) => Buffer.from(b)) }, { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) }),
    framing: fc.constantFrom('length', 'length', 'length', 'length', 'none', 'short', 'long', 'double', 'double-equal', 'chunked', 'chunked+length'),
  })
  .map(({ body, framing }): { lines: string[]; bytes: Buffer } => {
    switch (framing) {
      case 'none':
        return { lines: [], bytes: Buffer.alloc(0) };
      case 'short':
        return { lines: [`content-length: ${Math.max(0, body.length - 3)}`], bytes: body };
      case 'long':
        // Declares more than is sent: the server must wait for the rest (bounded by the test's wait).
        return { lines: [`content-length: ${body.length + 5}`], bytes: body };
      case 'double':
        return { lines: [`content-length: ${body.length}`, `content-length: ${body.length + HIDDEN.length}`], bytes: Buffer.concat([body, HIDDEN]) };
      case 'double-equal':
        return { lines: [`content-length: ${body.length}`, `content-length: ${body.length}`], bytes: body };
      case 'chunked':
        return { lines: ['transfer-encoding: chunked'], bytes: chunk(body) };
      case 'chunked+length':
        return { lines: ['transfer-encoding: chunked', `content-length: ${body.length}`], bytes: chunk(body) };
      default:
        return { lines: [`content-length: ${body.length}`], bytes: body };
    }
  });

function chunk(body: Buffer): Buffer {
  return body.length === 0 ? Buffer.from('0\r\n\r\n') : Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
}

/** One request's bytes. */
export const rawRequestBytes: fc.Arbitrary<{ bytes: Buffer; head: boolean }> = fc
  .record({
    method,
    target,
    version,
    host: fc.oneof({ weight: 8, arbitrary: fc.constant(['host: 127.0.0.1']) }, { weight: 1, arbitrary: fc.constantFrom([], ['host: 127.0.0.1', 'host: evil.example'], ['host: evil.example']) }),
    standard: fc.boolean(),
    headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }),
    framed: framedBody,
  })
  .map(({ method: m, target: t, version: v, host, standard, headers, framed }) => {
    const lines: string[] = [...host];
    if (standard) lines.push('content-type: application/json', 'accept: application/json, text/event-stream');
    for (const [name, value] of headers) lines.push(`${name}: ${value}`);
    lines.push(...framed.lines);
    const head = `${m} ${t} ${v}`.replace(/ +$/, '') + '\r\n' + lines.map((l) => `${l}\r\n`).join('') + '\r\n';
    return { bytes: Buffer.concat([Buffer.from(head, 'latin1'), framed.bytes]), head: m === 'HEAD' };
  });

/** A connection's script: 1–3 requests, the last asking to close, written at once or cut at random points. */
export const rawScript: fc.Arbitrary<RawScript> = fc
  .record({
    requests: fc.array(rawRequestBytes, { minLength: 1, maxLength: 3 }),
    cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 2 }),
  })
  .map(({ requests, cuts }) => {
    const last = requests.length - 1;
    // The last request closes the connection once answered, so most scripts end promptly (when its head is valid).
    const all = Buffer.concat(requests.map((r, i) => (i === last ? withClose(r.bytes) : r.bytes)));
    const points = [...new Set(cuts.map((c) => Math.floor(c * all.length)))].filter((p) => p > 0 && p < all.length).sort((a, b) => a - b);
    const writes: Buffer[] = [];
    let from = 0;
    for (const p of points) {
      writes.push(all.subarray(from, p));
      from = p;
    }
    writes.push(all.subarray(from));
    return { writes, requests: requests.length, heads: requests.map((r) => r.head) };
  });

function withClose(request: Buffer): Buffer {
  const end = request.indexOf('\r\n');
  if (end < 0) return request;
  return Buffer.concat([request.subarray(0, end + 2), Buffer.from('connection: close\r\n'), request.subarray(end + 2)]);
}
