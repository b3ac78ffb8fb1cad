/**
 * Secrets referenced by the configuration (`{file}` or `{env}`), read once
 * at start and — for files — again whenever the file changes (a rotated
 * Kubernetes Secret is an atomic symlink swap: its stat changes). Change
 * detection is `fs.watchFile` (stat polling on libuv's thread pool every
 * `auth.secretFileCheckMs`), so no thread that serves requests ever blocks on
 * the file system after start.
 *
 * A re-read that fails (file gone, unparsable) keeps the last good value
 * and reports the problem once; the secret text itself is never logged.
 * Instances belong to the thread that created them; `close()` stops watching.
 */
import { readFileSync, unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { SecretRef } from './config-schema.js';

/** Reports a secret that could not be (re)read; `what` names the source, never its content. */
export type SecretProblem = (what: string, message: string) => void;

/** A value derived from a secret file, kept current. */
export class WatchedFile<T> {
  private current: T;
  private closed = false;
  private readonly listener = (curr: Stats, prev: Stats): void => {
    if (curr.mtimeMs === prev.mtimeMs && curr.ino === prev.ino && curr.size === prev.size) return;
    void this.reload();
  };

  /**
   * Reads `path` now (throws when it cannot: a start with a missing secret
   * fails loudly) and then watches it.
   */
  constructor(
    readonly path: string,
    private readonly parse: (text: string) => T,
    checkMs: number,
    private readonly onProblem: SecretProblem,
  ) {
    this.current = parse(readFileSync(path, 'utf8'));
    watchFile(path, { interval: checkMs, persistent: false }, this.listener);
  }

  /** The last good value. */
  get value(): T {
    return this.current;
  }

  /** Re-reads now (also what a detected change does). */
  async reload(): Promise<void> {
    try {
      const next = this.parse(await readFile(this.path, 'utf8'));
      if (this.closed) return;
      this.current = next;
    } catch (err) {
      this.onProblem(`file ${this.path}`, `${(err as Error).message.split('\n')[0]}; the last good value stays in use`);
    }
  }

  close(): void {
    this.closed = true;
    unwatchFile(this.path, this.listener);
  }
}

/** A secret string from a file (trailing newline trimmed) or an environment variable. */
export class SecretText {
  private readonly file: WatchedFile<string> | null;
  private readonly fixed: string;

  constructor(ref: SecretRef, checkMs: number, onProblem: SecretProblem, env: Readonly<Record<string, string | undefined>> = process.env) {
    if ('file' in ref) {
      this.file = new WatchedFile(ref.file, (text) => text.replace(/\r?\n$/, ''), checkMs, onProblem);
      this.fixed = '';
    } else {
      const value = env[ref.env];
      if (value === undefined) throw new Error(`environment variable ${ref.env} is not set`);
      this.file = null;
      this.fixed = value;
    }
  }

  get value(): string {
    return this.file === null ? this.fixed : this.file.value;
  }

  close(): void {
    this.file?.close();
  }
}
