/**
 * Hand-off micro-bench (`node dist/bench/ring.js`, ~20 s with defaults): the
 * cost of carrying a small frame from one thread to another and back, for
 * the three hand-offs the acceptor ↔ shard path can use:
 *
 *  - `ring`     the SPSC SharedArrayBuffer ring (src/shared/threads/ring.ts),
 *               one per direction; the echo copies each request into the answer ring;
 *  - `post`     one `postMessage` per frame with its ArrayBuffer transferred, both ways;
 *  - `batched`  frames appended to a buffer that is transferred once per
 *               event-loop turn (`setImmediate`), both ways (as frames.ts does today).
 *
 * The main thread keeps K frames in flight (K = 1: latency; K = 64: the
 * per-frame cost under load) against an echo worker, and reports per round
 * trip: wall µs and process CPU µs (all threads, `process.cpuUsage`). Modes
 * are interleaved within each repetition (order alternating) and medians are
 * reported with ratios to `ring` — the machine may be busy, so compare
 * within one run, not across runs.
 *
 * Knobs: BENCH_FRAME_BYTES (64), BENCH_REPEATS (3), BENCH_ROUNDTRIPS_1
 * (20000: round trips at 1 in flight), BENCH_ROUNDTRIPS_64 (200000).
 * The same file is the echo worker's script.
 */
import { once } from 'node:events';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createRing, RingReader, RingWriter, type RingMemory } from '../src/shared/threads/ring.js';

const MODES = ['ring', 'post', 'batched'] as const;
type Mode = (typeof MODES)[number];
const WINDOWS = [1, 64] as const;

interface EchoData {
  mode: Mode;
  requests: RingMemory;
  answers: RingMemory;
}

/** A batch on the wire: `[u32 length][bytes]…` in `buffer[0, length)`. */
interface BatchMessage {
  buffer: ArrayBuffer;
  length: number;
}

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: expected a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** Appends length-prefixed frames; `take()` hands the buffer over (to be transferred) and starts a new one. */
class Batch {
  private buf = new ArrayBuffer(64 * 1024);
  private bytes = new Uint8Array(this.buf);
  private view = new DataView(this.buf);
  private len = 0;

  push(src: Uint8Array, start: number, length: number): void {
    if (this.len + 4 + length > this.buf.byteLength) this.grow(this.len + 4 + length);
    this.view.setUint32(this.len, length, true);
    this.bytes.set(src.subarray(start, start + length), this.len + 4);
    this.len += 4 + length;
  }

  private grow(atLeast: number): void {
    let size = this.buf.byteLength * 2;
    while (size < atLeast) size *= 2;
    const next = new ArrayBuffer(size);
    new Uint8Array(next).set(this.bytes.subarray(0, this.len));
    this.buf = next;
    this.bytes = new Uint8Array(next);
    this.view = new DataView(next);
  }

  get empty(): boolean {
    return this.len === 0;
  }

  take(): BatchMessage {
    const out = { buffer: this.buf, length: this.len };
    this.buf = new ArrayBuffer(64 * 1024);
    this.bytes = new Uint8Array(this.buf);
    this.view = new DataView(this.buf);
    this.len = 0;
    return out;
  }
}

function forEachFrame(msg: BatchMessage, fn: (bytes: Uint8Array, start: number, length: number) => void): void {
  const view = new DataView(msg.buffer, 0, msg.length);
  const bytes = new Uint8Array(msg.buffer);
  for (let o = 0; o < msg.length; ) {
    const n = view.getUint32(o, true);
    fn(bytes, o + 4, n);
    o += 4 + n;
  }
}

/** Echo worker: sends every frame back the way it came. */
function echo(port: NonNullable<typeof parentPort>, data: EchoData): void {
  switch (data.mode) {
    case 'ring': {
      const w = new RingWriter(data.answers, { maxBacklogBytes: Infinity });
      const r = new RingReader(data.requests, (buf, off, len) => {
        const to = w.reserve(len);
        buf.copy(w.buf, to, off, off + len);
        w.commit();
      });
      port.on('message', () => {
        r.close();
        w.close();
        port.close();
      });
      break;
    }
    case 'post':
      port.on('message', (msg: ArrayBuffer | 'stop') => {
        if (msg === 'stop') port.close();
        else port.postMessage(msg, [msg]);
      });
      break;
    case 'batched': {
      const out = new Batch();
      let scheduled = false;
      const flush = (): void => {
        scheduled = false;
        const msg = out.take();
        port.postMessage(msg, [msg.buffer]);
      };
      port.on('message', (msg: BatchMessage | 'stop') => {
        if (msg === 'stop') {
          port.close();
          return;
        }
        forEachFrame(msg, (bytes, start, length) => out.push(bytes, start, length));
        if (!scheduled && !out.empty) {
          scheduled = true;
          setImmediate(flush);
        }
      });
      break;
    }
  }
}

interface Sample {
  wallMicros: number;
  cpuMicros: number;
}

