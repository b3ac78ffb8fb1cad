/**
 * prom-client, for every module of the gateway: import it from here, never
 * from `prom-client` itself (test/contract/vendor-bundles.test.ts checks). As
 * with `./typebox.ts`: `npm run build` replaces this module's output with one
 * bundled file (scripts/bundle-vendor.ts), so every thread loads one module
 * instead of prom-client's ~30 and the ~45 of the `@opentelemetry/api` it
 * requires for exemplars (ADR-0016).
 */
export { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
