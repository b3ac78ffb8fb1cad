import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HttpResponse } from 'uWebSockets.js';
import { Subscriptions } from '../../../src/main/subscriptions.js';

/** The parts of a uWS response the stream module uses, recording what was written. */
class FakeResponse {
  status = '';
  headers: Array<[string, string]> = [];
  chunks: string[] = [];
  ended = false;
  aborted: (() => void) | null = null;
  writeStatus(s: string): this {
    this.status = s;
    return this;
  }
  writeHeader(k: string, v: string): this {
    this.headers.push([k, v]);
    return this;
  }
  write(chunk: string | Uint8Array): boolean {
    this.chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    return true;
  }
  end(chunk: string | Uint8Array = ''): this {
    this.write(chunk);
    this.ended = true;
    return this;
  }
  cork(fn: () => void): this {
    fn();
    return this;
  }
  onAborted(fn: () => void): this {
    this.aborted = fn;
    return this;
  }
  /** The JSON messages of the SSE events written so far. */
  get messages(): Array<Record<string, unknown>> {
    return this.chunks
      .join('')
      .split('\n\n')
      .filter((e) => e.includes('data: '))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Record<string, unknown>);
  }
}
const res = (): FakeResponse & HttpResponse => new FakeResponse() as FakeResponse & HttpResponse;

afterEach(() => vi.useRealTimers());

describe('Subscriptions (subscriptions/listen streams of one acceptor thread)', () => {
  it('opens an SSE stream with X-Accel-Buffering: no and acknowledges the honoured filter, tagged with the subscription id', () => {
    const subs = new Subscriptions({ maxPerAcceptor: 10, keepAliveMs: 0 });
    const r = res();
    expect(subs.listen(r, 'core', '"s1"', true)).toBe(true);
    expect(r.status).toBe('200 OK');
    expect(r.headers).toEqual(
      expect.arrayContaining([
        ['content-type', 'text/event-stream'],
        ['x-accel-buffering', 'no'],
        ['cache-control', 'no-cache'],
      ]),
    );
    expect(r.messages).toEqual([
      { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 's1' }, notifications: { toolsListChanged: true } } },
    ]);
    expect(subs.open).toBe(1);
  });

  it('sends list_changed only to streams of that route that asked for it', () => {
    const subs = new Subscriptions({ maxPerAcceptor: 10, keepAliveMs: 0 });
    const [a, b, c] = [res(), res(), res()];
    subs.listen(a, 'core', '1', true);
    subs.listen(b, 'core', '2', false);
    subs.listen(c, 'other', '3', true);
    subs.listChanged('core');
    expect(a.messages.at(-1)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 1 } } });
    expect(b.messages).toHaveLength(1);
    expect(c.messages).toHaveLength(1);
    subs.listChanged('unknown');
  });

  it('refuses past maxPerAcceptor (writing nothing), and frees a place when a client goes away', () => {
    const subs = new Subscriptions({ maxPerAcceptor: 2, keepAliveMs: 0 });
    const [a, b, c] = [res(), res(), res()];
    expect(subs.listen(a, 'core', '1', true)).toBe(true);
    expect(subs.listen(b, 'core', '2', true)).toBe(true);
    expect(subs.listen(c, 'core', '3', true)).toBe(false);
    expect(c.chunks).toEqual([]);
    a.aborted?.();
    expect(subs.open).toBe(1);
    expect(subs.listen(c, 'core', '3', true)).toBe(true);
    subs.listChanged('core');
    expect(a.messages).toHaveLength(1); // gone: nothing more written
  });

  it('keeps streams alive with SSE comments from one timer, stopped when the last stream closes', () => {
    vi.useFakeTimers();
    const subs = new Subscriptions({ maxPerAcceptor: 10, keepAliveMs: 1000 });
    const a = res();
    subs.listen(a, 'core', '1', true);
    vi.advanceTimersByTime(2500);
    expect(a.chunks.filter((c) => c === ': keep-alive\n\n')).toHaveLength(2);
    a.aborted?.();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends streams gracefully (the listen result, tagged) when the route goes away or on shutdown; refuses new ones after', () => {
    const subs = new Subscriptions({ maxPerAcceptor: 10, keepAliveMs: 0 });
    const [a, b] = [res(), res()];
    subs.listen(a, 'gone', '"a"', true);
    subs.listen(b, 'core', '"b"', false);
    subs.routeRemoved('gone');
    expect(a.ended).toBe(true);
    expect(a.messages.at(-1)).toMatchObject({ jsonrpc: '2.0', id: 'a', result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 'a' } } });
    expect(b.ended).toBe(false);
    subs.closeAll();
    expect(b.ended).toBe(true);
    expect(subs.open).toBe(0);
    expect(subs.listen(res(), 'core', '"c"', true)).toBe(false);
    subs.closeAll();
    // The acceptor listens again (gateway.ts re-listens on an ephemeral port): streams are accepted again.
    subs.reopen();
    expect(subs.listen(res(), 'core', '"d"', true)).toBe(true);
  });
});
