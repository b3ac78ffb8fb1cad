/**
 * undici, for every module of the gateway: import it from here, never from
 * `undici` itself (test/contract/vendor-bundles.test.ts checks). As with
 * `./typebox.ts`: `npm run build` replaces this module's output with one
 * bundled file (scripts/bundle-vendor.ts), so the main thread (JWKS fetches)
 * and the refresh worker (manifests, Portal) load one module instead of
 * undici's ~110 (ADR-0016).
 */
export { Agent, fetch, request, type Dispatcher } from 'undici';
