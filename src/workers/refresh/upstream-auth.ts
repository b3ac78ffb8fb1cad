/**
 * Credentials on the refresh worker's undici requests (Portal registry,
 * Tool Service manifests): the origin's profile headers, and an undici
 * `Agent` whose `connect` options carry the profile's TLS material (custom
 * CA, client certificate and key for mTLS, SNI). The agent is rebuilt when a
 * TLS file changes (the old one is closed once its requests finish).
 */
import { Agent, type Dispatcher } from '../../shared/vendor/undici.js';
import type { UpstreamCredentials, UpstreamTls } from '../../shared/auth/upstream-credentials.js';

/** What a request to one URL needs: headers to add and the dispatcher to use (undefined: undici's global one). */
export interface RequestAuth {
  headers: Record<string, string>;
  dispatcher: Dispatcher | undefined;
}

const NONE: RequestAuth = Object.freeze({ headers: Object.freeze({}) as Record<string, string>, dispatcher: undefined });

/** The refresh worker's view of `auth.upstream.profiles`. */
export class RefreshUpstreamAuth {
  private readonly agents = new Map<string, { tls: UpstreamTls; agent: Agent }>();

  constructor(private readonly credentials: UpstreamCredentials) {}

  /** Headers and dispatcher for a request to `url`. */
  forUrl(url: string): RequestAuth {
    const cred = this.credentials.forUrl(url);
    if (cred === null) return NONE;
    const headers = Object.fromEntries(cred.headers());
    const tls = cred.tls();
    if (tls === null) return { headers, dispatcher: undefined };
    let entry = this.agents.get(cred.profile);
    if (entry === undefined || entry.tls !== tls) {
      if (entry !== undefined) void entry.agent.close();
      entry = { tls, agent: new Agent({ connect: { ...tls } }) };
      this.agents.set(cred.profile, entry);
    }
    return { headers, dispatcher: entry.agent };
  }

  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((e) => e.agent.close()));
    this.credentials.close();
  }
}
