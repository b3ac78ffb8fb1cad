/**
 * The uWebSockets.js loader (src/main/uws.ts): native code or nothing, the
 * right build for this runtime, settings fixed once per process.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/shared/errors.js';
import { isNativeUws, loadedUwsBuild, loadUws, runtimeDescription, uWS } from '../../../src/main/uws.js';
import { expectedUwsPackage } from '../../helpers/runtime.js';

const require = createRequire(import.meta.url);

describe('isNativeUws', () => {
  it('accepts the loaded build and rejects the legacy package’s JavaScript polyfill', () => {
    loadUws({ maxHeaderBytes: 16 * 1024 });
    expect(isNativeUws(uWS)).toBe(true);
    // What the legacy package returns on Node 22+ or with UWS_USE_FALLBACK: its dist/ polyfill.
    const polyfill: unknown = require('uWebSockets.js-legacy/dist/index.js');
    expect(typeof (polyfill as { App?: unknown }).App).toBe('function');
    expect(isNativeUws(polyfill)).toBe(false);
  });

  it('rejects values that are not a uWS binding, or that mix native and JavaScript entry points', () => {
    expect(isNativeUws(null)).toBe(false);
    expect(isNativeUws('uWS')).toBe(false);
    expect(isNativeUws({})).toBe(false);
    const { App, us_listen_socket_close } = uWS;
    expect(isNativeUws({ App, us_listen_socket_close, us_socket_local_port: () => 0 })).toBe(false);
    expect(isNativeUws({ App, us_listen_socket_close })).toBe(false);
  });
});

describe('loadUws', () => {
  it('loads the build this runtime should get', () => {
    const build = loadUws({ maxHeaderBytes: 16 * 1024 });
    expect(build.packageName).toBe(expectedUwsPackage());
    expect(build.release).toMatch(build.role === 'supported' ? /^@btc-vision\/uwebsockets\.js@20\.57\.0$/ : /^@trufflesuite\/uws-js-unofficial@20\.30\.0/);
    // The header limit reaches only the build that reads it.
    expect(build.maxHeaderBytes).toBe(build.role === 'supported' ? 16 * 1024 : null);
    expect(process.env['UWS_HTTP_MAX_HEADERS_SIZE']).toBe('16384');
  });

  it('is idempotent, and refuses a different header limit once uWS is loaded (uWS reads it once per process)', () => {
    const first = loadUws({ maxHeaderBytes: 16 * 1024 });
    expect(loadUws({ maxHeaderBytes: 16 * 1024 })).toBe(first);
    expect(loadedUwsBuild()).toBe(first);
    let caught: unknown;
    try {
      loadUws({ maxHeaderBytes: 32 * 1024 });
    } catch (err) {
      caught = err;
    }
    expect(GatewayError.is(caught) && caught.code).toBe('CONFIG_INVALID');
    expect(String((caught as Error).message)).toMatch(/server\.maxHeaderBytes cannot change within one process.*16384.*32768/);
  });
});

describe('runtimeDescription', () => {
  it('names Node version, ABI and libc', () => {
    const glibc = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
    const text = runtimeDescription();
    expect(text).toContain(`Node ${process.version} (ABI ${process.versions.modules})`);
    expect(text).toContain(glibc ? `glibc ${glibc}` : 'no glibc');
  });
});
