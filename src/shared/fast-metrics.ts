/**
 * Counters and histograms for the per-request hot path: an update is a few
 * array writes, found through nested label maps (no string concatenation,
 * no label hashing, no allocation once a label set exists). They are turned
 * into prom-client's JSON form only when scraped, so they aggregate across
 * threads (`AggregatorRegistry.aggregate`) exactly like prom-client metrics.
 * Measured on the acceptor thread: recording one request with prom-client
 * label children cost ~3.7 µs; with these, well under a microsecond.
 *
 * Storage per label set: a counter keeps one number; a histogram keeps one
 * count per bucket (not cumulative — made cumulative at export), the sum and
 * the count.
 */
import type { MetricObjectJson } from './metrics-types.js';

/**
 * Finds (or creates) the slot of a label-value tuple through one Map per
 * label, up to three labels; no array is built unless the tuple is new.
 */
class LabelIndex {
  private readonly root = new Map<string, unknown>();
  readonly tuples: string[][] = [];

  constructor(private readonly depth: number) {
    if (depth < 1 || depth > 3) throw new RangeError(`1 to 3 labels are supported, got ${depth}`);
  }

  /** `isNew` is set when the last call created the slot. */
  isNew = false;

  slot(a: string, b: string, c: string): number {
    this.isNew = false;
    let node = this.root;
    if (this.depth > 1) node = this.level(node, a);
    if (this.depth > 2) node = this.level(node, b);
    const last = this.depth === 1 ? a : this.depth === 2 ? b : c;
    const found = node.get(last) as number | undefined;
    if (found !== undefined) return found;
    const slot = this.tuples.length;
    this.tuples.push([a, b, c].slice(0, this.depth));
    node.set(last, slot);
    this.isNew = true;
    return slot;
  }

  private level(node: Map<string, unknown>, key: string): Map<string, unknown> {
    let next = node.get(key) as Map<string, unknown> | undefined;
    if (next === undefined) {
      next = new Map();
      node.set(key, next);
    }
    return next;
  }
}

function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  names.forEach((n, i) => {
    out[n] = values[i] as string;
  });
  return out;
}

/** A counter with a fixed list of label names. */
export class FastCounter {
  private readonly index: LabelIndex;
  private readonly values: number[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    this.index = new LabelIndex(labelNames.length);
  }

  /** The slot of a label set, given in `labelNames` order (unused trailing arguments are ignored). */
  slot(a: string, b = '', c = ''): number {
    const s = this.index.slot(a, b, c);
    if (this.index.isNew) this.values[s] = 0;
    return s;
  }

  /** Adds `by` to the slot's value. */
  inc(slot: number, by = 1): void {
    this.values[slot] = (this.values[slot] as number) + by;
  }

  /** prom-client's JSON form. */
  toJson(): MetricObjectJson {
    const values = this.index.tuples.map((t, s) => ({ value: this.values[s] as number, labels: labelsOf(this.labelNames, t) }));
    return { name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' } as unknown as MetricObjectJson;
  }
}

/** A histogram with fixed buckets and a fixed list of label names. */
export class FastHistogram {
  private readonly index: LabelIndex;
  /** Per slot: one count per bucket plus the +Inf bucket. */
  private readonly buckets: Float64Array[] = [];
  private readonly sums: number[] = [];
  private readonly counts: number[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    this.index = new LabelIndex(labelNames.length);
  }

  /** The slot of a label set, given in `labelNames` order (unused trailing arguments are ignored). */
  slot(a: string, b = '', c = ''): number {
    const s = this.index.slot(a, b, c);
    if (this.index.isNew) {
      this.buckets[s] = new Float64Array(this.bounds.length + 1);
      this.sums[s] = 0;
      this.counts[s] = 0;
    }
    return s;
  }

  /** Records one observation. */
  observe(slot: number, value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] as number)) i++;
    const counts = this.buckets[slot] as Float64Array;
    counts[i] = (counts[i] as number) + 1;
    this.sums[slot] = (this.sums[slot] as number) + value;
    this.counts[slot] = (this.counts[slot] as number) + 1;
  }

  /** prom-client's JSON form (cumulative buckets, `le` first, then `_sum` and `_count`). */
  toJson(): MetricObjectJson {
    const values: Array<{ value: number; metricName: string; labels: Record<string, string | number> }> = [];
    this.index.tuples.forEach((t, s) => {
      const labels = labelsOf(this.labelNames, t);
      const counts = this.buckets[s] as Float64Array;
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += counts[i] as number;
        values.push({ value: cumulative, metricName: `${this.name}_bucket`, labels: { le, ...labels } });
      });
      cumulative += counts[this.bounds.length] as number;
      values.push({ value: cumulative, metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels } });
      values.push({ value: this.sums[s] as number, metricName: `${this.name}_sum`, labels });
      values.push({ value: this.counts[s] as number, metricName: `${this.name}_count`, labels });
    });
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' } as unknown as MetricObjectJson;
  }
}
