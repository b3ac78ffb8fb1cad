/**
 * A structural check that a manifest's `inputSchema`/`outputSchema` is a JSON
 * Schema (draft 2020-12 vocabulary) rather than something that merely looks
 * like one: known `type` names, compilable `pattern`s, well-formed
 * `properties` / `required` / `items` / combinators. A schema that silently
 * validates nothing (a misspelt type) must be refused at catalog build, naming
 * the tool, not discovered later at call time.
 *
 * Cheap and recursive, so it can run for every tool of every route on every
 * refresh; the shard compiles the validator only when a snapshot is installed.
 *
 * For an `inputSchema` (the schema the gateway runs on client arguments)
 * every `pattern` and `patternProperties` key must also translate to the
 * linear-time engine (ADR-0010), and its `$ref`s must resolve and must not
 * loop ({@link refProblems}).
 */
import { shortPointer } from './json-depth.js';
import { linearPatternProblem } from './linear-regexp.js';
import { refProblems } from './schema-refs.js';

const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const;
const SCHEMA_VALUES = ['additionalProperties', 'items', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'] as const;
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
const NON_NEGATIVE_INTS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'] as const;
const NUMBERS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'] as const;
const MAX_DEPTH = 64;

/** What to check beyond the structure. */
export interface SchemaCheckOptions {
  /** The gateway validates arguments with this schema: patterns must run in linear time, `$ref`s must resolve and not loop. */
  validatesArguments?: boolean;
}

/** The problems of a schema, each with its JSON pointer inside the schema; empty when it is fine. */
export function jsonSchemaProblems(schema: unknown, options: SchemaCheckOptions = {}): string[] {
  const problems = structureProblems(schema, '', 0, options.validatesArguments === true);
  if (problems.length === 0 && options.validatesArguments === true) problems.push(...refProblems(schema));
  return problems;
}

function structureProblems(schema: unknown, at: string, depth: number, linear: boolean): string[] {
  if (typeof schema === 'boolean') return [];
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return [`${at || '/'}: a schema must be an object or a boolean`];
  if (depth > MAX_DEPTH) return [`${shortPointer(at)}: nested deeper than ${MAX_DEPTH} levels`];
  const s = schema as Record<string, unknown>;
  const problems: string[] = [];
  const type = s['type'];
  if (type !== undefined) {
    const names = Array.isArray(type) ? type : [type];
    if (names.length === 0 || names.some((t) => typeof t !== 'string' || !TYPES.has(t))) {
      problems.push(`${at}/type: ${JSON.stringify(type)} is not a JSON Schema type`);
    }
  }
  if (s['pattern'] !== undefined) problems.push(...patternProblem(s['pattern'], `${at}/pattern`, linear));
  if (s['required'] !== undefined && (!Array.isArray(s['required']) || s['required'].some((r) => typeof r !== 'string'))) {
    problems.push(`${at}/required: must be an array of property names`);
  }
  if (s['enum'] !== undefined && !Array.isArray(s['enum'])) problems.push(`${at}/enum: must be an array`);
  if (s['$ref'] !== undefined && typeof s['$ref'] !== 'string') problems.push(`${at}/$ref: must be a string`);
  for (const k of NON_NEGATIVE_INTS) {
    const v = s[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < 0)) problems.push(`${at}/${k}: must be a non-negative integer`);
  }
  for (const k of NUMBERS) {
    const v = s[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v))) problems.push(`${at}/${k}: must be a number`);
  }
  for (const k of SCHEMA_MAPS) {
    const map = s[k];
    if (map === undefined) continue;
    if (typeof map !== 'object' || map === null || Array.isArray(map)) {
      problems.push(`${at}/${k}: must be an object of schemas`);
      continue;
    }
    for (const [name, sub] of Object.entries(map)) {
      if (k === 'patternProperties') problems.push(...patternProblem(name, `${at}/${k}/${name}`, linear));
      problems.push(...structureProblems(sub, `${at}/${k}/${name}`, depth + 1, linear));
    }
  }
  for (const k of SCHEMA_VALUES) if (s[k] !== undefined) problems.push(...structureProblems(s[k], `${at}/${k}`, depth + 1, linear));
  for (const k of SCHEMA_LISTS) {
    const list = s[k];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.length === 0) problems.push(`${at}/${k}: must be a non-empty array of schemas`);
    else for (const [i, sub] of list.entries()) problems.push(...structureProblems(sub, `${at}/${k}/${i}`, depth + 1, linear));
  }
  return problems;
}

function patternProblem(pattern: unknown, at: string, linear: boolean): string[] {
  if (typeof pattern !== 'string') return [`${at}: must be a string`];
  try {
    new RegExp(pattern, 'u'); // compiled, never run: running an untrusted pattern is the risk
  } catch {
    return [`${at}: ${JSON.stringify(pattern)} is not a valid regular expression`];
  }
  const problem = linear ? linearPatternProblem(pattern) : null;
  return problem === null ? [] : [`${at}: ${JSON.stringify(pattern)} ${problem}; the gateway runs argument patterns only on a linear-time engine (no backtracking)`];
}
