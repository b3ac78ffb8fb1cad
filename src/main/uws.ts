/**
 * Loads uWebSockets.js natively, or refuses to run. Used by every thread that
 * serves HTTP (acceptor 0 on the main thread, extra acceptor threads) and by
 * the bench servers.
 *
 * Two builds ship as dependencies (ADR-0001); the first that loads as native
 * code for the running Node ABI and libc wins:
 *
 * ```
 *   package name             build                                      loads on
 *   uWebSockets.js           @btc-vision/uwebsockets.js 20.57.0         Node 20/22/24/25, glibc >= 2.38   (supported)
 *   uWebSockets.js-legacy    @trufflesuite/uws-js-unofficial 20.30.0    Node 16/18/20, glibc >= 2.28      (legacy)
 * ```
 *
 * The legacy package, when its binary does not load (Node 22+), silently
 * returns a JavaScript polyfill on which the gateway "listens" but answers
 * `/health/live` 404 and every MCP POST 405. So each candidate is checked for
 * native functions, and when none is native the gateway throws
 * `RUNTIME_UNSUPPORTED` naming Node, ABI, glibc and the fix — it never
 * listens on a polyfill. `UWS_USE_FALLBACK=1` (the legacy package's switch
 * that forces its polyfill) is honoured the same way: only builds that have a
 * polyfill are tried, so setting it always ends in that refusal.
 *
 * `UWS_HTTP_MAX_HEADERS_SIZE` is read by uWS 20.57 once per process, in a
 * static initialiser that runs when the addon is first loaded (dlopen); worker
 * threads share that loaded addon. So {@link loadUws} writes it into the
 * environment before the first `require`, and the first thread to load uWS —
 * the main thread in the gateway, because acceptor 0 lives there — decides it
 * for the process. (A worker's `process.env` is a private copy; writing it
 * there would not reach the addon.) The legacy build has no such setting.
 *
 * The module binding {@link uWS} is live: importers write `uWS.App()` as with
 * the package itself, after their thread called {@link loadUws}.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { GatewayError, GatewayErrorCode } from '../shared/errors.js';

/** The uWebSockets.js API (types of the 20.57 `index.d.ts`; the legacy build offers the subset the gateway uses). */
export type UwsModule = typeof import('uWebSockets.js');

/** Settings that must be fixed before uWS is loaded. */
export interface UwsSettings {
  /** `server.maxHeaderBytes`: largest request header block, as `UWS_HTTP_MAX_HEADERS_SIZE`. */
  maxHeaderBytes: number;
}

/** Which build serves, and what it made of the settings. */
export interface UwsBuild {
  /** Dependency name in package.json (`uWebSockets.js` or `uWebSockets.js-legacy`). */
  readonly packageName: string;
  /** Published package name and version, e.g. `@btc-vision/uwebsockets.js@20.57.0`. */
  readonly release: string;
  /** `supported` (20.57) or `legacy` (20.30, Node 20 on glibc < 2.38). */
  readonly role: 'supported' | 'legacy';
  /** Header block limit in force; `null` when the build ignores the setting (legacy: 4 KiB for a block split across reads, none otherwise). */
  readonly maxHeaderBytes: number | null;
}

interface Candidate {
  packageName: string;
  role: UwsBuild['role'];
  /** Whether the package reads `UWS_HTTP_MAX_HEADERS_SIZE`. */
  honoursHeaderSize: boolean;
  /** Whether the package has a polyfill that `UWS_USE_FALLBACK` selects. */
  hasPolyfill: boolean;
}

const CANDIDATES: readonly Candidate[] = [
  { packageName: 'uWebSockets.js', role: 'supported', honoursHeaderSize: true, hasPolyfill: false },
  { packageName: 'uWebSockets.js-legacy', role: 'legacy', honoursHeaderSize: false, hasPolyfill: true },
];

/** The values the legacy package's `uws.js` treats as "use the polyfill". */
const FALLBACK_FLAG_VALUES = new Set(['1', 'true', 'True', 'TRUE']);

/** Functions the gateway calls directly; all must be native. */
const REQUIRED_FUNCTIONS = ['App', 'us_listen_socket_close', 'us_socket_local_port'] as const;

const require = createRequire(import.meta.url);

const NOT_LOADED = new Proxy({} as UwsModule, {
  get(_target, key) {
    throw new Error(`uWebSockets.js used (${String(key)}) before loadUws() on this thread`);
  },
});

/** The loaded uWebSockets.js of this thread (live binding, valid after {@link loadUws}). */
// A mutable export on purpose: ESM bindings are live, so `uWS.App()` call sites read the loaded module.
export let uWS: UwsModule = NOT_LOADED;
let loaded: UwsBuild | null = null;
let loadedSettings: UwsSettings | null = null;

