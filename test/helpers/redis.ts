/**
 * A real `redis-server` per test file, on a free port it picks, with no
 * persistence; killed in `stop()`. `.ci/run` installs redis-server when the
 * machine lacks it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { waitUntil } from './eventually.js';
import { freePort } from './ports.js';

/** A running redis-server. */
export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (as a crash would, SIGKILL when `crash`). */
  stop(crash?: boolean): Promise<void>;
  /** Starts it again on the same port (after `stop`). */
  restart(): Promise<void>;
}

/** True when something accepts TCP connections on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts redis-server on a free 127.0.0.1 port. */
export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitUntil(() => accepts(port), `redis-server listens on ${port}`, 5_000, 25);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop(crash = false) {
      const c = child;
      if (c === null || c.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
      c.kill(crash ? 'SIGKILL' : 'SIGTERM');
      await exited;
      child = null;
    },
    restart: start,
  };
}
