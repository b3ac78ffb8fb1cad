/**
 * TypeBox, for every module of the gateway: import it from here, never from
 * `typebox` itself (test/contract/vendor-bundles.test.ts checks).
 *
 * Why: `typebox` 1.x ships as ~700 small ES modules, and every thread that
 * imports them (main, each shard, the refresh worker, extra acceptors) keeps
 * a module record, namespace and compiled code per file. Three threads
 * importing the package unbundled cost +56 MB RSS over none, bundled +14 MB
 * (ADR-0016). `npm run build` replaces this module's output in `dist` with
 * one bundled file (scripts/bundle-vendor.ts); the sources and the tests
 * that run them keep the package's own modules, which behave the same.
 */
export { Type, type Static } from 'typebox';
export { Compile, type Validator } from 'typebox/compile';
export { Format } from 'typebox/format';
