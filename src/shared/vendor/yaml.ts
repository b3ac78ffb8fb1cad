/**
 * yaml, for every module of the gateway: import it from here, never from
 * `yaml` itself (test/contract/vendor-bundles.test.ts checks). As with
 * `./typebox.ts`: `npm run build` replaces this module's output with one
 * bundled file (scripts/bundle-vendor.ts), so the main thread (config, API key
 * files) and the refresh worker load one module instead of the package's ~70
 * (ADR-0016).
 */
export { parse, stringify } from 'yaml';
