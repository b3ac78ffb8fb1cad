/**
 * Verified (and refused) tokens of one acceptor thread, so a token costs one
 * signature check on first sight and a hash + Map lookup afterwards.
 *
 * - Keyed by the SHA-256 of the token (base64), never the token itself: a
 *   heap dump of the gateway holds no usable bearer token.
 * - Bounded ({@link TokenCache.capacity}); least recently used first out. A
 *   JS Map iterates in insertion order, so "use" = delete + set, and the
 *   oldest entry is the first key.
 * - Entries end at the token's own `exp` (accepted ones) or after
 *   `auth.failedTokenCacheSeconds` (refused ones: a flood of one forged token
 *   costs one check per that period).
 *
 * No JSON is parsed on a hit: the entry holds the verified principal and the
 * parsed `aud` set.
 */
import { hash } from 'node:crypto';
import type { InvalidCredential } from '../../shared/auth/challenge.js';
import type { Principal, ToolFilter } from '../../shared/auth/policy.js';

/** A cached verdict for one token under one provider. */
export type TokenVerdict =
  | {
      readonly ok: true;
      readonly principal: Principal;
      /** `aud` values of the token. */
      readonly audiences: ReadonlySet<string>;
      /** Milliseconds since the epoch after which the token is refused (exp + clock tolerance). */
      readonly expiresAt: number;
      /** Per policy name: the caller's filter (null: no rule matched), computed on first use. */
      readonly decisions: Map<string, ToolFilter | null>;
    }
  | { readonly ok: false; readonly why: InvalidCredential; readonly expiresAt: number };

/** The cache key of a token. */
export function tokenKey(token: string): string {
  return hash('sha256', token, 'base64');
}

/** An LRU map of token verdicts with expiry. */
export class TokenCache {
  private readonly entries = new Map<string, TokenVerdict>();

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.entries.size;
  }

  /** The live verdict of a key (an expired one is dropped), marked as recently used. */
  get(key: string, nowMs: number): TokenVerdict | undefined {
    const v = this.entries.get(key);
    if (v === undefined) return undefined;
    this.entries.delete(key);
    if (v.expiresAt <= nowMs) return undefined;
    this.entries.set(key, v);
    return v;
  }

  set(key: string, verdict: TokenVerdict): void {
    this.entries.delete(key);
    this.entries.set(key, verdict);
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }
}