/** Runs `warmup` then `roundTrips` round trips with `window` frames in flight; per-round-trip figures of the measured part. */
async function run(mode: Mode, window: number, roundTrips: number, frameBytes: number): Promise<Sample> {
  const requests = createRing(1 << 20);
  const answers = createRing(1 << 20);
  const worker = new Worker(new URL(import.meta.url), { workerData: { mode, requests, answers } satisfies EchoData });
  await once(worker, 'online');
  const frame = Buffer.alloc(frameBytes, 0x61);
  const warmup = Math.min(roundTrips, 5000);
  const total = warmup + roundTrips;
  let sent = 0;
  let answered = 0;
  let t0 = 0n;
  let cpu0: NodeJS.CpuUsage = { user: 0, system: 0 };
  let resolveDone: (s: Sample) => void = () => undefined;
  const done = new Promise<Sample>((resolve) => {
    resolveDone = resolve;
  });
  const onAnswer = (): boolean => {
    answered++;
    if (answered === warmup) {
      t0 = process.hrtime.bigint();
      cpu0 = process.cpuUsage();
    }
    if (answered === total) {
      const wall = Number(process.hrtime.bigint() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      resolveDone({ wallMicros: wall / roundTrips, cpuMicros: (cpu.user + cpu.system) / roundTrips });
      return false;
    }
    return sent < total;
  };

  let stop: () => void;
  switch (mode) {
    case 'ring': {
      const w = new RingWriter(requests, { maxBacklogBytes: Infinity });
      const send = (): void => {
        const off = w.reserve(frameBytes);
        frame.copy(w.buf, off);
        w.commit();
        sent++;
      };
      const r = new RingReader(answers, () => {
        if (onAnswer()) send();
      });
      for (let i = 0; i < window; i++) send();
      stop = () => {
        r.close();
        w.close();
      };
      break;
    }
    case 'post': {
      const send = (): void => {
        const ab = new ArrayBuffer(frameBytes);
        new Uint8Array(ab).set(frame);
        worker.postMessage(ab, [ab]);
        sent++;
      };
      worker.on('message', () => {
        if (onAnswer()) send();
      });
      for (let i = 0; i < window; i++) send();
      stop = () => undefined;
      break;
    }
    case 'batched': {
      const out = new Batch();
      let scheduled = false;
      const flush = (): void => {
        scheduled = false;
        const msg = out.take();
        worker.postMessage(msg, [msg.buffer]);
      };
      const send = (): void => {
        out.push(frame, 0, frameBytes);
        sent++;
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      };
      worker.on('message', (msg: BatchMessage) => {
        forEachFrame(msg, () => {
          if (onAnswer()) send();
        });
      });
      for (let i = 0; i < window; i++) send();
      stop = () => undefined;
      break;
    }
  }
  const sample = await done;
  stop();
  worker.postMessage('stop');
  await once(worker, 'exit');
  return sample;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

async function main(): Promise<void> {
  const frameBytes = envInt('BENCH_FRAME_BYTES', 64);
  const repeats = envInt('BENCH_REPEATS', 3);
  const roundTrips: Record<(typeof WINDOWS)[number], number> = { 1: envInt('BENCH_ROUNDTRIPS_1', 20_000), 64: envInt('BENCH_ROUNDTRIPS_64', 200_000) };
  const samples = new Map<string, Sample[]>();
  for (let rep = 0; rep < repeats; rep++) {
    const order = rep % 2 === 0 ? MODES : [...MODES].reverse();
    for (const window of WINDOWS) {
      for (const mode of order) {
        const s = await run(mode, window, roundTrips[window], frameBytes);
        const key = `${mode}/${window}`;
        samples.set(key, [...(samples.get(key) ?? []), s]);
        process.stderr.write(`rep ${rep + 1} ${key}: ${s.wallMicros.toFixed(2)} µs wall, ${s.cpuMicros.toFixed(2)} µs CPU per round trip\n`);
      }
    }
  }
  const lines = [
    `Hand-off round trip, ${frameBytes}-byte frames, median of ${repeats} (Node ${process.version}; the machine may be busy: compare ratios within this run)`,
    '',
    '| in flight | mode | wall µs / round trip | × ring | CPU µs / round trip | × ring |',
    '|---:|---|---:|---:|---:|---:|',
  ];
  for (const window of WINDOWS) {
    const ring = samples.get(`ring/${window}`) ?? [];
    const ringWall = median(ring.map((s) => s.wallMicros));
    const ringCpu = median(ring.map((s) => s.cpuMicros));
    for (const mode of MODES) {
      const mine = samples.get(`${mode}/${window}`) ?? [];
      const wall = median(mine.map((s) => s.wallMicros));
      const cpu = median(mine.map((s) => s.cpuMicros));
      lines.push(`| ${window} | ${mode} | ${wall.toFixed(2)} | ${(wall / ringWall).toFixed(2)} | ${cpu.toFixed(2)} | ${(cpu / ringCpu).toFixed(2)} |`);
    }
  }
  process.stdout.write(lines.join('\n') + '\n');
}

if (isMainThread) {
  await main();
} else if (parentPort !== null) {
  echo(parentPort, workerData as EchoData);
}
