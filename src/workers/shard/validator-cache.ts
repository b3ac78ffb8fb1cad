/**
 * Compiled argument validators shared by all routes of one shard, keyed by
 * the schema's JSON text and reference-counted by the route runtimes that
 * use them. A catalog swap that does not change a tool's `inputSchema`
 * (a new description, another tool added) reuses the compiled validator, and
 * a validator is compiled only when its tool is first called: swapping 50
 * catalogs a second compiles nothing that is not used.
 *
 * Schema regexes run on the linear-time engine (ADR-0010): compiling and
 * building error lists happen inside {@link withLinearPatterns}.
 */
import { Compile, type Validator } from '../../shared/vendor/typebox.js';
import { withLinearPatterns } from './linear-patterns.js';

/** What a tool call needs from a compiled argument validator. */
export interface ArgumentValidator {
  Check(value: unknown): boolean;
  Errors(value: unknown): ReturnType<Validator['Errors']>;
}

interface Entry {
  schema: Record<string, unknown>;
  validator: ArgumentValidator | null;
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

  /**
   * The compiled validator for a retained key, compiled on first use. Throws
   * `UnsafePatternError` for a schema whose pattern cannot run in linear time
   * (only a snapshot built before that rule existed can carry one).
   */
  validator(key: string): ArgumentValidator {
    const entry = this.entries.get(key);
    if (entry === undefined) throw new Error('validator requested for a schema that is not retained');
    if (entry.validator === null) {
      entry.validator = compileArgumentValidator(entry.schema);
    }
    return entry.validator;
  }

  /** Drops a use; the validator is freed with its last user. */
  release(key: string): void {
    const entry = this.entries.get(key);
    if (entry !== undefined && --entry.refs <= 0) this.entries.delete(key);
  }
}

/** Compiles `schema` with its regexes on the linear-time engine; throws `UnsafePatternError` when one cannot be. */
export function compileArgumentValidator(schema: Record<string, unknown>): ArgumentValidator {
  const compiled = withLinearPatterns(() => Compile(schema) as unknown as Validator);
  // Without code generation (--disallow-code-generation-from-strings) TypeBox checks dynamically and builds regexes per call.
  const check = compiled.IsAccelerated() ? (value: unknown) => compiled.Check(value) : (value: unknown) => withLinearPatterns(() => compiled.Check(value));
  return { Check: check, Errors: (value: unknown) => withLinearPatterns(() => compiled.Errors(value)) };
}
