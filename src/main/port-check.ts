/**
 * Refuses to start on a port another process already listens on.
 *
 * Acceptors listen with SO_REUSEPORT (so several acceptor threads share one
 * port), and the kernel lets *any* other SO_REUSEPORT socket of the same user
 * join: a stale gateway left running would silently take a share of the
 * connections (issue 13: 3 of 10 requests went to it and got 503). uWS's
 * `listen` also reports failure only as `false`, without the errno.
 *
 * So before uWS listens, a plain `net` server (SO_REUSEADDR only, never
 * SO_REUSEPORT) binds the same host:port and closes again. The kernel refuses
 * that bind with EADDRINUSE while any socket listens there — reuseport or not,
 * wildcard or specific address, IPv4 or dual-stack IPv6 — and otherwise says
 * what is wrong (EACCES, EADDRNOTAVAIL, an unresolvable host), which becomes
 * a `LISTEN_FAILED` error naming the config keys.
 *
 * Window: between this probe's close and uWS's bind (the same event-loop
 * turn plus the listen call, microseconds) another process could still take
 * the port; a plain listener would then make uWS's listen fail, and only a
 * second gateway starting in that same instant could join. The case that
 * matters — an instance already running — is always caught. Port 0 asks the
 * kernel for a free port, so there is nothing to check.
 */
import { createServer } from 'node:net';
import { GatewayError, GatewayErrorCode } from '../shared/errors.js';

/** The address to check and the config keys to name in the error. */
export interface ListenTarget {
  host: string;
  port: number;
  /** Config key of the host, e.g. `server.host`. */
  hostKey: string;
  /** Config key of the port, e.g. `server.port`. */
  portKey: string;
}

/**
 * Resolves when nothing listens on `host:port` and this process may bind it;
 * rejects with `GatewayError(LISTEN_FAILED)` naming the key and the cause.
 */
export async function assertPortAvailable(target: ListenTarget): Promise<void> {
  const { host, port } = target;
  if (port === 0) return;
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      // exclusive: never hand the bind to a cluster primary; plain SO_REUSEADDR socket.
      probe.listen({ host, port, exclusive: true }, () => resolve());
    });
  } catch (err) {
    throw listenError(target, err as NodeJS.ErrnoException);
  }
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** `GatewayError(LISTEN_FAILED)` naming the key and the cause of a failed bind/listen. */
export function listenError(target: ListenTarget, err: NodeJS.ErrnoException): GatewayError {
  const { host, port, hostKey, portKey } = target;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const code = err.code ?? 'unknown error';
  let text: string;
  switch (code) {
    case 'EADDRINUSE':
      text =
        `${portKey}: ${address} is already in use by another process (EADDRINUSE). ` +
        `Another gateway would silently share it through SO_REUSEPORT, so the start is refused: stop the other process or choose another ${portKey}.`;
      break;
    case 'EACCES':
      text = `${portKey}: no permission to listen on ${address} (EACCES); ports below 1024 need CAP_NET_BIND_SERVICE — use a port from 1024 up.`;
      break;
    case 'EADDRNOTAVAIL':
      text = `${hostKey}: ${host} is not an address of this machine (EADDRNOTAVAIL); use one of its addresses, 0.0.0.0 or ::.`;
      break;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      text = `${hostKey}: ${host} does not resolve (${code}).`;
      break;
    default:
      text = `${hostKey}/${portKey}: cannot listen on ${address} (${code}: ${err.message}).`;
  }
  return new GatewayError(GatewayErrorCode.ListenFailed, text, [text]);
}
