/**
 * The process log (issue 13): level names, not numbers; an `err` field
 * serialised from the Error object; asynchronous, buffered writes that are
 * nevertheless all on stdout when the process ends by `process.exit`, by an
 * uncaught exception, or from a worker thread. Each case runs the built
 * logger in a child process and reads its stdout.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOG = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'src', 'shared', 'log.js')).href;
const LINES = 2_000;

/** Runs `body` as an ES module with `createLogger` and `flushLogs` in scope; returns stdout lines and the exit status. */
function run(body: string): { lines: Array<Record<string, unknown>>; status: number | null; stderr: string } {
  const script = `import { createLogger, flushLogs } from ${JSON.stringify(LOG)};\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  const lines = r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { lines, status: r.status, stderr: r.stderr };
}

describe('createLogger', () => {
  it('writes level names and ISO times, and serialises err from the Error object', () => {
    const { lines } = run(`
      const log = createLogger('info', { thread: 'main' });
      const err = Object.assign(new Error('boom', { cause: new Error('root cause') }), { code: 'E_TEST' });
      log.error({ err, route: 'r' }, 'failed');
      log.debug('hidden');
      flushLogs();
    `);
    expect(lines).toHaveLength(1);
    const line = lines[0] as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'error', thread: 'main', route: 'r', msg: 'failed' });
    expect(line['time']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(line['err']).toMatchObject({ type: 'Error', message: expect.stringContaining('boom'), code: 'E_TEST' });
    expect((line['err'] as { stack: string }).stack).toContain('Error: boom');
    expect((line['err'] as { message: string }).message).toContain('root cause');
  });

  it(`loses none of ${LINES} buffered lines when the process calls process.exit right after`, () => {
    const { lines, status } = run(`
      const log = createLogger('info', { thread: 'main' });
      for (let i = 0; i < ${LINES}; i++) log.info({ i }, 'line');
      process.exit(3);
    `);
    expect(status).toBe(3);
    expect(lines.map((l) => l['i'])).toEqual(Array.from({ length: LINES }, (_, i) => i));
  });

  it('writes the lines logged before an uncaught exception', () => {
    const { lines, status, stderr } = run(`
      const log = createLogger('info', { thread: 'main' });
      for (let i = 0; i < ${LINES}; i++) log.info({ i }, 'line');
      setImmediate(() => { throw new Error('crash'); });
    `);
    expect(status).not.toBe(0);
    expect(stderr).toContain('crash');
    expect(lines).toHaveLength(LINES);
  });

  it("flushes a worker thread's lines when the worker ends", () => {
    const { lines } = run(`
      import { Worker } from 'node:worker_threads';
      const code = \`import { createLogger } from ${JSON.stringify(LOG)};
        const log = createLogger('info', { thread: 'shard-0' });
        for (let i = 0; i < ${LINES}; i++) log.info({ i }, 'line');\`;
      new Worker(new URL('data:text/javascript,' + encodeURIComponent(code)));
    `);
    expect(lines.filter((l) => l['thread'] === 'shard-0')).toHaveLength(LINES);
  });

  it('writes a line logged well below the buffer size within the flush interval (no process end needed)', () => {
    const { lines } = run(`
      const log = createLogger('info', { thread: 'main' });
      log.info('alone');
      // Keeps the process alive past the flush interval; stdout is read only at exit, so this is what it wrote by then.
      setTimeout(() => { process.stdout.write(JSON.stringify({ marker: true }) + '\\n'); process.exit(0); }, 1000);
    `);
    // The marker goes out synchronously at the end: 'alone' must already have been written before it by the interval flush.
    expect(lines.map((l) => l['msg'] ?? 'marker')).toEqual(['alone', 'marker']);
  });
});
