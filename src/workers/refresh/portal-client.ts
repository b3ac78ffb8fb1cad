/**
 * Reads the Portal registry document with `If-None-Match`: an unchanged
 * registry costs one 304. Runs on the refresh worker only; the Portal is
 * never on the request path.
 */
import { request } from '../../shared/vendor/undici.js';
import { readLimited } from './fetch-manifest.js';
import { GatewayError, GatewayErrorCode } from '../../shared/errors.js';
import type { RefreshUpstreamAuth } from './upstream-auth.js';

/** What one poll of the Portal produced. */
export type PortalPoll = { kind: 'unchanged' } | { kind: 'document'; document: unknown; etag: string | null };

/** Polls one Portal URL, remembering the last ETag. */
export class PortalClient {
  private etag: string | null = null;

  constructor(private readonly options: { url: string; timeoutMs: number; maxBytes: number; upstreamAuth?: RefreshUpstreamAuth }) {}

  /** Forgets the ETag (the next poll fetches the whole document), e.g. after a suspect document. */
  resetEtag(): void {
    this.etag = null;
  }

  /** Fetches the registry; throws PORTAL_UNREACHABLE (network, status, size) or PORTAL_INVALID (not JSON). */
  async poll(): Promise<PortalPoll> {
    const { url, timeoutMs, maxBytes } = this.options;
    const fail = (why: string): GatewayError => new GatewayError(GatewayErrorCode.PortalUnreachable, `Portal ${url}: ${why}`);
    let text: string;
    let etag: string | null;
    try {
      // The Portal origin's credential profile (auth.upstream.profiles): headers, CA, client certificate.
      const auth = this.options.upstreamAuth?.forUrl(url);
      const res = await request(url, {
        method: 'GET',
        headers: { ...auth?.headers, accept: 'application/json', ...(this.etag !== null ? { 'if-none-match': this.etag } : {}) },
        signal: AbortSignal.timeout(timeoutMs),
        ...(auth?.dispatcher !== undefined ? { dispatcher: auth.dispatcher } : {}),
      });
      if (res.statusCode === 304 && this.etag !== null) {
        await res.body.dump();
        return { kind: 'unchanged' };
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        throw fail(`HTTP ${res.statusCode}`);
      }
      const header = res.headers['etag'];
      etag = typeof header === 'string' ? header : null;
      text = await readLimited(res.body, maxBytes, () => fail(`document larger than catalog.portal.maxBytes (${maxBytes})`));
    } catch (err) {
      if (GatewayError.is(err)) throw err;
      const e = err as Error & { code?: string };
      throw fail(e.name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : (e.code ?? e.message));
    }
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      throw new GatewayError(GatewayErrorCode.PortalInvalid, `Portal ${url}: the registry document is not JSON`);
    }
    this.etag = etag;
    return { kind: 'document', document, etag };
  }
}
