/**
 * Reads the Portal registry document with `If-None-Match`: an unchanged
 * registry costs one 304. Runs on the refresh worker only; the Portal is
 * never on the request path.
 */
import { conditionalGet, failureText, type GetAnswer } from './http-get.js';
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
    let answer: GetAnswer;
    try {
      answer = await conditionalGet(url, this.etag, this.options);
    } catch (err) {
      throw fail(failureText(err, timeoutMs, `document larger than catalog.portal.maxBytes (${maxBytes})`));
    }
    if (answer.status === 304 && this.etag !== null) return { kind: 'unchanged' };
    if (answer.status !== 200) throw fail(`HTTP ${answer.status}`);
    let document: unknown;
    try {
      document = JSON.parse(answer.text);
    } catch {
      throw new GatewayError(GatewayErrorCode.PortalInvalid, `Portal ${url}: the registry document is not JSON`);
    }
    this.etag = answer.etag;
    return { kind: 'document', document, etag: answer.etag };
  }
}
