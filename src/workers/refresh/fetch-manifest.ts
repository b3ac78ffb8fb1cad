/**
 * Fetching a Tool Service's manifest (on http-get.ts, which the Portal
 * client shares): timeout, size limit, JSON, and conditional requests
 * with `If-None-Match`. Every failure is a GatewayError with a stable code
 * that names the Tool Service and the URL. Used by the refresh worker; the
 * validate → merge → encode steps live in manifest.ts, merge.ts and
 * snapshot/layout.ts.
 */
import type { ServiceEntry } from '../../shared/config/schema.js';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import { conditionalGet, failureText, type GetAnswer } from './http-get.js';
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
  let answer: GetAnswer;
  try {
    answer = await conditionalGet(url, options.etag, options);
  } catch (err) {
    throw unreachable(failureText(err, options.timeoutMs, `larger than catalog.maxManifestBytes (${options.maxBytes})`));
  }
  if (answer.status === 304 && options.etag !== null) return { kind: 'not-modified' };
  if (answer.status !== 200) throw unreachable(`HTTP ${answer.status}`);
  try {
    return { kind: 'manifest', manifest: JSON.parse(answer.text) as unknown, etag: answer.etag };
  } catch {
    throw new GatewayError(GatewayErrorCode.ManifestInvalid, `Tool Service "${entry.id}" manifest at ${url}: body is not JSON`);
  }
}

/** The manifest URL of an entry (`manifestPath` defaults to `/manifest`). */
export function manifestUrl(entry: ServiceEntry): string {
  return entry.baseUrl.replace(/\/$/, '') + (entry.manifestPath ?? '/manifest');
}
