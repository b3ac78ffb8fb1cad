import { describe, expect, it } from 'vitest';
import { validateManifest, type ManifestPolicy, type ManifestResult } from '../../../../src/shared/catalog/manifest.js';
import type { CatalogTool } from '../../../../src/shared/catalog/types.js';

const entry = { id: 'hr-tools', baseUrl: 'http://127.0.0.1:8081' };
const policy: ManifestPolicy = { defaultTimeoutMs: 30_000, maxTimeoutMs: 60_000, allowedExecutionOrigins: [] };

const baseTool = {
  name: 'employee_search',
  version: '1.2.0',
  description: 'Find employees by name or team.',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  execution: { path: '/tools/employee_search' },
};
const manifest = (tools: unknown[]) => ({ service: 'hr-tools', tools });
const one = (over: Record<string, unknown>) => manifest([{ ...baseTool, ...over }]);

function tools(result: ManifestResult): CatalogTool[] {
  if (!result.ok) throw new Error(`expected a valid manifest, got: ${result.problems.join('; ')}`);
  return result.tools;
}
function problems(result: ManifestResult): string[] {
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.problems;
}

describe('validateManifest', () => {
  it('turns the SPEC §7 example into a catalog tool', () => {
    const result = validateManifest(
      manifest([
        {
          ...baseTool,
          active: true,
          title: 'Search employees',
          outputSchema: { type: 'object' },
          annotations: { readOnlyHint: true },
          timeoutMs: 5000,
        },
      ]),
      entry,
      policy,
    );
    expect(tools(result)).toEqual([
      {
        name: 'employee_search',
        version: '1.2.0',
        active: true,
        serviceId: 'hr-tools',
        title: 'Search employees',
        description: 'Find employees by name or team.',
        inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
        outputSchema: { type: 'object' },
        annotations: { readOnlyHint: true },
        timeoutMs: 5000,
        executionUrl: 'http://127.0.0.1:8081/tools/employee_search',
      },
    ]);
  });

  it('defaults active to true and the timeout to tools.defaultTimeoutMs, leaving optional fields out', () => {
    const [t] = tools(validateManifest(one({}), entry, policy));
    expect(t?.active).toBe(true);
    expect(t?.timeoutMs).toBe(30_000);
    expect(Object.keys(t ?? {}).sort()).toEqual(['active', 'description', 'executionUrl', 'inputSchema', 'name', 'serviceId', 'timeoutMs', 'version']);
    expect(tools(validateManifest(one({ active: false }), entry, policy))[0]?.active).toBe(false);
  });

  it('caps a manifest timeout at tools.maxTimeoutMs, and caps the default too', () => {
    expect(tools(validateManifest(one({ timeoutMs: 600_000 }), entry, policy))[0]?.timeoutMs).toBe(60_000);
    expect(tools(validateManifest(one({ timeoutMs: 60_000 }), entry, policy))[0]?.timeoutMs).toBe(60_000);
    expect(tools(validateManifest(one({}), entry, { ...policy, defaultTimeoutMs: 90_000 }))[0]?.timeoutMs).toBe(60_000);
  });

  it('ignores unknown extra fields (compatible extension)', () => {
    const result = validateManifest({ ...one({ futureField: { x: 1 } }), schemaVersion: 2 }, entry, policy);
    expect(tools(result)[0]).not.toHaveProperty('futureField');
    expect(tools(result)[0]?.name).toBe('employee_search');
  });

  it('accepts names of 1 and 128 allowed characters', () => {
    for (const name of ['a', 'A-z_0.9', 'x'.repeat(128)]) expect(tools(validateManifest(one({ name }), entry, policy))[0]?.name).toBe(name);
  });

  it('refuses a tool whose name breaks SEP-986 and keeps the others, with the reason (toolNamePolicy: refuse-tool, the default)', () => {
    for (const name of ['', 'x'.repeat(129), 'has space', 'slash/name', 'ünï', 'semi;colon']) {
      const result = validateManifest(
        manifest([
          { ...baseTool, name },
          { ...baseTool, name: 'fine' },
        ]),
        entry,
        policy,
      );
      expect(result.ok, name).toBe(true);
      if (!result.ok) continue;
      expect(result.tools.map((t) => t.name)).toEqual(['fine']);
      expect(result.refused).toEqual([{ name: name.slice(0, 128), version: '1.2.0', problem: expect.stringContaining('/name: must match pattern "^[A-Za-z0-9_.-]{1,128}$"') }]);
    }
  });

  it('refuses the whole manifest for such a name under toolNamePolicy: refuse-manifest', () => {
    const p = problems(
      validateManifest(
        manifest([
          { ...baseTool, name: 'has space' },
          { ...baseTool, name: 'fine' },
        ]),
        entry,
        { ...policy, toolNamePolicy: 'refuse-manifest' },
      ),
    );
    expect(p).toEqual(['/tools/0 (has space@1.2.0)/name: must match pattern "^[A-Za-z0-9_.-]{1,128}$" (SEP-986: 1–128 of A-Z a-z 0-9 _ - .)']);
  });

  it('passes icons (https: and data:), tool _meta and MCP execution.taskSupport through, never refusing them', () => {
    const icons = [{ src: 'https://cdn.example.com/i.png', mimeType: 'image/png', sizes: ['48x48'], theme: 'dark' }, { src: 'data:image/svg+xml;base64,PHN2Zz4=' }];
    const [t] = tools(validateManifest(one({ icons, _meta: { 'com.example/tier': 'gold' }, execution: { path: '/tools/employee_search', taskSupport: 'optional' } }), entry, policy));
    expect(t?.icons).toEqual(icons);
    expect(t?.meta).toEqual({ 'com.example/tier': 'gold' });
    expect(t?.taskSupport).toBe('optional');
  });

  it("takes the execution address from executionAddress when execution is MCP's own object", () => {
    const [t] = tools(validateManifest(one({ execution: { taskSupport: 'required' }, executionAddress: { path: '/run/x' } }), entry, policy));
    expect(t?.executionUrl).toBe('http://127.0.0.1:8081/run/x');
    expect(t?.taskSupport).toBe('required');
    expect(problems(validateManifest(one({ executionAddress: { path: '/run/x' } }), entry, policy))).toEqual([
      '/tools/0 (employee_search@1.2.0)/execution: the execution address is given twice (execution and executionAddress); give one',
    ]);
    expect(problems(validateManifest(one({ execution: { taskSupport: 'optional' } }), entry, policy))).toEqual([
      '/tools/0 (employee_search@1.2.0)/execution: an execution address is required: execution.path, execution.url or executionAddress',
    ]);
  });

  it('refuses a tool whose icon is not https: or data:, or whose x-mcp-header annotations are invalid, keeping the others', () => {
    for (const [over, reason] of [
      [{ icons: [{ src: 'http://cdn.example.com/i.png' }] }, '/icons/0/src: must be an https: URL or a data: URI'],
      [{ icons: [{ src: 'javascript:alert(1)' }] }, '/icons/0/src: must be an https: URL or a data: URI'],
      [{ icons: [{ src: 'https://x/i.png', theme: 'blue' }] }, '/icons/0/theme: must be "light" or "dark"'],
      [{ inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } } }, 'x-mcp-header is only allowed on string, integer or boolean properties'],
      [{ inputSchema: { type: 'object', properties: { a: { type: 'array', items: { type: 'string', 'x-mcp-header': 'A' } } } } }, 'only allowed on properties reached from the root'],
      [{ inputSchema: { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Dup' }, b: { type: 'string', 'x-mcp-header': 'dup' } } } }, 'is not unique'],
      [{ inputSchema: { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'has space' } } } }, 'must be a non-empty HTTP token'],
    ] as const) {
      const result = validateManifest(
        manifest([
          { ...baseTool, ...over },
          { ...baseTool, name: 'fine' },
        ]),
        entry,
        policy,
      );
      if (!result.ok) throw new Error(result.problems.join('; '));
      expect(
        result.tools.map((t) => t.name),
        JSON.stringify(over),
      ).toEqual(['fine']);
      expect(result.refused[0]?.problem, JSON.stringify(over)).toContain(reason);
    }
  });

  it('refuses a tool without a version', () => {
    const { version: _dropped, ...noVersion } = baseTool;
    expect(problems(validateManifest(manifest([noVersion]), entry, policy))).toContain('/tools/0: must have required properties version');
  });

  it('refuses a manifest that is not an object or has no tools array', () => {
    for (const raw of [null, 'manifest', [], { service: 'x' }, { tools: [] }, { service: 'x', tools: {} }]) {
      expect(problems(validateManifest(raw, entry, policy)).length, JSON.stringify(raw)).toBeGreaterThan(0);
    }
  });

  it('refuses an inputSchema that is not a JSON Schema object of type object', () => {
    for (const inputSchema of [{ type: 'string' }, {}, { type: 'array' }]) {
      const p = problems(validateManifest(one({ inputSchema }), entry, policy));
      expect(p).toEqual(['/tools/0 (employee_search@1.2.0)/inputSchema: must be a JSON Schema object with "type": "object"']);
    }
    expect(problems(validateManifest(one({ inputSchema: 'object' }), entry, policy))).toContain('/tools/0/inputSchema: must be object');
  });

  it('accepts any JSON Schema 2020-12 as outputSchema (SEP-2106), and refuses one that is not a JSON Schema', () => {
    for (const outputSchema of [{ type: 'array', items: { type: 'string' } }, { type: 'string' }, { oneOf: [{ type: 'object' }, { type: 'null' }] }, {}]) {
      expect(tools(validateManifest(one({ outputSchema }), entry, policy))[0]?.outputSchema, JSON.stringify(outputSchema)).toEqual(outputSchema);
    }
    expect(problems(validateManifest(one({ outputSchema: { type: 'strnig' } }), entry, policy))).toEqual(['/tools/0 (employee_search@1.2.0)/outputSchema/type: "strnig" is not a JSON Schema type']);
  });

  it('refuses an execution path that would leave the Tool Service origin', () => {
    expect(problems(validateManifest(one({ execution: { path: '//evil.example.com/x' } }), entry, policy))).toEqual(['/tools/0 (employee_search@1.2.0)/execution: path must not start with "//"']);
    // WHATWG URL parsing turns "/\" into "//" for http(s): that must not escape either.
    expect(problems(validateManifest(one({ execution: { path: '/\\evil.example.com/x' } }), entry, policy))).toEqual([
      '/tools/0 (employee_search@1.2.0)/execution: path leaves the Tool Service origin',
    ]);
    expect(problems(validateManifest(one({ execution: { path: 'tools/x' } }), entry, policy)).length).toBeGreaterThan(0);
  });

  it('resolves an execution path under a baseUrl that has a path prefix', () => {
    const prefixed = { id: 'hr', baseUrl: 'http://127.0.0.1:8081/api/v1/' };
    expect(tools(validateManifest(one({}), prefixed, policy))[0]?.executionUrl).toBe('http://127.0.0.1:8081/api/v1/tools/employee_search');
  });

  it('accepts an execution url on the service origin and refuses another origin unless allow-listed', () => {
    const same = one({ execution: { url: 'http://127.0.0.1:8081/run?tool=x' } });
    expect(tools(validateManifest(same, entry, policy))[0]?.executionUrl).toBe('http://127.0.0.1:8081/run?tool=x');
    const other = one({ execution: { url: 'http://169.254.169.254/latest/meta-data' } });
    expect(problems(validateManifest(other, entry, policy))).toEqual([
      '/tools/0 (employee_search@1.2.0)/execution: url origin http://169.254.169.254 is neither the Tool Service origin nor in tools.allowedExecutionOrigins',
    ]);
    const otherPort = one({ execution: { url: 'http://127.0.0.1:8082/run' } });
    expect(problems(validateManifest(otherPort, entry, policy))).toHaveLength(1);
    const allowed = { ...policy, allowedExecutionOrigins: ['http://127.0.0.1:8082/'] };
    expect(tools(validateManifest(otherPort, entry, allowed))[0]?.executionUrl).toBe('http://127.0.0.1:8082/run');
  });

  it('refuses an execution url that is not absolute http(s), and an execution with both or neither form', () => {
    expect(problems(validateManifest(one({ execution: { url: 'file:///etc/passwd' } }), entry, policy))).toEqual(['/tools/0 (employee_search@1.2.0)/execution: url must be an absolute http(s) URL']);
    expect(problems(validateManifest(one({ execution: { url: '/relative' } }), entry, policy))).toHaveLength(1);
    expect(problems(validateManifest(one({ execution: { path: '/a', url: 'http://127.0.0.1:8081/a' } }), entry, policy)).length).toBeGreaterThan(0);
    expect(problems(validateManifest(one({ execution: {} }), entry, policy)).length).toBeGreaterThan(0);
  });

  it('refuses a duplicate name and version, but allows one name in several versions', () => {
    expect(problems(validateManifest(manifest([baseTool, baseTool]), entry, policy))).toEqual(['/tools/1 (employee_search@1.2.0): duplicate name and version']);
    const versions = tools(validateManifest(manifest([baseTool, { ...baseTool, version: '2.0.0', active: false }]), entry, policy));
    expect(versions.map((t) => `${t.name}@${t.version}:${t.active}`)).toEqual(['employee_search@1.2.0:true', 'employee_search@2.0.0:false']);
  });

  it('reports every problem of every tool at once', () => {
    const result = validateManifest(
      manifest([
        { ...baseTool, name: 'a', inputSchema: { type: 'string' } },
        { ...baseTool, name: 'b', execution: { path: '//evil' } },
        { ...baseTool, name: 'c', outputSchema: { type: 'arrray' } },
      ]),
      entry,
      policy,
    );
    expect(problems(result).map((p) => p.slice(0, p.indexOf(')') + 1))).toEqual(['/tools/0 (a@1.2.0)', '/tools/1 (b@1.2.0)', '/tools/2 (c@1.2.0)']);
  });
});

