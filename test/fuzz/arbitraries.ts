/**
 * fast-check generators for the fault and abuse suite (issue 11): JSON-RPC
 * bodies, request heads and Tool Service manifests — mostly almost-valid, so
 * the generated input reaches deep into the code instead of stopping at the
 * first check. Reusable by an HTTP-level fuzz against the real gateway:
 * everything here is plain data (strings, bytes, objects).
 *
 * Seeds: {@link fuzzSeed} reads FUZZ_SEED (default fixed), so CI runs are
 * reproducible and a failure's seed, printed by fast-check, replays it.
 */
import fc from 'fast-check';

/** The seed of every fuzz property: FUZZ_SEED, else a fixed default. */
export function fuzzSeed(): number {
  const env = process.env['FUZZ_SEED'];
  return env !== undefined && /^-?\d+$/.test(env) ? Number(env) : 20_261_201;
}

/** Runs per property: FUZZ_RUNS_SCALE (default 1) multiplies the CI counts. */
export function fuzzRuns(base: number): number {
  const scale = Number(process.env['FUZZ_RUNS_SCALE'] ?? '1');
  return Math.max(1, Math.round(base * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}

// ------------------------------------------------------------------ JSON-RPC bodies

const METHODS = ['initialize', 'ping', 'tools/list', 'tools/call', 'logging/setLevel', 'notifications/initialized', 'notifications/cancelled', 'resources/list', 'prompts/get', ''];

/** Ids as written in JSON text: safe and unsafe integers, fractions, exponents, strings (with escapes), null. */
export const idText: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.integer().map(String) },
  { weight: 2, arbitrary: fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('9007199254740993', '-9007199254740993', '1e400', '-0', '0.0', '1.50', '1E2', '123456789012345678901234567890') },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)) },
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }).map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }).map((s) => JSON.stringify(s)) },
  { weight: 1, arbitrary: fc.constantFrom('null', 'true', '[]', '{}', '"\\ud800"', `"${'x'.repeat(1100)}"`) },
);

/**
 * `params` texts: a pool sampled once (fixed seed), then picked per run —
 * generating nested records per run would cost ~10x the code under test.
 */
const PARAMS_POOL: readonly string[] = fc
  .sample(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record(
          {
            protocolVersion: fc.constantFrom('2025-11-25', '2025-06-18', '2025-03-26', '2024-01-01', 7),
            level: fc.constantFrom('debug', 'info', 'emergency', 'loud', 3),
            name: fc.oneof(fc.constantFrom('employee_search', 'unknown'), fc.string({ maxLength: 8 }), fc.integer()),
            arguments: fc.oneof(fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }), fc.jsonValue({ maxDepth: 1 })),
            requestId: fc.oneof(fc.integer(), fc.string({ maxLength: 6 }), fc.constant(null)),
            cursor: fc.string({ maxLength: 6 }),
            _meta: fc.record({ progressToken: fc.oneof(fc.integer(), fc.string({ maxLength: 4 })) }, { requiredKeys: [] }),
          },
          { requiredKeys: [] },
        ),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    ),
    { numRuns: 400, seed: 7 },
  )
  .map((p) => JSON.stringify(p) ?? 'null');

const JSONRPC_TEXTS = [...Array<string>(16).fill('"2.0"'), '"1.0"', '2', 'null', '"2.0 "'];
const METHOD_TEXTS = [...METHODS, ...METHODS.slice(0, 5), ...METHODS.slice(0, 5)].map((m) => JSON.stringify(m)).concat(['1', 'null', `"${'m'.repeat(300)}"`, '"tools/list\\u0000"', '"Tools/List"']);
const OTHER_MEMBERS = ['"result":{}', '"error":{"code":-1,"message":"x"}', '"x-extra":[1,{"id":2}]', '"__proto__":{"id":3}'];

/** A JSON-RPC message as text: members in random order, some missing, some wrong, ids as exact text. */
export const rpcMessageText: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(...JSONRPC_TEXTS),
    fc.option(idText, { freq: 6, nil: null }),
    fc.option(fc.constantFrom(...METHOD_TEXTS), { freq: 12, nil: null }),
    fc.option(fc.constantFrom(...PARAMS_POOL), { freq: 2, nil: null }),
    fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...OTHER_MEMBERS) }),
    fc.nat(),
    fc.constantFrom('', '', ' ', '\n\t'),
    fc.boolean(),
  )
  .map(([jsonrpc, id, method, params, other, order, ws, escapeIdKey]) => {
    const parts: string[] = [`"jsonrpc":${ws}${jsonrpc}`];
    if (id !== null) parts.push(`${escapeIdKey ? '"\\u0069d"' : '"id"'}${ws}:${ws}${id}`);
    if (method !== null) parts.push(`"method":${method}`);
    if (params !== null) parts.push(`"params":${ws}${params}`);
    if (other !== null) parts.push(other);
    // A cheap deterministic shuffle from one number.
    for (let i = parts.length - 1, r = order; i > 0; i--, r = Math.floor(r / 7)) {
      const j = r % (i + 1);
      [parts[i], parts[j]] = [parts[j] as string, parts[i] as string];
    }
    return `${ws}{${parts.join(`,${ws}`)}}${ws}`;
  });

