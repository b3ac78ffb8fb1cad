/**
 * jose, for every module of the gateway: import it from here, never from
 * `jose` itself (test/contract/vendor-bundles.test.ts checks). Like
 * `./typebox.ts`: `jose` ships as ~50 ES modules that each acceptor thread
 * would load one by one (+6.6 MB RSS unbundled against the bundle in a fresh
 * process, ADR-0016); `npm run build` replaces this module's output with one
 * bundled file (scripts/bundle-vendor.ts).
 */
export { createLocalJWKSet, createRemoteJWKSet, customFetch, decodeJwt, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