describe('validateManifest: argument patterns run in linear time (issue 11 High #1)', () => {
  const withSchema = (inputSchema: Record<string, unknown>) => validateManifest(one({ inputSchema }), entry, policy);

  it('accepts the ReDoS-prone patterns the linear-time engine runs safely', () => {
    expect(tools(withSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } }))).toHaveLength(1);
    expect(tools(withSchema({ type: 'object', patternProperties: { '^(\\w+\\s?)*$': { type: 'string' } } }))).toHaveLength(1);
  });

  it('refuses patterns that need backtracking, naming the tool and the place', () => {
    expect(problems(withSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } }))).toEqual([
      expect.stringMatching(/^\/tools\/0 \(employee_search@1\.2\.0\)\/inputSchema\/properties\/s\/pattern: "\^\(a\)\\\\1\$" uses a backreference/),
    ]);
    expect(problems(withSchema({ type: 'object', patternProperties: { '^(?!x)': {} } }))[0]).toMatch(/\/inputSchema\/patternProperties\/\^\(\?!x\): .* lookahead/);
    expect(problems(withSchema({ type: 'object', propertyNames: { pattern: '(?=a)' } }))[0]).toMatch(/\/inputSchema\/propertyNames\/pattern: .*lookahead/);
  });

  it('refuses such patterns in an outputSchema too: the shard runs it on structuredContent', () => {
    expect(problems(validateManifest(one({ outputSchema: { type: 'object', properties: { s: { pattern: '(?=a)' } } } }), entry, policy))).toEqual([
      expect.stringMatching(/^\/tools\/0 \(employee_search@1\.2\.0\)\/outputSchema\/properties\/s\/pattern: /),
    ]);
  });
});

