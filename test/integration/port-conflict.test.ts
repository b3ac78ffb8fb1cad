/**
 * A port already in use is a start error naming `server.port` (issue 13:
 * "a second gateway silently shares the port"; acceptors use SO_REUSEPORT,
 * so without the check a second gateway joins the first one's port).
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { assertPortAvailable } from '../../dist/src/main/port-check.js';
import { GatewayError } from '../../dist/src/shared/errors.js';
import { httpRequest, startTestGateway, type Gateway } from '../helpers/gateway.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function plainListener(host: string, port = 0): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => resolve());
  });
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}

function portOf(server: Server): number {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('not a TCP server');
  return address.port;
}

async function rejection(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (err) {
    if (GatewayError.is(err)) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

const target = (host: string, port: number) => ({ host, port, hostKey: 'server.host', portKey: 'server.port' });

describe('a second gateway on the same port', () => {
  it('is refused at start, naming server.port, and the first keeps serving alone', async () => {
    const first: Gateway = await startTestGateway({});
    cleanups.push(() => first.close(0));
    const err = await rejection(startTestGateway({ server: { port: first.port } }, { waitForInitialLoad: false }));
    expect(err.code).toBe('LISTEN_FAILED');
    expect(err.message).toContain('server.port');
    expect(err.message).toContain(`127.0.0.1:${first.port}`);
    expect(err.message).toContain('EADDRINUSE');
    const live = await httpRequest(first, '/health/live');
    expect(live.status).toBe(200);
  });
});

describe('assertPortAvailable', () => {
  it('refuses a port held by any process, naming the key and EADDRINUSE', async () => {
    const port = portOf(await plainListener('127.0.0.1'));
    const err = await rejection(assertPortAvailable(target('127.0.0.1', port)));
    expect(err.code).toBe('LISTEN_FAILED');
    expect(err.message).toMatch(new RegExp(`^server\\.port: 127\\.0\\.0\\.1:${port} is already in use by another process \\(EADDRINUSE\\)`));
  });

  it('refuses a wildcard bind over a port held on a specific address', async () => {
    const port = portOf(await plainListener('127.0.0.1'));
    expect((await rejection(assertPortAvailable(target('0.0.0.0', port)))).message).toContain('EADDRINUSE');
  });

  it('names server.host when the address is not local', async () => {
    // 192.0.2.1 is TEST-NET-1: never assigned to this machine; nothing is sent.
    const err = await rejection(assertPortAvailable(target('192.0.2.1', 8080)));
    expect(err.message).toMatch(/^server\.host: 192\.0\.2\.1 is not an address of this machine \(EADDRNOTAVAIL\)/);
  });

  it('names the keys it is given (the admin listener reuses the check)', async () => {
    const port = portOf(await plainListener('127.0.0.1'));
    const err = await rejection(assertPortAvailable({ host: '127.0.0.1', port, hostKey: 'server.admin.host', portKey: 'server.admin.port' }));
    expect(err.message).toMatch(/^server\.admin\.port: /);
  });

  it('passes on a free port and leaves it free', async () => {
    const probe = await plainListener('127.0.0.1');
    const port = portOf(probe);
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    await assertPortAvailable(target('127.0.0.1', port));
    expect(portOf(await plainListener('127.0.0.1', port))).toBe(port);
  });

  it('does nothing for port 0 (the kernel picks a free port)', async () => {
    await expect(assertPortAvailable(target('192.0.2.1', 0))).resolves.toBeUndefined();
  });
});
