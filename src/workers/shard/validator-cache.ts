/**
 * Compiled argument validators shared by all routes of one shard, keyed by
 * the schema's JSON text and reference-counted by the route runtimes that
 * use them. A catalog swap that does not change a tool's `inputSchema`
 * (a new description, another tool added) reuses the compiled validator, and
 * a validator is compiled only when its tool is first called: swapping 50
 * catalogs a second compiles nothing that is not used.
 */
import { Compile, type Validator } from 'typebox/compile';

interface Entry {
  schema: Record<string, unknown>;
  validator: Validator | null;
  refs: number;
}

/** One per shard thread. */
export class ValidatorCache {
  private readonly entries = new Map<string, Entry>();

  /** Registers a use of `schema`; returns its key for {@link validator} and {@link release}. */
  retain(schema: Record<string, unknown>): string {
    const key = JSON.stringify(schema);
    const entry = this.entries.get(key);
    if (entry) entry.refs++;
    else this.entries.set(key, { schema, validator: null, refs: 1 });
    return key;
  }

  /** The compiled validator for a retained key, compiled on first use. */
  validator(key: string): Validator {
    const entry = this.entries.get(key);
    if (entry === undefined) throw new Error('validator requested for a schema that is not retained');
    if (entry.validator === null) {
      entry.validator = Compile(entry.schema) as unknown as Validator;
    }
    return entry.validator;
  }

  /** Drops a use; the validator is freed with its last user. */
  release(key: string): void {
    const entry = this.entries.get(key);
    if (entry !== undefined && --entry.refs <= 0) this.entries.delete(key);
  }

}