describe('validateManifest: $ref loops and deep nesting (issue 11 Low #8)', () => {
  const withSchema = (inputSchema: Record<string, unknown>) => validateManifest(one({ inputSchema }), entry, policy);

  it('refuses a $ref loop that never descends into the argument, naming the references', () => {
    const p = problems(withSchema({ type: 'object', properties: { x: { $ref: '#/$defs/a' } }, $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } } }));
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(/^\/tools\/0 \(employee_search@1\.2\.0\)\/inputSchema\/\$defs\/[ab]: \$ref loop #\/\$defs\/[ab] → #\/\$defs\/[ab] → #\/\$defs\/[ab] never descends/);
    expect(problems(withSchema({ type: 'object', allOf: [{ $ref: '#' }] }))[0]).toMatch(/\$ref loop # → #\/allOf\/0 → #/);
    expect(problems(withSchema({ type: 'object', $defs: { a: { anyOf: [{ type: 'null' }, { not: { $ref: '#/$defs/a' } }] } }, properties: { v: { $ref: '#/$defs/a' } } }))[0]).toMatch(/\$ref loop/);
  });

  it('accepts recursion that descends into the argument (a tree)', () => {
    const tree = { type: 'object', properties: { root: { $ref: '#/$defs/node' } }, $defs: { node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } } } };
    expect(tools(withSchema(tree))).toHaveLength(1);
    expect(tools(withSchema({ type: 'object', properties: { self: { $ref: '#' }, a: { $ref: '#/properties/self' } } }))).toHaveLength(1);
    expect(tools(withSchema({ $id: 'urn:x', type: 'object', properties: { n: { $anchor: 'num', type: 'number' }, m: { $ref: '#num' }, o: { $ref: 'urn:x#/properties/n' } } }))).toHaveLength(1);
  });

  it('refuses a $ref that resolves to nothing in the schema', () => {
    expect(problems(withSchema({ type: 'object', properties: { x: { $ref: '#/$defs/missing' } } }))[0]).toMatch(/\/inputSchema\/properties\/x\/\$ref: "#\/\$defs\/missing" does not resolve/);
    expect(problems(withSchema({ type: 'object', properties: { x: { $ref: 'https://example.com/s.json' } } }))[0]).toMatch(/remote references are not fetched/);
  });

  it('refuses a schema nested 100,000 levels deep with the tool named, not a RangeError', () => {
    const nest = (n: number, leaf: string, wrap: (inner: string) => string): unknown => {
      let s = leaf;
      for (let i = 0; i < n; i++) s = wrap(s);
      return JSON.parse(s);
    };
    for (const inputSchema of [
      { type: 'object', properties: { a: nest(100_000, '{}', (x) => `{"type":"object","properties":{"a":${x}}}`) } },
      { type: 'object', const: nest(100_000, '[]', (x) => `[${x}]`) },
      { type: 'object', default: nest(100_000, '{}', (x) => `{"a":${x}}`) },
    ]) {
      const p = problems(withSchema(inputSchema));
      expect(p).toHaveLength(1);
      expect(p[0]).toMatch(/^\/tools\/0 \(employee_search@1\.2\.0\): nests deeper than 256 levels at \/inputSchema\//);
      expect((p[0] as string).length).toBeLessThan(300);
    }
    const annotations = problems(validateManifest(one({ annotations: { a: nest(100_000, '{}', (x) => `{"a":${x}}`) } }), entry, policy));
    expect(annotations[0]).toMatch(/nests deeper than 256 levels at \/annotations\/a\/a/);
  });

  it('accepts nesting up to the limit', () => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 60; i++) schema = { type: 'object', properties: { a: schema } };
    expect(tools(withSchema(schema))).toHaveLength(1);
  });
});
