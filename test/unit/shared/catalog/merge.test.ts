import { describe, expect, it } from 'vitest';
import { catalogRevision, listedTools, mergeRoute, type ServiceTools } from '../../../../src/shared/catalog/merge.js';
import type { CatalogTool } from '../../../../src/shared/catalog/types.js';
import { GatewayError } from '../../../../src/shared/errors.js';

const tool = (name: string, serviceId = 'svc-a', over: Partial<CatalogTool> = {}): CatalogTool => ({
  name,
  version: '1.0.0',
  active: true,
  serviceId,
  inputSchema: { type: 'object' },
  timeoutMs: 1000,
  executionUrl: `http://127.0.0.1:9000/tools/${name}`,
  ...over,
});
const options = { maxToolsPerRoute: 50, source: 'static' as const, now: 1234 };

function gatewayError(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    expect(GatewayError.is(err)).toBe(true);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

describe('listedTools', () => {
  it('lists a name with exactly one active version, and neither zero nor two', () => {
    const tools = [
      tool('none', 'a', { active: false }),
      tool('one'),
      tool('two', 'a', { version: '1' }),
      tool('two', 'a', { version: '2' }),
      tool('mixed', 'a', { version: '1', active: false }),
      tool('mixed', 'a', { version: '2' }),
      tool('mixed', 'a', { version: '3', active: false }),
    ];
    expect(listedTools(tools).map((t) => `${t.name}@${t.version}`)).toEqual(['one@1.0.0', 'mixed@2']);
  });
});

describe('mergeRoute', () => {
  it('merges services into one sorted catalog with its route, source and time', () => {
    const catalog = mergeRoute(
      'core',
      [
        { serviceId: 'svc-b', tools: [tool('zeta', 'svc-b'), tool('alpha', 'svc-b')] },
        { serviceId: 'svc-a', tools: [tool('mid', 'svc-a', { version: '2.0.0' }), tool('mid', 'svc-a', { version: '1.0.0', active: false })] },
      ],
      options,
    );
    expect(catalog.routeKey).toBe('core');
    expect(catalog.source).toBe('static');
    expect(catalog.builtAt).toBe(1234);
    expect(catalog.tools.map((t) => `${t.serviceId}:${t.name}@${t.version}`)).toEqual(['svc-b:alpha@1.0.0', 'svc-a:mid@1.0.0', 'svc-a:mid@2.0.0', 'svc-b:zeta@1.0.0']);
    expect(catalog.revision).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  it('refuses the same name in two services with TOOL_NAME_CONFLICT naming both', () => {
    const err = gatewayError(() =>
      mergeRoute(
        'core',
        [
          { serviceId: 'hr-tools', tools: [tool('search', 'hr-tools'), tool('only_hr', 'hr-tools')] },
          { serviceId: 'erp-tools', tools: [tool('search', 'erp-tools', { version: '9.0.0' })] },
        ],
        options,
      ),
    );
    expect(err.code).toBe('TOOL_NAME_CONFLICT');
    expect(err.details).toEqual(['tool "search" is offered by both "hr-tools" and "erp-tools"']);
    expect(err.message).toBe('route "core": tool "search" is offered by both "hr-tools" and "erp-tools"');
  });

  it('reports each conflicting name once, even with inactive or repeated versions', () => {
    const err = gatewayError(() =>
      mergeRoute(
        'core',
        [
          { serviceId: 'a', tools: [tool('x', 'a'), tool('y', 'a')] },
          { serviceId: 'b', tools: [tool('x', 'b', { version: '1', active: false }), tool('x', 'b', { version: '2', active: false }), tool('y', 'b')] },
        ],
        options,
      ),
    );
    expect(err.details).toEqual(['tool "x" is offered by both "a" and "b"', 'tool "y" is offered by both "a" and "b"']);
  });

  it('allows one service to offer several versions of a name', () => {
    const catalog = mergeRoute('core', [{ serviceId: 'a', tools: [tool('x', 'a', { version: '1' }), tool('x', 'a', { version: '2' })] }], options);
    expect(catalog.tools).toHaveLength(2);
    expect(listedTools(catalog.tools)).toEqual([]);
  });

  it('allows a route to expose exactly maxToolsPerRoute tools and refuses one more with TOOL_CAP_EXCEEDED', () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => tool(`t${String(i).padStart(3, '0')}`, 'a'));
    expect(mergeRoute('core', [{ serviceId: 'a', tools: names(50) }], options).tools).toHaveLength(50);
    const err = gatewayError(() => mergeRoute('core', [{ serviceId: 'a', tools: names(51) }], options));
    expect(err.code).toBe('TOOL_CAP_EXCEEDED');
    expect(err.message).toBe('route "core" would expose 51 tools, more than catalog.maxToolsPerRoute (50)');
    expect(mergeRoute('core', [{ serviceId: 'a', tools: names(3) }], { ...options, maxToolsPerRoute: 3 }).tools).toHaveLength(3);
    expect(gatewayError(() => mergeRoute('core', [{ serviceId: 'a', tools: names(4) }], { ...options, maxToolsPerRoute: 3 })).code).toBe('TOOL_CAP_EXCEEDED');
  });

  it('counts only exposed tools against the cap', () => {
    const tools = [tool('a'), tool('b'), tool('off', 'svc-a', { active: false }), tool('amb', 'svc-a', { version: '1' }), tool('amb', 'svc-a', { version: '2' })];
    expect(mergeRoute('core', [{ serviceId: 'svc-a', tools }], { ...options, maxToolsPerRoute: 2 }).tools).toHaveLength(5);
  });

  it('gives the same revision and tool order whatever the service and tool order', () => {
    const a: ServiceTools = { serviceId: 'a', tools: [tool('b1', 'a'), tool('a1', 'a', { version: '2' }), tool('a1', 'a', { version: '1' })] };
    const b: ServiceTools = { serviceId: 'b', tools: [tool('c1', 'b'), tool('b2', 'b')] };
    const one = mergeRoute('core', [a, b], options);
    const two = mergeRoute('core', [b, { ...a, tools: [...a.tools].reverse() }], { ...options, now: 9999 });
    expect(two.revision).toBe(one.revision);
    expect(two.tools).toEqual(one.tools);
  });

  it('changes the revision when any tool field changes', () => {
    const base = mergeRoute('core', [{ serviceId: 'a', tools: [tool('x', 'a')] }], options).revision;
    for (const over of [{ version: '1.0.1' }, { active: false }, { timeoutMs: 1001 }, { description: 'new' }, { executionUrl: 'http://127.0.0.1:9000/v2' }]) {
      expect(mergeRoute('core', [{ serviceId: 'a', tools: [tool('x', 'a', over)] }], options).revision).not.toBe(base);
    }
  });

  it('computes the revision from the tools alone', () => {
    const tools = [tool('x')];
    expect(catalogRevision(tools)).toBe(catalogRevision([tool('x')]));
    expect(mergeRoute('other-route', [{ serviceId: 'svc-a', tools }], options).revision).toBe(catalogRevision(tools));
  });
});

describe('mergeRoute with catalog.conflictPolicy: prefix', () => {
  const prefix = { ...options, conflictPolicy: 'prefix' as const, prefixSeparator: '_' };

  it('prefixes only the conflicting names with the Tool Service id, and keeps the upstream name', () => {
    const merged = mergeRoute(
      'r',
      [
        { serviceId: 'hr', tools: [tool('search', 'hr'), tool('hire', 'hr')] },
        { serviceId: 'crm', tools: [tool('search', 'crm')] },
      ],
      prefix,
    );
    expect(merged.tools.map((t) => [t.name, t.upstreamName])).toEqual([
      ['crm_search', 'search'],
      ['hire', undefined],
      ['hr_search', 'search'],
    ]);
    expect(merged.refused).toEqual([]);
  });

  it('refuses (with the reason) a prefixed name that is too long or already taken, and serves the rest', () => {
    const long = 'x'.repeat(63);
    const merged = mergeRoute(
      'r',
      [
        { serviceId: 'a', tools: [tool(long, 'a'), tool('dup', 'a'), tool('b_dup', 'a')] },
        { serviceId: 'b', tools: [tool(long, 'b'), tool('dup', 'b')] },
      ],
      prefix,
    );
    expect(merged.tools.map((t) => t.name)).toEqual(['a_dup', 'b_dup']);
    expect(merged.refused.map((r) => r.problem)).toEqual([
      expect.stringMatching(/prefixed "a_x+"\): the prefixed name is longer than 64 characters/),
      expect.stringMatching(/prefixed "b_x+"\): the prefixed name is longer than 64 characters/),
      expect.stringMatching(/prefixed "b_dup"\): the prefixed name is already the name of another tool/),
    ]);
  });

  it('under the default policy the conflict still refuses the route', () => {
    const err = gatewayError(() =>
      mergeRoute(
        'r',
        [
          { serviceId: 'a', tools: [tool('t', 'a')] },
          { serviceId: 'b', tools: [tool('t', 'b')] },
        ],
        options,
      ),
    );
    expect(err.code).toBe('TOOL_NAME_CONFLICT');
  });
});
