/**
 * Credentials on the refresh worker's GETs (Portal registry, Tool Service
 * manifests; http-get.ts): the origin's profile headers, and an `https`
 * agent that carries the profile's TLS material (custom CA, client
 * certificate and key for mTLS, SNI). The agent is rebuilt when a TLS file
 * changes: the old one's idle sockets close at once; a request still running
 * on it finishes, and its socket closes once idle (the agents' 4 s timeout).
 */
import { Agent } from 'node:https';
import type { UpstreamCredentials, UpstreamTls } from '../../shared/auth/upstream-credentials.js';
import { KEEP_ALIVE_AGENT_OPTIONS } from './http-get.js';

/** What a request to one URL needs: headers to add and the `https` agent to use (undefined: the default one). */
export interface RequestAuth {
  headers: Readonly<Record<string, string>>;
  agent: Agent | undefined;
}

const NONE: RequestAuth = Object.freeze({ headers: Object.freeze({}) as Record<string, string>, agent: undefined });

/** The refresh worker's view of `auth.upstream.profiles`. */
export class RefreshUpstreamAuth {
  private readonly agents = new Map<string, { tls: UpstreamTls; agent: Agent }>();

  constructor(private readonly credentials: UpstreamCredentials) {}

  /** Headers and agent for a request to `url`. */
  forUrl(url: string): RequestAuth {
    const cred = this.credentials.forUrl(url);
    if (cred === null) return NONE;
    const headers = Object.fromEntries(cred.headers());
    const tls = cred.tls();
    if (tls === null) return { headers, agent: undefined };
    let entry = this.agents.get(cred.profile);
    if (entry === undefined || entry.tls !== tls) {
      if (entry !== undefined) closeIdleSockets(entry.agent);
      entry = { tls, agent: new Agent({ ...KEEP_ALIVE_AGENT_OPTIONS, ...tls }) };
      this.agents.set(cred.profile, entry);
    }
    return { headers, agent: entry.agent };
  }
}

/** `agent.destroy()` would also cut the requests running on it. */
function closeIdleSockets(agent: Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}
