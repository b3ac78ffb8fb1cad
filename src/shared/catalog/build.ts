/**
 * The catalog build: fetch each Tool Service's manifest → validate → merge
 * per route → encode the snapshot. It runs once at start in static mode and
 * is the unit the refresh worker runs on every cycle. Routes are built
 * independently: one route's failure never stops another's (SPEC §9 defect 1).
 */
import { request, type Dispatcher } from 'undici';
import type { GatewayConfig, ServiceEntry } from '../config/schema.js';
import { GatewayError, GatewayErrorCode } from '../errors.js';
import { encodeSnapshot } from '../snapshot/layout.js';
import { validateManifest, type ManifestPolicy } from './manifest.js';
import { mergeRoute, type ServiceTools } from './merge.js';
import type { CatalogSource, RouteCatalog } from './types.js';

/** What building one route produced. */
export type RouteBuildResult =
  | { routeKey: string; ok: true; catalog: RouteCatalog; snapshot: SharedArrayBuffer }
  | { routeKey: string; ok: false; code: GatewayErrorCode; reason: string };

/** Fetches one Tool Service's manifest as parsed JSON; throws GatewayError(MANIFEST_UNREACHABLE) on failure. */
export type ManifestFetcher = (entry: ServiceEntry) => Promise<unknown>;

/** Everything a build needs besides the routes. */
export interface BuildContext {
  fetchManifest: ManifestFetcher;
  policy: ManifestPolicy;
  maxToolsPerRoute: number;
  source: CatalogSource;
}

/** The build context the config describes, fetching manifests over HTTP with `dispatcher`. */
export function buildContextFromConfig(config: GatewayConfig, source: CatalogSource, dispatcher?: Dispatcher): BuildContext {
  return {
    fetchManifest: (entry) =>
      fetchManifest(entry, { timeoutMs: config.catalog.manifestTimeoutMs, maxBytes: config.catalog.maxManifestBytes, dispatcher }),
    policy: {
      defaultTimeoutMs: config.tools.defaultTimeoutMs,
      maxTimeoutMs: config.tools.maxTimeoutMs,
      allowedExecutionOrigins: config.tools.allowedExecutionOrigins,
    },
    maxToolsPerRoute: config.catalog.maxToolsPerRoute,
    source,
  };
}

/** Builds every route; the result has one entry per route, in input order. */
export async function buildRoutes(
  routes: Readonly<Record<string, readonly ServiceEntry[]>>,
  ctx: BuildContext,
): Promise<RouteBuildResult[]> {
  return Promise.all(Object.entries(routes).map(([routeKey, entries]) => buildRoute(routeKey, entries, ctx)));
}

/** Builds one route; never throws: every failure becomes `{ok: false}` with its code. */
export async function buildRoute(routeKey: string, entries: readonly ServiceEntry[], ctx: BuildContext): Promise<RouteBuildResult> {
  try {
    const services = await Promise.all(entries.map((entry) => loadServiceTools(entry, ctx)));
    const catalog = mergeRoute(routeKey, services, { maxToolsPerRoute: ctx.maxToolsPerRoute, source: ctx.source });
    return { routeKey, ok: true, catalog, snapshot: encodeSnapshot(catalog) };
  } catch (err) {
    if (GatewayError.is(err)) return { routeKey, ok: false, code: err.code, reason: err.message };
    return { routeKey, ok: false, code: GatewayErrorCode.ManifestInvalid, reason: String(err) };
  }
}

async function loadServiceTools(entry: ServiceEntry, ctx: BuildContext): Promise<ServiceTools> {
  const raw = await ctx.fetchManifest(entry);
  const result = validateManifest(raw, entry, ctx.policy);
  if (!result.ok) {
    throw new GatewayError(
      GatewayErrorCode.ManifestInvalid,
      `Tool Service "${entry.id}" manifest is invalid: ${result.problems.join('; ')}`,
      result.problems,
    );
  }
  return { serviceId: entry.id, tools: result.tools };
}

/** GET `{baseUrl}{manifestPath}` with a timeout and a size limit; the body must be JSON. */
export async function fetchManifest(
  entry: ServiceEntry,
  options: { timeoutMs: number; maxBytes: number; dispatcher?: Dispatcher | undefined },
): Promise<unknown> {
  const result = await fetchManifestIfChanged(entry, { ...options, etag: null });
  return result.kind === 'manifest' ? result.manifest : undefined;
}

/** What a conditional manifest fetch produced. */
export type ManifestFetch = { kind: 'not-modified' } | { kind: 'manifest'; manifest: unknown; etag: string | null };

/**
 * Like {@link fetchManifest}, sending `If-None-Match: etag` when one is known:
 * a Tool Service that answers 304 costs no download, parse or validation.
 */
export async function fetchManifestIfChanged(
  entry: ServiceEntry,
  options: { timeoutMs: number; maxBytes: number; etag: string | null; dispatcher?: Dispatcher | undefined },
): Promise<ManifestFetch> {
  const url = manifestUrl(entry);
  const unreachable = (why: string): GatewayError =>
    new GatewayError(GatewayErrorCode.ManifestUnreachable, `Tool Service "${entry.id}" manifest at ${url}: ${why}`);
  let text: string;
  let etag: string | null;
  try {
    const res = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json', ...(options.etag !== null ? { 'if-none-match': options.etag } : {}) },
      signal: AbortSignal.timeout(options.timeoutMs),
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    if (res.statusCode === 304 && options.etag !== null) {
      await res.body.dump();
      return { kind: 'not-modified' };
    }
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw unreachable(`HTTP ${res.statusCode}`);
    }
    const header = res.headers['etag'];
    etag = typeof header === 'string' ? header : null;
    text = await readLimited(res.body, options.maxBytes, () => unreachable(`larger than catalog.maxManifestBytes (${options.maxBytes})`));
  } catch (err) {
    if (GatewayError.is(err)) throw err;
    const e = err as Error & { code?: string };
    throw unreachable(e.name === 'TimeoutError' ? `timed out after ${options.timeoutMs} ms` : (e.code ?? e.message));
  }
  try {
    return { kind: 'manifest', manifest: JSON.parse(text) as unknown, etag };
  } catch {
    throw new GatewayError(GatewayErrorCode.ManifestInvalid, `Tool Service "${entry.id}" manifest at ${url}: body is not JSON`);
  }
}

/** The manifest URL of an entry (`manifestPath` defaults to `/manifest`). */
export function manifestUrl(entry: ServiceEntry): string {
  return entry.baseUrl.replace(/\/$/, '') + (entry.manifestPath ?? '/manifest');
}

/** Reads a stream to text, failing as soon as it passes `maxBytes` (no unbounded buffering). */
export async function readLimited(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, maxBytes: number, tooLarge: () => Error): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
