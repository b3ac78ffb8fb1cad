/**
 * Static API keys of one provider. The configuration holds only the hex
 * SHA-256 of each key (`keyHashes`, or a `keyHashesFile` re-read when it
 * changes); a presented key is hashed and looked up. The lookup is keyed by
 * the digest, so its timing says nothing useful about any stored key (one
 * would need a SHA-256 preimage), and the final comparison of the digests is
 * `timingSafeEqual` all the same.
 */
import { Buffer } from 'node:buffer';
import { hash, timingSafeEqual } from 'node:crypto';
import { parse as parseYaml } from '../../shared/vendor/yaml.js';
import type { ApiKeyProviderConfig } from '../../shared/auth/config-schema.js';
import type { Principal } from '../../shared/auth/policy.js';
import { WatchedFile, type SecretProblem } from '../../shared/auth/secret-source.js';

type KeyTable = ReadonlyMap<string, { name: string; digest: Buffer }>;

const HEX64 = /^[0-9a-fA-F]{64}$/;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function table(entries: Record<string, unknown>, source: string): KeyTable {
  const out = new Map<string, { name: string; digest: Buffer }>();
  for (const [name, digest] of Object.entries(entries)) {
    if (!NAME.test(name) || typeof digest !== 'string' || !HEX64.test(digest)) {
      throw new Error(`${source}: entry ${JSON.stringify(name.slice(0, 64))} must map a name [A-Za-z0-9_.-] to a hex SHA-256 digest`);
    }
    out.set(digest.toLowerCase(), { name, digest: Buffer.from(digest, 'hex') });
  }
  return out;
}

/** One apiKeys provider. */
export class ApiKeyStore {
  /** Lowercase header the key is read from (`authorization` = `Bearer <key>`). */
  readonly header: string;
  private readonly inline: KeyTable;
  private readonly file: WatchedFile<KeyTable> | null;
  /** Principals by key name, so a request allocates nothing. */
  private readonly principals = new Map<string, Principal>();

  constructor(
    readonly name: string,
    config: ApiKeyProviderConfig,
    secretFileCheckMs: number,
    onProblem: SecretProblem,
  ) {
    this.header = config.header;
    this.inline = table(config.keyHashes ?? {}, `auth.providers.${name}.keyHashes`);
    const path = config.keyHashesFile;
    this.file =
      path === undefined
        ? null
        : new WatchedFile(
            path,
            (text) => {
              const doc: unknown = parseYaml(text, { maxAliasCount: 0 });
              if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error(`${path}: must be a mapping name → digest`);
              return table(doc as Record<string, unknown>, path);
            },
            secretFileCheckMs,
            onProblem,
          );
  }

  /** The caller a key stands for, or null when the key is unknown. */
  lookup(key: string): Principal | null {
    const bytes = hash('sha256', key, 'buffer');
    const digest = bytes.toString('hex');
    const hit = this.inline.get(digest) ?? this.file?.value.get(digest);
    if (hit === undefined || !timingSafeEqual(hit.digest, bytes)) return null;
    let p = this.principals.get(hit.name);
    if (p === undefined) {
      p = Object.freeze({ id: `${this.name}\u0000apikey:${hit.name}`, subject: `apikey:${hit.name}`, provider: this.name, apiKey: hit.name, scopes: new Set<string>(), claims: Object.freeze({}) });
      this.principals.set(hit.name, p);
    }
    return p;
  }

  close(): void {
    this.file?.close();
  }
}
