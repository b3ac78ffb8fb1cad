/**
 * Shared start-up of the bench's uWS server processes: refuse to run on a
 * JavaScript fallback, listen, print `listening <port>` (the line the harness
 * waits for), close on SIGTERM/SIGINT.
 */
import uWS, { type TemplatedApp } from 'uWebSockets.js';

/**
 * Exits with a clear message unless uWS loaded its native addon: a uWS
 * build without a binary for this Node silently falls back to a slow
 * JavaScript implementation, and a baseline measured on it is meaningless.
 */
export function requireNativeUws(): void {
  if (!Function.prototype.toString.call(uWS.App).includes('[native code]')) {
    console.error(`uWebSockets.js has no native build for node ${process.version} (ABI ${process.versions.modules}); refusing to serve on its JavaScript fallback`);
    process.exit(1);
  }
}

/** Listens on host:port (0 = any free port) and stays up until a signal. */
export function listenUntilSignal(app: TemplatedApp, host: string, port: number): void {
  requireNativeUws();
  app.listen(host, port, (listenSocket) => {
    if (listenSocket === false) {
      console.error(`cannot listen on ${host}:${port}`);
      process.exit(1);
    }
    console.log(`listening ${uWS.us_socket_local_port(listenSocket)}`);
    const stop = (): void => {
      uWS.us_listen_socket_close(listenSocket);
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
