import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FastCounter, FastHistogram } from '../../../src/shared/fast-metrics.js';
import type { MetricObjectJson } from '../../../src/shared/metrics-types.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];
const OBSERVATIONS: Array<[string, string, number]> = [
  ['core', 'tools/call', 0.0004],
  ['core', 'tools/call', 0.001], // on a bucket bound: counted in that bucket (le)
  ['core', 'tools/list', 0.05],
  ['process', 'tools/call', 7],
  ['core', 'tools/call', 0.3],
];

/** Text exposition of one thread's metrics through the aggregator the gateway uses on scrape. */
async function text(metrics: MetricObjectJson[]): Promise<string> {
  return AggregatorRegistry.aggregate([metrics] as never).metrics();
}

describe('fast metrics', () => {
  it('export what prom-client exports for the same observations (histogram and counter)', async () => {
    const registry = new Registry();
    const ph = new Histogram({ name: 'd_seconds', help: 'h', labelNames: ['route', 'method'], buckets: BUCKETS, registers: [registry] });
    const pc = new Counter({ name: 'r_total', help: 'c', labelNames: ['route', 'method', 'outcome'], registers: [registry] });
    const fh = new FastHistogram('d_seconds', 'h', ['route', 'method'], BUCKETS);
    const fc = new FastCounter('r_total', 'c', ['route', 'method', 'outcome']);
    for (const [route, method, v] of OBSERVATIONS) {
      ph.labels(route, method).observe(v);
      pc.labels(route, method, 'ok').inc();
      fh.observe(fh.slot(route, method), v);
      fc.inc(fc.slot(route, method, 'ok'));
    }
    fc.inc(fc.slot('core', 'tools/call', 'ok'), 2);
    pc.labels('core', 'tools/call', 'ok').inc(2);
    expect(await text([fh.toJson(), fc.toJson()])).toBe(await text(await registry.getMetricsAsJSON()));
  });

  it('aggregates across threads like prom-client metrics (sums per label set)', async () => {
    const a = new FastCounter('x_total', 'x', ['k']);
    const b = new FastCounter('x_total', 'x', ['k']);
    a.inc(a.slot('one'));
    b.inc(b.slot('one'), 4);
    b.inc(b.slot('two'));
    const out = await AggregatorRegistry.aggregate([[a.toJson()], [b.toJson()]] as never).metrics();
    expect(out).toContain('x_total{k="one"} 5');
    expect(out).toContain('x_total{k="two"} 1');
  });

  it('finds the same slot for the same labels and a new one otherwise', () => {
    const c = new FastCounter('y_total', 'y', ['a', 'b']);
    const s1 = c.slot('p', 'q');
    expect(c.slot('p', 'q')).toBe(s1);
    expect(c.slot('p', 'r')).not.toBe(s1);
    expect(c.slot('q', 'p')).not.toBe(s1);
    expect(() => new FastCounter('z', 'z', ['a', 'b', 'c', 'd'])).toThrow(/1 to 3 labels/);
  });
});