/** True when `mod` is a uWS binding whose entry points are compiled code, not the JavaScript polyfill. */
export function isNativeUws(mod: unknown): boolean {
  if (typeof mod !== 'object' || mod === null) return false;
  return REQUIRED_FUNCTIONS.every((name) => {
    const fn = (mod as Record<string, unknown>)[name];
    // A native function's source text is `function App() { [native code] }`; the polyfill's is its JavaScript.
    return typeof fn === 'function' && /\{\s*\[native code\]\s*\}\s*$/.test(Function.prototype.toString.call(fn));
  });
}

/** Node version, ABI, platform and glibc, as the refusal message and startup log name them. */
export function runtimeDescription(): string {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  const libc = header?.glibcVersionRuntime ? `glibc ${header.glibcVersionRuntime}` : 'no glibc (musl or non-Linux)';
  return `Node ${process.version} (ABI ${process.versions.modules}) on ${process.platform}-${process.arch}, ${libc}`;
}

/**
 * Loads the first native build (idempotent per thread) and returns which one.
 * Throws `RUNTIME_UNSUPPORTED` when none is native, and `CONFIG_INVALID` when
 * called again on this thread with different settings (uWS reads them once).
 */
export function loadUws(settings: UwsSettings): UwsBuild {
  if (loaded !== null && loadedSettings !== null) {
    if (loadedSettings.maxHeaderBytes !== settings.maxHeaderBytes) {
      throw new GatewayError(
        GatewayErrorCode.ConfigInvalid,
        `server.maxHeaderBytes cannot change within one process: uWebSockets.js was loaded with ${loadedSettings.maxHeaderBytes}, now ${settings.maxHeaderBytes} is asked for`,
      );
    }
    return loaded;
  }
  // Before the first require: the addon's static initialiser reads it (see the file comment).
  process.env['UWS_HTTP_MAX_HEADERS_SIZE'] = String(settings.maxHeaderBytes);
  const fallbackForced = FALLBACK_FLAG_VALUES.has(process.env['UWS_USE_FALLBACK'] ?? '');
  const failures: string[] = [];
  for (const candidate of CANDIDATES) {
    if (fallbackForced && !candidate.hasPolyfill) {
      failures.push(`${candidate.packageName}: skipped, UWS_USE_FALLBACK is set and this build has no polyfill`);
      continue;
    }
    let mod: unknown;
    try {
      mod = require(candidate.packageName);
    } catch (err) {
      failures.push(`${candidate.packageName}: ${firstLine(err)}`);
      continue;
    }
    if (!isNativeUws(mod)) {
      const why = fallbackForced ? 'UWS_USE_FALLBACK is set' : 'it has no native binary for this Node ABI and libc';
      failures.push(`${candidate.packageName}: only its JavaScript polyfill loaded (${why})`);
      continue;
    }
    uWS = mod as UwsModule;
    loadedSettings = { ...settings };
    loaded = Object.freeze({
      packageName: candidate.packageName,
      release: releaseOf(candidate.packageName),
      role: candidate.role,
      maxHeaderBytes: candidate.honoursHeaderSize ? settings.maxHeaderBytes : null,
    });
    return loaded;
  }
  throw new GatewayError(
    GatewayErrorCode.RuntimeUnsupported,
    `no native uWebSockets.js build loads on ${runtimeDescription()}, and the gateway does not run on uWS's JavaScript polyfill:\n` +
      failures.map((f) => `  - ${f}\n`).join('') +
      `Fix: run Node 24 LTS (or 22) on a host with glibc >= 2.38 (Debian 13, Ubuntu 24.04, a trixie-slim image), ` +
      `or Node 20 where glibc is older (the legacy build)${fallbackForced ? ', and unset UWS_USE_FALLBACK' : ''}. ` +
      `See docs/decisions/0001-uwebsockets-package.md.`,
    failures,
  );
}

/** The build loaded on this thread, or `null` before {@link loadUws}. */
export function loadedUwsBuild(): UwsBuild | null {
  return loaded;
}

/** `name@version` from the package's own package.json (read from disk: the 20.57 `exports` map hides it from `require`). */
function releaseOf(packageName: string): string {
  const entry = require.resolve(packageName);
  // The entry is `<pkg>/uws.js` (20.57) or `<pkg>/src/uws.js` (legacy).
  for (let dir = dirname(entry), i = 0; i < 2; dir = dirname(dir), i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (typeof pkg.name === 'string' && typeof pkg.version === 'string') return `${pkg.name}@${pkg.version}`;
    } catch {
      // Not this directory: the entry file may sit in a subfolder (legacy: src/uws.js).
    }
  }
  return `${packageName}@unknown`;
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  // 20.57 prefixes the dlopen error with a paragraph; keep the part naming the cause.
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines[lines.length - 1]?.trim() ?? text;
}
