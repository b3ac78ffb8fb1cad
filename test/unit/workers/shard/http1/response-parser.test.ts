/**
 * The HTTP/1.1 response parser on plain bytes (RFC 9112): every valid
 * response gives the same result however its bytes are split, and every
 * framing or syntax violation is refused with a specific error.
 */
import { describe, expect, it } from 'vitest';
import { ResponseParser, type ParserSink } from '../../../../../src/workers/shard/http1/response-parser.js';
import type { ResponseHead } from '../../../../../src/workers/shard/http1/response-head.js';

interface Parsed {
  heads: Array<{ status: number; keepAlive: boolean; keepAliveTimeoutMs: number; contentLength: number; chunked: boolean; untilClose: boolean; fields: Array<[string, string]>; ndjson: boolean }>;
  body: string;
  complete: boolean;
  error: { code: string; message: string } | null;
  /** Bytes the parser said belong to the response. */
  consumed: number;
}

/** Parses `text` cut into pieces at `cuts` (byte offsets); `eof` closes the stream after the last piece. */
function parse(text: string | Buffer, cuts: number[] = [], { maxHeaderBytes = 1024, eof = false } = {}): Parsed {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
  const out: Parsed = { heads: [], body: '', complete: false, error: null, consumed: 0 };
  const sink: ParserSink = {
    onHead(head: ResponseHead) {
      const fields: Array<[string, string]> = [];
      for (let i = 0; i < head.fieldCount; i++) fields.push([head.name(i), head.value(i)]);
      out.heads.push({
        status: head.status,
        keepAlive: head.keepAlive,
        keepAliveTimeoutMs: head.keepAliveTimeoutMs,
        contentLength: head.contentLength,
        chunked: head.chunked,
        untilClose: head.untilClose,
        fields,
        ndjson: head.mediaTypeIs('application/x-ndjson'),
      });
    },
    onBody(chunk, start, end) {
      out.body += chunk.toString('latin1', start, end);
    },
    onComplete() {
      out.complete = true;
    },
  };
  const parser = new ResponseParser(maxHeaderBytes);
  parser.expect(sink);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    // Each piece in a buffer of its own with junk around it: the parser must stay inside [start, end).
    const piece = Buffer.concat([Buffer.from('JUNK\n'), bytes.subarray(at, cut), Buffer.from('\r\nJUNK')]);
    const stop = parser.execute(piece, 5, 5 + cut - at);
    if (stop < 0) {
      out.error = parser.error;
      return out;
    }
    out.consumed += stop - 5;
    if (out.complete) return out;
    at = cut;
  }
  if (eof) out.complete = parser.eof() && out.complete;
  return out;
}

/** The result is the same for every single split point and for one byte at a time. */
function parseEverySplit(text: string, options: { maxHeaderBytes?: number; eof?: boolean } = {}): Parsed {
  const whole = parse(text, [], options);
  for (let cut = 1; cut < text.length; cut++) expect(parse(text, [cut], options), `split at ${cut}`).toEqual(whole);
  expect(
    parse(
      text,
      Array.from({ length: text.length - 1 }, (_, i) => i + 1),
      options,
    ),
    'byte by byte',
  ).toEqual(whole);
  return whole;
}

const CHUNKED_HEAD = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';

