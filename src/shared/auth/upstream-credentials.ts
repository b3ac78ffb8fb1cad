/**
 * What the gateway presents to an upstream origin (a Tool Service, a
 * manifest endpoint, the Portal): the credential profile whose `origins`
 * list it (`auth.upstream.profiles`), with its static headers (secrets
 * from files — re-read when they change — or the environment) and its TLS
 * material (custom CA, client certificate for mTLS, SNI name).
 *
 * Profiles bind to origins, not to registry entries: the Portal owns only
 * addresses (which Tool Services serve which route), so it can never make
 * the gateway send a secret somewhere the operator did not name. The
 * client's own token is never among the headers (MCP security best
 * practices: no token passthrough); `forwardIdentity` sends only who called.
 *
 * One instance per thread that talks upstream (refresh worker, shards).
 */
import type { AuthConfig, CredentialProfileConfig } from './config-schema.js';
import { SecretText, WatchedFile, type SecretProblem } from './secret-source.js';

/** Header values must stay inside one header line: visible ASCII and tabs/spaces only. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** PEM TLS options (Node `tls.connect` names). */
export interface UpstreamTls {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
}

function pem(text: string): string {
  if (!text.includes('-----BEGIN ')) throw new Error('not a PEM file');
  return text;
}

/** A header value: visible ASCII as is, anything else percent-encoded (it must stay one header line). */
function headerValue(v: string): string {
  return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v);
}

function scalar(v: unknown): string | null {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;
}

function renderIdentity(identityJson: string, claims: readonly string[]): string {
  let id: { sub?: unknown; claims?: Record<string, unknown> };
  try {
    id = JSON.parse(identityJson) as typeof id;
  } catch {
    return '';
  }
  if (typeof id.sub !== 'string') return '';
  let out = `x-mcp-subject: ${headerValue(id.sub)}\r\n`;
  for (const name of claims) {
    const v = id.claims?.[name];
    const text = Array.isArray(v)
      ? v
          .map(scalar)
          .filter((s): s is string => s !== null)
          .join(',')
      : scalar(v);
    if (text !== null && text !== '') out += `x-mcp-claim-${name}: ${headerValue(text)}\r\n`;
  }
  return out;
}

/** One profile as one thread uses it. */
export class OriginCredential {
  /** Names of the identity claims forwarded as `x-mcp-claim-{name}` (Tool Services only); null: no identity is forwarded. */
  readonly forwardClaims: readonly string[] | null;
  private readonly headerSecrets: Array<[string, SecretText]> = [];
  private readonly files: { ca?: WatchedFile<string>; cert?: WatchedFile<string>; key?: WatchedFile<string> } = {};
  private tlsCache: UpstreamTls | null = null;
  private tlsParts: Array<string | undefined> = [];
  private readonly identityMemo = new Map<string, string>();
  private headerCache = '';
  private headerParts: string[] = [];

  constructor(
    readonly profile: string,
    private readonly config: CredentialProfileConfig,
    checkMs: number,
    onProblem: SecretProblem,
  ) {
    this.forwardClaims = config.forwardIdentity?.claims ?? null;
    for (const [name, ref] of Object.entries(config.headers ?? {})) {
      const secret = new SecretText(ref, checkMs, onProblem);
      if (!HEADER_VALUE.test(secret.value)) throw new Error(`auth.upstream.profiles.${profile}.headers.${name}: the value must be one line of visible ASCII`);
      this.headerSecrets.push([name, secret]);
    }
    if (config.caFile !== undefined) this.files.ca = new WatchedFile(config.caFile, pem, checkMs, onProblem);
    if (config.certFile !== undefined) this.files.cert = new WatchedFile(config.certFile, pem, checkMs, onProblem);
    if (config.keyFile !== undefined) this.files.key = new WatchedFile(config.keyFile, pem, checkMs, onProblem);
  }

  /** The static headers with their current values (a value re-read with a line break is skipped, never sent). */
  headers(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const [name, secret] of this.headerSecrets) {
      const v = secret.value;
      if (HEADER_VALUE.test(v)) out.push([name, v]);
    }
    return out;
  }

  /**
   * The headers as HTTP/1.1 header lines (`name: value\r\n` each), for a
   * request head built by hand; re-rendered only when a secret changed, so a
   * call costs a comparison per header.
   */
  headerText(): string {
    let changed = this.headerParts.length !== this.headerSecrets.length;
    for (let i = 0; !changed && i < this.headerSecrets.length; i++) if ((this.headerSecrets[i] as [string, SecretText])[1].value !== this.headerParts[i]) changed = true;
    if (changed) {
      this.headerParts = this.headerSecrets.map(([, s]) => s.value);
      this.headerCache = this.headers()
        .map(([n, v]) => `${n}: ${v}\r\n`)
        .join('');
    }
    return this.headerCache;
  }

  /**
   * `x-mcp-subject` and `x-mcp-claim-{name}` header lines for a caller
   * identity (`CallRequest.identity` JSON), or '' when the profile does not
   * forward identity. Values outside visible ASCII are percent-encoded; array
   * claims are joined with `,`; object claims are not sent. Rendered once per
   * distinct identity (bounded memo).
   */
  identityText(identityJson: string): string {
    if (this.forwardClaims === null) return '';
    let text = this.identityMemo.get(identityJson);
    if (text === undefined) {
      text = renderIdentity(identityJson, this.forwardClaims);
      if (this.identityMemo.size >= 1024) this.identityMemo.clear();
      this.identityMemo.set(identityJson, text);
    }
    return text;
  }

  /**
   * Current TLS options, or null when the profile sets none. The same object
   * is returned until a file changes, so a caller can rebuild its connection
   * pool only when the identity changes.
   */
  tls(): UpstreamTls | null {
    const parts = [this.files.ca?.value, this.files.cert?.value, this.files.key?.value, this.config.serverName];
    if (parts.every((p) => p === undefined)) return null;
    if (this.tlsCache === null || parts.some((p, i) => p !== this.tlsParts[i])) {
      this.tlsParts = parts;
      const [ca, cert, key, servername] = parts;
      this.tlsCache = { ...(ca !== undefined ? { ca } : {}), ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}), ...(servername !== undefined ? { servername } : {}) };
    }
    return this.tlsCache;
  }

  close(): void {
    for (const [, s] of this.headerSecrets) s.close();
    for (const f of Object.values(this.files)) f.close();
  }
}

/** Every profile of `auth.upstream.profiles`, looked up by origin. */
export class UpstreamCredentials {
  private readonly byOrigin = new Map<string, OriginCredential>();
  private readonly all: OriginCredential[] = [];

  /** Reads every secret now: a missing file or variable stops the thread's start with a message naming it. */
  constructor(auth: AuthConfig, onProblem: SecretProblem) {
    for (const [name, profile] of Object.entries(auth.upstream.profiles)) {
      const cred = new OriginCredential(name, profile, auth.secretFileCheckMs, onProblem);
      this.all.push(cred);
      for (const origin of profile.origins) this.byOrigin.set(origin, cred);
    }
  }

  /** The profile for an absolute URL's origin, or null. */
  forUrl(url: string): OriginCredential | null {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      return null;
    }
    return this.byOrigin.get(origin) ?? null;
  }

  /** The profile for an origin (`scheme://host[:port]`), or null. */
  forOrigin(origin: string): OriginCredential | null {
    return this.byOrigin.get(origin) ?? null;
  }

  close(): void {
    for (const c of this.all) c.close();
  }
}