const encoder = new TextEncoder();

/** A request body: mostly JSON-RPC messages, plus batches, truncations, garbage bytes, deep nesting, BOMs. */
export const rpcBody: fc.Arbitrary<Uint8Array> = fc
  .tuple(
    fc.oneof(
      { weight: 14, arbitrary: rpcMessageText },
      { weight: 1, arbitrary: fc.tuple(rpcMessageText, rpcMessageText).map(([a, b]) => `[${a},${b}]`) },
      { weight: 1, arbitrary: fc.tuple(rpcMessageText, fc.nat()).map(([t, n]) => t.slice(0, n % (t.length + 1))) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
      { weight: 1, arbitrary: fc.nat(3000).map((n) => `{"jsonrpc":"2.0","id":1,"method":"ping","params":${'['.repeat(n)}${']'.repeat(n)}}`) },
      { weight: 1, arbitrary: rpcMessageText.map((t) => `\ufeff${t}`) },
    ),
    // fc.option's freq is the odds of nil: 1 in 10 bodies gets a stray byte.
    fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(fc.constantFrom(0x80, 0xff, 0xc3, 0xed, 0x00, 0x7f), fc.nat()) }),
  )
  .map(([text, junk]) => {
    const bytes = encoder.encode(text);
    if (junk === null) return bytes;
    // A stray byte (invalid UTF-8, NUL, DEL) somewhere in the body.
    const [byte, at] = junk;
    const i = at % (bytes.length + 1);
    const out = new Uint8Array(bytes.length + 1);
    out.set(bytes.subarray(0, i));
    out[i] = byte;
    out.set(bytes.subarray(i), i + 1);
    return out;
  });

// ------------------------------------------------------------------ request heads (gateMcpRequest)

/** What the acceptor copies out of a request before the body: hostile header values included. */
export const requestHead = fc.record({
  method: fc.constantFrom('post', 'get', 'delete', 'put', 'options', 'head', 'propfind', 'foo'),
  path: fc.oneof(
    fc.constantFrom('/mcp', '/mcp/', '/mcp/core', '/mcp/cold', '/mcp/gone', '/mcp/Core', '/mcp/core/', '/mcp/-x', `/mcp/${'a'.repeat(64)}`, '/mcp/%63ore', '/mcp/core\u0000'),
    fc.string({ maxLength: 12 }).map((s) => `/mcp/${s}`),
  ),
  host: fc.constantFrom('', 'localhost:8080', '127.0.0.1', '[::1]:1', 'evil.example', 'LOCALHOST', 'localhost\u007f'),
  origin: fc.constantFrom('', 'http://localhost:3000', 'https://evil.example', 'null', 'http://127.0.0.1', 'not a url'),
  contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json-rpc', 'text/plain', '', 'application/jsonx'),
  accept: fc.constantFrom('', '*/*', 'application/json', 'application/json, text/event-stream', 'text/event-stream', 'text/html', 'application/*;q=0'),
  protocolVersion: fc.constantFrom('', '2025-11-25', '2025-06-18', '2025-03-26', '2099-01-01', 'x', '2026-07-28', ' 2026-07-28 '),
  contentLength: fc.oneof(fc.constant(-1), fc.nat(2_000_000)),
});

// ------------------------------------------------------------------ manifests

const GOOD_PATTERNS = ['^[a-z]+$', '^(a+)+$', '[a-z]+$', '^\\d{4}-\\d{2}-\\d{2}$', '\\p{L}', '(?<=\\$)\\d+', '^.{1,1000}$', '^(\\w+\\s?)*$'];
const BAD_PATTERNS = ['(a)\\1', '(?=x)', '(', 'a{2000}', '\\p{sc=Grek}'];
/** Mostly patterns the linear-time engine runs (ReDoS-prone ones included), sometimes ones the catalog must refuse. */
const pattern = fc.oneof({ weight: 20, arbitrary: fc.constantFrom(...GOOD_PATTERNS) }, { weight: 1, arbitrary: fc.constantFrom(...BAD_PATTERNS) });
/** Mostly references that resolve (to `$defs` every generated inputSchema has), sometimes loops, dangling or remote ones. */
const ref = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom('#/$defs/a', '#/$defs/b') },
  { weight: 1, arbitrary: fc.constantFrom('#', '#/$defs/missing', 'https://example.com/x.json', '#/properties/p') },
);
const ok = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>, odds = 12): fc.Arbitrary<T | U> =>
  fc.oneof({ weight: odds, arbitrary: good as fc.Arbitrary<T | U> }, { weight: 1, arbitrary: bad as fc.Arbitrary<T | U> });