describe('ResponseParser: valid responses', () => {
  it('reads a Content-Length body, trims field values, keeps the connection', () => {
    const r = parseEverySplit('HTTP/1.1 200 OK\r\nContent-Type:  application/x-ndjson ; charset=utf-8 \r\nContent-Length: 5\r\nX-Empty:\r\n\r\nhello');
    expect(r.error).toBeNull();
    expect(r.complete).toBe(true);
    expect(r.body).toBe('hello');
    expect(r.heads).toHaveLength(1);
    expect(r.heads[0]).toMatchObject({ status: 200, keepAlive: true, contentLength: 5, chunked: false, ndjson: true });
    expect(r.heads[0]?.fields).toEqual([
      ['content-type', 'application/x-ndjson ; charset=utf-8'],
      ['content-length', '5'],
      ['x-empty', ''],
    ]);
  });

  it('reads whole lines in one pass as it reads them byte by byte: no reason, HTAB and obs-text, OWS-only values', () => {
    // parseEverySplit compares the whole response (lines read in one pass each) with every split (the byte states);
    // the refusals below do the same for lines the one pass gives back to the byte states.
    const r = parseEverySplit('HTTP/1.0 204\r\nA:\t \r\nB: x\ty\t\r\nC: caf\u00e9 \u00ff\r\n\r\n');
    expect(r.error).toBeNull();
    expect(r.heads[0]).toMatchObject({ status: 204, keepAlive: false });
    expect(r.heads[0]?.fields).toEqual([
      ['a', ''],
      ['b', 'x\ty'],
      ['c', 'caf\u00e9 \u00ff'],
    ]);
    expect(parseEverySplit('HTTP/1.1 200 \t\r\nContent-Length: 0\r\n\r\n').heads[0]?.status).toBe(200);
  });

  it('reads a chunked body with extensions (token and quoted values) and a trailer section, ignoring both', () => {
    const text = CHUNKED_HEAD + '5;name=value;q="a \\" ;b"\r\nhello\r\n6 ; x=1\r\n world\r\n0;last\r\nTrailer-A: 1\r\nTrailer-B: two\r\n\r\n';
    const r = parseEverySplit(text);
    expect(r.error).toBeNull();
    expect(r.complete).toBe(true);
    expect(r.body).toBe('hello world');
    expect(r.consumed).toBe(text.length);
    expect(r.heads[0]).toMatchObject({ chunked: true, contentLength: -1 });
  });

  it('skips 100 Continue and 103 Early Hints before the final response', () => {
    const r = parseEverySplit('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    expect(r.heads.map((h) => h.status)).toEqual([200]);
    expect(r.heads[0]?.fields).toEqual([['content-length', '2']]);
    expect(r.body).toBe('ok');
  });

  it('reads to the end of the connection without Content-Length or chunked, and does not keep it', () => {
    const r = parse('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"a":1}', [30], { eof: true });
    expect(r.complete).toBe(true);
    expect(r.body).toBe('{"a":1}');
    expect(r.heads[0]).toMatchObject({ untilClose: true, keepAlive: false });
  });

  it('honours Connection: close, HTTP/1.0 (with and without keep-alive) and Keep-Alive: timeout', () => {
    const head = (h: string): Parsed['heads'][number] | undefined => parse(h + 'Content-Length: 0\r\n\r\n').heads[0];
    expect(head('HTTP/1.1 200 OK\r\nConnection: Upgrade, Close\r\n')?.keepAlive).toBe(false);
    expect(head('HTTP/1.0 200 OK\r\n')?.keepAlive).toBe(false);
    expect(head('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n')?.keepAlive).toBe(true);
    expect(head('HTTP/1.1 200 OK\r\nKeep-Alive: max=100, Timeout=5\r\n')).toMatchObject({ keepAlive: true, keepAliveTimeoutMs: 5000 });
    expect(head('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=abc\r\n')?.keepAliveTimeoutMs).toBe(-1);
  });

  it('takes identical repeated Content-Length fields, 204/304 without a body, and a status line without a reason', () => {
    expect(parse('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok')).toMatchObject({ complete: true, body: 'ok' });
    expect(parse('HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n')).toMatchObject({ complete: true, body: '' });
    expect(parse('HTTP/1.1 304 Not Modified\r\n\r\n')).toMatchObject({ complete: true, body: '' });
    expect(parse('HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ complete: true });
    expect(parse('HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n')).toMatchObject({ complete: true });
  });

  it('stops at the end of the response: later bytes are not consumed', () => {
    const first = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
    const r = parse(first + 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno');
    expect(r).toMatchObject({ complete: true, body: 'ok', consumed: first.length });
    expect(r.heads).toHaveLength(1);
  });

  it('passes obs-text (bytes ≥ 0x80) in values through as latin1', () => {
    const r = parse(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nX-Name: caf'), Buffer.from([0xe9]), Buffer.from('\r\nContent-Length: 0\r\n\r\n')]));
    expect(r.heads[0]?.fields[0]).toEqual(['x-name', 'café']);
  });

  it('reports a cut response at EOF', () => {
    const r = parse('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc', [], { eof: true });
    expect(r.complete).toBe(false);
  });
});

describe('ResponseParser: refused responses', () => {
  const refused: Array<[string, string, RegExp]> = [
    ['Transfer-Encoding with Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /both Transfer-Encoding and Content-Length/],
    ['two different Content-Length values', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello', /different values/],
    ['a Content-Length list', 'HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello', /single decimal/],
    ['a signed Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello', /single decimal/],
    ['an empty Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n', /single decimal/],
    ['a Content-Length past 2^53', 'HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999\r\n\r\n', /single decimal/],
    ['another transfer coding', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n', /unsupported Transfer-Encoding/],
    ['a transfer-coding list', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n', /unsupported Transfer-Encoding/],
    ['chunked twice', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /twice/],
    ['Transfer-Encoding in HTTP/1.0', 'HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /HTTP\/1.0/],
    ['obs-fold', 'HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 0\r\n\r\n', /obs-fold/],
    ['whitespace before the colon', 'HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n', /between a field name and the colon/],
    ['a control byte in a value', 'HTTP/1.1 200 OK\r\nX-A: a\u0001b\r\nContent-Length: 0\r\n\r\n', /invalid byte in a field value/],
    ['DEL in a value', 'HTTP/1.1 200 OK\r\nX-A: a\u007fb\r\nContent-Length: 0\r\n\r\n', /invalid byte in a field value/],
    ['a bare LF line end', 'HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n', /CR without LF|reason/],
    ['a bare LF in the fields', 'HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n', /LF without CR/],
    ['a bare CR', 'HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n', /CR without LF/],
    ['an empty field name', 'HTTP/1.1 200 OK\r\n: x\r\n\r\n', /start of a field name/],
    ['a separator in a field name', 'HTTP/1.1 200 OK\r\nX(A): x\r\n\r\n', /field name/],
    ['HTTP/2 status line', 'HTTP/2 200 OK\r\n\r\n', /HTTP\/1\./],
    ['HTTP/1.2', 'HTTP/1.2 200 OK\r\n\r\n', /unsupported HTTP version/],
    ['a two-digit status', 'HTTP/1.1 20 OK\r\n\r\n', /three digits/],
    ['a status past 599', 'HTTP/1.1 600 Odd\r\n\r\n', /out of range/],
    ['101 Switching Protocols', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n', /101/],
    ['chunk-size overflow', CHUNKED_HEAD + 'fffffffffffffffff\r\n', /overflow/],
    ['a chunk without a size', CHUNKED_HEAD + ';ext\r\n', /hexadecimal size/],
    ['two numbers as a chunk size', CHUNKED_HEAD + '5 5\r\nhello\r\n0\r\n\r\n', /after a chunk size/],
    ['a control byte in a chunk extension', CHUNKED_HEAD + '5;a=\u0001\r\nhello\r\n0\r\n\r\n', /chunk extension/],
    ['a CR inside a quoted chunk extension', CHUNKED_HEAD + '5;a="x\r\n"\r\nhello\r\n0\r\n\r\n', /quoted chunk extension/],
    ['chunk data longer than its size', CHUNKED_HEAD + '3\r\nhello\r\n0\r\n\r\n', /longer than its chunk size/],
    ['an obs-fold in a trailer', CHUNKED_HEAD + '0\r\nT: a\r\n b\r\n\r\n', /obs-fold/],
  ];

  it.each(refused)('refuses %s', (_name, text, message) => {
    const r = parse(text);
    expect(r.error?.code).toBe('BAD_RESPONSE');
    expect(r.error?.message).toMatch(message);
    expect(r.complete).toBe(false);
    // Split anywhere, the verdict is the same.
    for (let cut = 1; cut < text.length; cut++) expect(parse(text, [cut]).error, `split at ${cut}`).toEqual(r.error);
  });

  it('refuses a head over maxHeaderBytes and accepts one exactly at it', () => {
    const head = (n: number): string => {
      const base = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: \r\n\r\n';
      return base.replace('X-Pad: ', 'X-Pad: ' + 'p'.repeat(n - base.length));
    };
    expect(head(200)).toHaveLength(200);
    expect(parseEverySplit(head(200), { maxHeaderBytes: 200 })).toMatchObject({ complete: true, error: null });
    const over = parse(head(201), [], { maxHeaderBytes: 200 });
    expect(over.error).toEqual({ code: 'HEADERS_TOO_LARGE', message: 'the response head is larger than 200 bytes' });
    expect(parse(head(201), [100, 199], { maxHeaderBytes: 200 }).error?.code).toBe('HEADERS_TOO_LARGE');
  });

  it('grows its head buffer for a large head within the limit', () => {
    const fields = Array.from({ length: 60 }, (_, i) => `X-Field-${i}: ${'v'.repeat(80)}\r\n`).join('');
    const text = `HTTP/1.1 200 OK\r\n${fields}Content-Length: 2\r\n\r\nok`;
    for (const cuts of [[], [700, 1500, 3000], [1023, 1024, 1025]]) {
      const r = parse(text, cuts, { maxHeaderBytes: 8192 });
      expect(r).toMatchObject({ complete: true, body: 'ok', error: null });
      expect(r.heads[0]?.fields).toHaveLength(61);
      expect(r.heads[0]?.fields[59]).toEqual(['x-field-59', 'v'.repeat(80)]);
    }
  });

  it('refuses a trailer section over maxHeaderBytes, and an endless chunk-size line', () => {
    const trailers = parse(CHUNKED_HEAD + '0\r\nT: ' + 'x'.repeat(300) + '\r\n\r\n', [], { maxHeaderBytes: 200 });
    expect(trailers.error).toEqual({ code: 'HEADERS_TOO_LARGE', message: 'the response trailer section is larger than 200 bytes' });
    const ext = parse(CHUNKED_HEAD + '5;' + 'e'.repeat(300) + '\r\nhello\r\n0\r\n\r\n', [], { maxHeaderBytes: 200 });
    expect(ext.error?.message).toBe('a chunk-size line is longer than 200 bytes');
  });
});
