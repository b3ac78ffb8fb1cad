/**
 * The NDJSON reader on its own: frames split anywhere (inside a line, inside a
 * UTF-8 sequence), the line bound, and — issue 11 #5 — linear work for one
 * endless line (the old reader re-scanned the whole pending text on every
 * chunk: a 16 MiB line stalled its shard for seconds).
 */
import { describe, expect, it } from 'vitest';
import { NdjsonReader } from '../../../../src/workers/shard/ndjson.js';
import type { StreamFrame } from '../../../../src/workers/shard/notification-forwarder.js';

const RESULT_LINE = '{"type":"result","result":{"content":[{"type":"text","text":"done ✓"}]}}\n';

/** Feeds `bytes` in `chunkSize` pieces; returns the result and the time it took. */
function feed(reader: NdjsonReader, bytes: Buffer, chunkSize: number): { result: ReturnType<NdjsonReader['end']> | null; ms: number } {
  const t0 = performance.now();
  let result: ReturnType<NdjsonReader['end']> | null = null;
  for (let at = 0; at < bytes.length && result === null; at += chunkSize) result = reader.push(bytes.subarray(at, Math.min(at + chunkSize, bytes.length)));
  result ??= reader.end();
  return { result, ms: performance.now() - t0 };
}

describe('NdjsonReader', () => {
  it('reassembles lines and UTF-8 sequences split across chunks, one byte at a time', () => {
    const frames: StreamFrame[] = [];
    const reader = new NdjsonReader((f) => frames.push(f));
    const text = '{"type":"progress","progress":1,"message":"ünïcødé ✓"}\r\n\n{"type":"log","level":"info","data":"€"}\n' + RESULT_LINE;
    const { result } = feed(reader, Buffer.from(text), 1);
    expect(frames).toEqual([
      { type: 'progress', progress: 1, message: 'ünïcødé ✓' },
      { type: 'log', level: 'info', data: '€' },
    ]);
    expect(result).toMatchObject({ json: '{"content":[{"type":"text","text":"done ✓"}]}', isError: false, cause: 'ok' });
    expect(result?.value).toEqual({ content: [{ type: 'text', text: 'done ✓' }] });
  });

  it('takes a last line without a newline at the end of the stream', () => {
    const reader = new NdjsonReader();
    expect(reader.push(Buffer.from(RESULT_LINE.trimEnd()))).toBeNull();
    expect(reader.end()).toMatchObject({ isError: false, cause: 'ok' });
  });

  it('stops at the first result frame, ignoring what follows in the same chunk', () => {
    const reader = new NdjsonReader();
    const r = reader.push(Buffer.from(RESULT_LINE + 'garbage that is not json\n'));
    expect(r).toMatchObject({ cause: 'ok' });
  });

  it('reads a slice of a larger buffer (start/end) without looking past end', () => {
    const reader = new NdjsonReader();
    const buf = Buffer.from('xx' + RESULT_LINE.trimEnd() + '\nzz');
    expect(reader.push(buf, 2, buf.length - 3)).toBeNull();
    expect(reader.end()).toMatchObject({ cause: 'ok' });
  });

  it('refuses a line longer than its bound, at the bound', () => {
    const line = '{"type":"log","level":"info","data":"' + 'x'.repeat(100) + '"}';
    const exact = new NdjsonReader(null, Buffer.byteLength(line));
    expect(exact.push(Buffer.from(line + '\n' + RESULT_LINE))).toMatchObject({ cause: 'ok' });
    const over = new NdjsonReader(null, Buffer.byteLength(line) - 1);
    const { result } = feed(over, Buffer.from(line + '\n' + RESULT_LINE), 7);
    expect(result).toMatchObject({ cause: 'too_large', isError: true });
    expect(JSON.parse(result?.json ?? '{}')).toEqual({
      content: [{ type: 'text', text: `Tool Service stream is malformed: a line is longer than ${Buffer.byteLength(line) - 1} bytes` }],
      isError: true,
    });
  });

  // Wall-clock ratio on a shared machine: a linear reader measures 2–11× here (mostly 3–6) (the long line's one 8 MiB
  // JSON.parse against thousands of small ones), the quadratic one > 30×. Retried, never loosened: a
  // quadratic reader fails every attempt, a noisy run (8.27 once under CI load) does not fail three.
  it('reads one endless line in linear time (issue 11 #5): no slower than many short lines of the same size', { retry: 2 }, () => {
    const total = 8 * 1024 * 1024;
    const chunk = 16 * 1024;
    // One 8 MiB log line, then the result.
    const head = '{"type":"log","level":"info","data":"';
    const oneLine = Buffer.from(head + 'x'.repeat(total - head.length - 2) + '"}\n' + RESULT_LINE);
    // The same bytes as ~8,000 short log lines.
    const shortLine = '{"type":"log","level":"info","data":"' + 'x'.repeat(1024 - 40) + '"}\n';
    const manyLines = Buffer.from(shortLine.repeat(Math.floor(total / shortLine.length)) + RESULT_LINE);
    const long: number[] = [];
    const short: number[] = [];
    // Interleaved, medians: a busy machine slows both alike.
    for (let i = 0; i < 3; i++) {
      const a = feed(new NdjsonReader(), oneLine, chunk);
      expect(a.result).toMatchObject({ cause: 'ok' });
      long.push(a.ms);
      const b = feed(new NdjsonReader(), manyLines, chunk);
      expect(b.result).toMatchObject({ cause: 'ok' });
      short.push(b.ms);
    }
    const median = (xs: number[]): number => [...xs].sort((x, y) => x - y)[1] as number;
    // Linear readers do both in about the same time; the quadratic one took > 30× longer on the long line.
    expect(median(long) / median(short)).toBeLessThan(8);
  });
});
