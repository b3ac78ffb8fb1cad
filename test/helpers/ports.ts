/** The one free-port helper of the tests. */
import { createServer } from 'node:net';

/**
 * A TCP port on `host` that was just bound and released: nothing listens on
 * it (a refused connection), and a server started right after can take it.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('freePort: unexpected listen address');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}

/** `http://127.0.0.1:<port>` on which nothing listens: a Tool Service that refuses connections. */
export async function closedOrigin(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}
