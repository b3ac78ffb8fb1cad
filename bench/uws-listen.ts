/**
 * Shared start-up of the bench's uWS server processes: listen, print
 * `listening <port>` (the line the harness waits for), close on
 * SIGTERM/SIGINT. `./uws.js` loads uWS through the gateway's loader, which
 * refuses a JavaScript fallback (a baseline measured on it would be meaningless).
 */
import type { TemplatedApp } from 'uWebSockets.js';
import { uWS } from './uws.js';

/** Listens on host:port (0 = any free port) and stays up until a signal. */
export function listenUntilSignal(app: TemplatedApp, host: string, port: number): void {
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
