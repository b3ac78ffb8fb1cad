/**
 * A copy of the configuration that is safe to print (`--check-config`, logs):
 *
 * - a key whose name says it is a secret (a word of {@link SECRET_KEY_WORDS}
 *   at the end of the name, any case: `password`, `clientSecret`, `apiKeys`,
 *   `bearerToken`, …) has its whole value replaced, whatever its type;
 * - every string that is a URL with credentials (`redis://:pw@redis:6379`)
 *   keeps everything but the userinfo, and query parameters whose names are
 *   secret words lose their values (`?password=…`, `?token=…`).
 *
 * Today no key is a secret by name; `redis.url`, `catalog.portal.url` and the
 * Tool Service `baseUrl`s may carry credentials. Keys added later (the
 * authentication work: JWT secrets, API keys, upstream headers) are covered by
 * their names; a secret key whose name does not end in one of the words is
 * added to {@link SECRET_KEY_WORDS} or renamed.
 */

/** Name endings that mark a key as a secret (matched case-insensitively against the key name). */
export const SECRET_KEY_WORDS: readonly string[] = Object.freeze([
  'password',
  'passphrase',
  'secret',
  'secrets',
  'token',
  'tokens',
  'apiKey',
  'apiKeys',
  'privateKey',
  'credentials',
  'authorization',
  'cookie',
  'keyHashes',
]);

/** What a redacted value is replaced with. */
export const REDACTED = '<redacted>';

const secretName = new RegExp(`(?:${SECRET_KEY_WORDS.join('|')})$`, 'i');
const urlWithUserinfo = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^@/?#]*@/;

/** True when a key of this name holds a secret. */
export function isSecretKey(name: string): boolean {
  return secretName.test(name);
}

/** A deep copy of `value` with secrets replaced by {@link REDACTED} (see the module header). */
export function redactConfig(value: unknown): unknown {
  if (typeof value === 'string') return redactUrl(value);
  if (Array.isArray(value)) return value.map((v) => redactConfig(v));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      Object.defineProperty(out, k, { value: isSecretKey(k) ? REDACTED : redactConfig(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/** `scheme://user:pw@host/…?token=x` → `scheme://<redacted>@host/…?token=<redacted>`; other strings unchanged. */
function redactUrl(text: string): string {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) return text;
  let out = text.replace(urlWithUserinfo, `$1${REDACTED}@`);
  const q = out.indexOf('?');
  if (q >= 0) {
    const hash = out.indexOf('#', q);
    const end = hash >= 0 ? hash : out.length;
    const query = out
      .slice(q + 1, end)
      .split('&')
      .map((pair) => {
        const eq = pair.indexOf('=');
        const name = eq >= 0 ? pair.slice(0, eq) : pair;
        return eq >= 0 && isSecretKey(safeDecode(name)) ? `${name}=${REDACTED}` : pair;
      })
      .join('&');
    out = `${out.slice(0, q + 1)}${query}${out.slice(end)}`;
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
