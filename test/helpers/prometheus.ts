/**
 * A small Prometheus text-format (0.0.4) reader for asserting on `/metrics`:
 * samples with their labels and values, independent of label order.
 */

/** One sample line. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE_RE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL_RE = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses every sample line; comment and blank lines are skipped. Throws on a line it cannot read. */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = LINE_RE.exec(line);
    if (!m) throw new Error(`unreadable Prometheus line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL_RE)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const raw = m[3] as string;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    samples.push({ name: m[1] as string, labels, value });
  }
  return samples;
}

/** Samples named `name` whose labels include every pair of `labels`. */
export function samplesOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The value of the one sample named `name` with exactly these labels matching, or undefined when absent. */
export function sampleValue(samples: readonly Sample[], name: string, labels: Record<string, string>): number | undefined {
  const found = samplesOf(samples, name, labels);
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples; give more labels`);
  return found[0]?.value;
}
