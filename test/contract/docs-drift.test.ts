/**
 * Keeps the documentation in step with the code (fastify's
 * `test/internals/errors.test.js` way): a config key, an environment variable
 * or an error code that exists in src/ but not in the docs fails the suite, as
 * does a `listChanged` claim the server does not keep (SPEC §9 defect 4) and
 * a golden example that git would not track (SPEC §9 defect 6).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/shared/config/defaults.js';
import { CONFIG_KEYS, ENV_CONFIG_FILE } from '../../src/shared/config/load.js';
import { GatewayErrorCode, JsonRpcErrorCode } from '../../src/shared/errors.js';
import { LEGACY_SERVER_CAPABILITIES, MODERN_SERVER_CAPABILITIES } from '../../src/shared/protocol/mcp.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The first markdown table row of `doc` whose first cell is `` `key` ``. */
function rowOf(doc: string, key: string): string | undefined {
  return doc.split('\n').find((line) => line.startsWith(`| \`${key}\` |`));
}

describe('docs/configuration.md', () => {
  const doc = read('docs/configuration.md');

  it.each(CONFIG_KEYS.map((k) => [k.path, k] as const))('documents %s with its variable and default', (path, key) => {
    const row = rowOf(doc, path);
    expect(row, `no table row for ${path}`).toBeDefined();
    expect(row, `row of ${path} does not name ${key.env}`).toContain(`\`${key.env}\``);
    const value = path.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], DEFAULTS);
    expect(row, `row of ${path} does not show the default ${JSON.stringify(value)}`).toContain(`\`${JSON.stringify(value)}\``);
  });

  it('lists no key that the configuration does not have', () => {
    const known = new Set(CONFIG_KEYS.map((k) => k.path));
    const listed = [...doc.matchAll(/^\| `([a-z][A-Za-z0-9]*(?:\.[a-z][A-Za-z0-9]*)+)` \|/gm)].map((m) => m[1] as string);
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.filter((k) => !known.has(k))).toEqual([]);
  });

  it('documents the config-file variable and the port/host aliases', () => {
    for (const name of [ENV_CONFIG_FILE, 'MCP_GATEWAY_PORT', 'MCP_GATEWAY_HOST']) expect(doc).toContain(`\`${name}\``);
  });
});

describe('docs/architecture.md', () => {
  const doc = read('docs/architecture.md');
  const section = doc.slice(doc.indexOf('## A tools/call, hop by hop'), doc.indexOf('\n## ', doc.indexOf('## A tools/call, hop by hop') + 5));
  const hops = [...section.matchAll(/^\| (\d+) \| [a-z]+ \| `([^`]+)` `([^`]+)` \|/gm)].map((m) => ({ n: Number(m[1]), file: m[2] as string, symbol: m[3] as string }));

  it('describes a tools/call hop by hop, in order', () => {
    expect(hops.length).toBeGreaterThanOrEqual(10);
    expect(hops.map((h) => h.n)).toEqual(hops.map((_, i) => i + 1));
  });

  it.each(hops.map((h) => [h.n, h.file, h.symbol] as const))('hop %i names code that exists: %s %s', (_n, file, symbol) => {
    expect(existsSync(join(ROOT, file)), `${file} does not exist`).toBe(true);
    const text = read(file);
    const [owner, member] = symbol.includes('.') ? symbol.split('.') : [undefined, symbol];
    if (owner !== undefined) expect(text, `${file} has no ${owner}`).toMatch(new RegExp(`\\b(class|interface) ${owner}\\b`));
    expect(text, `${file} has no ${symbol}`).toMatch(new RegExp(`(function ${member}\\b|\\b${member}\\s*(\\(|=|<|:\\s*\\())`));
  });
});

describe('docs/contracts/errors.md', () => {
  const doc = read('docs/contracts/errors.md');

  it.each(Object.entries(JsonRpcErrorCode))('documents JSON-RPC %s', (name, code) => {
    const row = rowOf(doc, name);
    expect(row, `no table row for ${name}`).toBeDefined();
    expect(row).toContain(`\`${code}\``);
  });

  it.each(Object.values(GatewayErrorCode))('documents gateway code %s', (code) => {
    expect(rowOf(doc, code), `no table row for ${code}`).toBeDefined();
  });
});

describe('docs/contracts/mcp-endpoint.md', () => {
  const doc = read('docs/contracts/mcp-endpoint.md');

  // SPEC §9 defect 4: never declare what is not sent. Each era's statement and its JSON example must be what the code declares.
  it.each([
    ['legacy (initialize)', LEGACY_SERVER_CAPABILITIES.tools.listChanged, 'legacy'],
    ['2026-07-28 (server/discover)', MODERN_SERVER_CAPABILITIES.tools.listChanged, '2026-07-28'],
  ] as const)('states the listChanged value the server declares to %s clients', (_, declared, era) => {
    expect(typeof declared).toBe('boolean');
    expect(doc).toContain(`${era} \`capabilities.tools.listChanged\` is \`${declared}\``);
    expect(doc).not.toContain(`${era} \`capabilities.tools.listChanged\` is \`${!declared}\``);
    // The JSON examples of the era's handshake answer carry the same value.
    const example = era === 'legacy' ? '"capabilities":{"tools":{"listChanged":' : '"capabilities":{"tools":{"listChanged":';
    const marker = era === 'legacy' ? '<!-- legacy capabilities -->' : '<!-- 2026-07-28 capabilities -->';
    const at = doc.indexOf(marker);
    expect(at, `${marker} is missing`).toBeGreaterThanOrEqual(0);
    expect(doc.slice(at, at + 400)).toContain(`${example}${declared}}`);
  });

  it('the legacy answer to initialize declares what the code declares, listChanged included', async () => {
    const { answerRequest } = await import('../../src/shared/protocol/answer.js');
    const decision = answerRequest(Buffer.from('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'), { listTemplate: new Uint8Array() });
    expect(decision.kind).toBe('reply');
    if (decision.kind !== 'reply') return;
    const body = JSON.parse(String(decision.reply.body)) as { result: { capabilities: unknown } };
    expect(body.result.capabilities).toEqual(LEGACY_SERVER_CAPABILITIES);
  });
});

describe('golden examples', () => {
  it('every examples/… link in docs/contracts points at an existing file', () => {
    const dir = join(ROOT, 'docs', 'contracts');
    const broken: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.md'))) {
      for (const m of read(`docs/contracts/${file}`).matchAll(/\]\((examples\/[^)#]+)\)/g)) {
        if (!existsSync(resolve(dir, m[1] as string))) broken.push(`${file} → ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('are not ignored by git: they are tracked test inputs (SPEC §9 defect 6)', () => {
    let ignored: string;
    try {
      ignored = execFileSync('git', ['check-ignore', '--no-index', '-v', ...exampleFiles()], { cwd: ROOT, encoding: 'utf8' });
    } catch (err) {
      // Exit status 1: nothing is ignored. Anything else (no git, not a checkout) cannot be checked here.
      const status = (err as { status?: number }).status;
      if (status === 1) return;
      console.warn(`git check-ignore unavailable (status ${String(status)}); skipped`);
      return;
    }
    expect(ignored.trim(), 'ignore rules match golden examples').toBe('');
  });
});

function exampleFiles(): string[] {
  const base = join('docs', 'contracts', 'examples');
  const out = [join(base, 'README.md')];
  for (const folder of ['mcp', 'manifest', 'execution', 'sse', 'registry', 'redis']) {
    for (const f of readdirSync(join(ROOT, base, folder))) out.push(join(base, folder, f));
  }
  return out;
}
