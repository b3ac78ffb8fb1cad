/**
 * Fetching a Tool Service's manifest (and, with the same bounded reader, the
 * Portal's registry): timeout, size limit, JSON, and conditional requests
 * with `If-None-Match`. Every failure is a GatewayError with a stable code
 * that names the Tool Service and the URL. Used by the refresh worker; the
 * validate → merge → encode steps live in manifest.ts, merge.ts and
 * snapshot/layout.ts.
 */
import { request } from '../../shared/vendor/undici.js';
import type { ServiceEntry } from '../../shared/config/schema.js';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import type { RefreshUpstreamAuth } from './upstream-auth.js';

/** What a conditional manifest fetch produced. */
export type ManifestFetch = { kind: 'not-modified' } | { kind: 'manifest'; manifest: unknown; etag: string | null };

/**
 * GET `{baseUrl}{manifestPath}` with a timeout and a size limit; the body
 * must be JSON. Sends `If-None-Match: etag` when one is known: a Tool Service
 * that answers 304 costs no download, parse or validation.
 */
export async function fetchManifestIfChanged(entry: ServiceEntry, options: { timeoutMs: number; maxBytes: number; etag: string | null; upstreamAuth?: RefreshUpstreamAuth }): Promise<ManifestFetch> {
  const url = manifestUrl(entry);
  const unreachable = (why: string): GatewayError => new GatewayError(GatewayErrorCode.ManifestUnreachable, `Tool Service "${entry.id}" manifest at ${url}: ${why}`);
  let text: string;
  let etag: string | null;
  try {
    // The Tool Service origin's credential profile (auth.upstream.profiles): headers, CA, client certificate.
    const auth = options.upstreamAuth?.forUrl(url);
    const res = await request(url, {
      method: 'GET',
      headers: { ...auth?.headers, accept: 'application/json', ...(options.etag !== null ? { 'if-none-match': options.etag } : {}) },
      signal: AbortSignal.timeout(options.timeoutMs),
      ...(auth?.dispatcher !== undefined ? { dispatcher: auth.dispatcher } : {}),
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
