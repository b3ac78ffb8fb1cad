/**
 * The bench servers' uWebSockets.js: the gateway's own loader (first native
 * build, never the polyfill) with the gateway's default header limit, so a
 * bench server and the gateway always run the same build on the same Node.
 * Loading happens when this module is first imported.
 */
import { loadUws, uWS } from '../src/main/uws.js';
import { DEFAULTS } from '../src/shared/config/defaults.js';

loadUws({ maxHeaderBytes: DEFAULTS.server.maxHeaderBytes });

export { uWS };