/** A JSON Schema, mostly valid, with the keywords the catalog checks: patterns, $refs, combinators, bad values. */
export const jsonSchema: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ schema: Record<string, unknown> }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record(
      {
        type: ok(fc.constantFrom('string', 'number', 'integer', 'boolean', 'array', 'object', 'null'), fc.constant('strnig'), 30),
        pattern,
        minLength: ok(fc.nat(5), fc.constant(-1), 30),
        format: fc.constantFrom('email', 'uri', 'date-time', 'regex', 'nope'),
        enum: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
      },
      { requiredKeys: [] },
    ),
    fc.record({ $ref: ref }),
    fc.record(
      {
        type: fc.constant('object'),
        properties: fc.dictionary(fc.constantFrom('p', 'q', 'r'), tie('schema'), { maxKeys: 3 }),
        patternProperties: fc.dictionary(pattern, tie('schema'), { maxKeys: 2 }),
        additionalProperties: fc.oneof(fc.boolean(), tie('schema')),
        propertyNames: fc.record({ pattern }),
        required: fc.array(fc.constantFrom('p', 'q'), { maxLength: 2 }),
      },
      { requiredKeys: ['type'] },
    ),
    fc.record({ anyOf: fc.array(tie('schema'), { minLength: 1, maxLength: 2 }) }),
    fc.record({ allOf: fc.array(tie('schema'), { minLength: 1, maxLength: 2 }) }),
    fc.record({ not: tie('schema') }),
    fc.record({ type: fc.constant('array'), items: tie('schema') }),
  ),
})).schema;

/** An `inputSchema`: object-typed, with the `$defs` its `$ref`s point at (a def may refer back: a loop, or a legit tree). */
export const inputSchema: fc.Arbitrary<Record<string, unknown>> = fc
  .tuple(jsonSchema, fc.record({ a: jsonSchema, b: jsonSchema }), fc.nat(19))
  .map(([s, defs, dice]) => ({ ...s, ...(dice > 0 ? { type: 'object' } : {}), $defs: defs }));

const toolName = ok(fc.stringMatching(/^[A-Za-z0-9_.-]{1,20}$/), fc.constantFrom('', 'a b', 'x'.repeat(129), 'ü'), 40);

/** One tool entry of a manifest; `origin` is the Tool Service's own origin (execution urls sometimes leave it). */
export const manifestTool = (origin: string): fc.Arbitrary<Record<string, unknown>> =>
  fc.record(
    {
      name: toolName,
      version: ok(fc.constantFrom('1.0.0', '2.0.0', '0.1'), fc.constant(''), 40),
      active: ok(fc.boolean(), fc.constant('yes'), 40),
      title: fc.string({ maxLength: 10 }),
      description: fc.string({ maxLength: 30 }),
      inputSchema: ok(inputSchema, fc.jsonValue({ maxDepth: 2 }), 40),
      outputSchema: ok(fc.constant({ type: 'object' }), jsonSchema, 20),
      annotations: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      timeoutMs: ok(fc.integer({ min: 1, max: 100_000 }), fc.constantFrom(0, 1.5, -1), 40),
      execution: ok(
        fc.oneof(
          fc.stringMatching(/^\/[a-z][a-z/]{0,10}$/).map((path) => ({ path })),
          fc.constant({ url: `${origin}/tools/x` }),
        ),
        fc.constantFrom({ path: '//evil.example/x' }, { path: 'relative' }, { url: 'http://evil.example/x' }, { url: 'ftp://x' }, { path: '/a', url: `${origin}/b` }),
        40,
      ),
    },
    { requiredKeys: ['name', 'version', 'inputSchema', 'execution'] },
  );

/** A whole manifest: usually `{service, tools}`, sometimes something else entirely. */
export const manifest = (origin: string): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 12, arbitrary: fc.record({ service: ok(fc.constant('svc'), fc.constant(''), 40), tools: fc.array(manifestTool(origin), { maxLength: 4 }) }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );

/** A cheap assertion for the inside of a property (vitest's `expect` costs more than the code under test). */
export function check(condition: boolean, what: string, detail?: unknown): asserts condition {
  if (!condition) throw new Error(detail === undefined ? what : `${what}: ${typeof detail === 'string' ? detail.slice(0, 300) : JSON.stringify(detail)?.slice(0, 300)}`);
}
