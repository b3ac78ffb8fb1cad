import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { demoManifest, startDemoToolService, type DemoToolService } from '../../examples/demo-tool-service.js';

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

async function callTool(baseUrl: string, name: string, args: unknown, version = '1.0.0'): Promise<Response> {
  return fetch(`${baseUrl}/tools/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, application/x-ndjson' },
    body: JSON.stringify({ name, version, arguments: args }),
  });
}

function ndjsonLines(text: string): unknown[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as unknown);
}

describe('demo tool service', () => {
  let service: DemoToolService;

  beforeAll(async () => {
    service = await startDemoToolService({ port: 0, serviceId: 'demo-test' });
  });
  afterAll(async () => {
    await service.close();
  });

  it('serves a contract-v1 manifest', async () => {
    const res = await fetch(`${service.url}/manifest`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const manifest = (await res.json()) as { service: string; tools: Array<Record<string, unknown>> };
    expect(manifest).toEqual(demoManifest('demo-test'));
    expect(manifest.service).toBe('demo-test');
    expect(manifest.tools.map((t) => t['name'])).toEqual(['echo', 'add', 'word_count', 'current_time', 'slow', 'count_with_progress', 'always_fails']);
    for (const tool of manifest.tools) {
      expect(tool['name']).toMatch(TOOL_NAME);
      expect(tool['version']).toBe('1.0.0');
      expect(tool['active']).toBe(true);
      expect(typeof tool['description']).toBe('string');
      expect(tool['inputSchema']).toMatchObject({ type: 'object', additionalProperties: false });
      expect(tool['execution']).toEqual({ path: `/tools/${String(tool['name'])}` });
    }
    expect(manifest.tools.find((t) => t['name'] === 'slow')?.['timeoutMs']).toBe(35000);
  });

  it('echo returns a CallToolResult', async () => {
    const res = await callTool(service.url, 'echo', { text: 'hello ✓' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ content: [{ type: 'text', text: 'hello ✓' }] });
  });

  it('add returns plain JSON for the gateway to wrap', async () => {
    const res = await callTool(service.url, 'add', { a: 2, b: 40.5 });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ sum: 42.5 });
  });

  it('word_count returns plain JSON', async () => {
    const res = await callTool(service.url, 'word_count', { text: '  one two\tthree\n' });
    expect(await res.json()).toEqual({ words: 3, characters: 16 });
    const empty = await callTool(service.url, 'word_count', { text: '' });
    expect(await empty.json()).toEqual({ words: 0, characters: 0 });
  });

  it('current_time returns text and structuredContent', async () => {
    const res = await callTool(service.url, 'current_time', { timeZone: 'Asia/Seoul' });
    const body = (await res.json()) as {
      content: Array<{ type: string; text: string }>;
      structuredContent: { iso: string; epochMs: number; timeZone: string; formatted: string };
    };
    expect(body.content[0]?.type).toBe('text');
    expect(body.content[0]?.text).toContain('Asia/Seoul');
    expect(body.structuredContent.timeZone).toBe('Asia/Seoul');
    expect(Math.abs(body.structuredContent.epochMs - Date.now())).toBeLessThan(10_000);
    expect(new Date(body.structuredContent.iso).getTime()).toBe(body.structuredContent.epochMs);

    const utc = (await (await callTool(service.url, 'current_time', {})).json()) as {
      structuredContent: { timeZone: string };
    };
    expect(utc.structuredContent.timeZone).toBe('UTC');

    const bad = (await (await callTool(service.url, 'current_time', { timeZone: 'Nowhere/Atlantis' })).json()) as {
      isError?: boolean;
    };
    expect(bad.isError).toBe(true);
  });

  it('slow waits before answering', async () => {
    const started = Date.now();
    const res = await callTool(service.url, 'slow', { ms: 150 });
    expect(await res.json()).toEqual({ content: [{ type: 'text', text: 'waited 150 ms' }] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('count_with_progress streams NDJSON progress, log and result lines in order', async () => {
    const res = await callTool(service.url, 'count_with_progress', { steps: 3, delayMs: 10 });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    const lines = ndjsonLines(await res.text());
    expect(lines).toHaveLength(5);
    expect(lines.slice(0, 3)).toEqual([
      { type: 'progress', progress: 1, total: 3, message: 'step 1' },
      { type: 'progress', progress: 2, total: 3, message: 'step 2' },
      { type: 'progress', progress: 3, total: 3, message: 'step 3' },
    ]);
    expect(lines[3]).toMatchObject({ type: 'log', level: 'info' });
    expect(lines[4]).toEqual({ type: 'result', result: { content: [{ type: 'text', text: 'counted to 3' }] } });
  });

  it('always_fails answers isError', async () => {
    const body = (await (await callTool(service.url, 'always_fails', {})).json()) as {
      content: unknown[];
      isError: boolean;
    };
    expect(body.isError).toBe(true);
    expect(body.content.length).toBeGreaterThan(0);
  });

  it('answers argument violations as a tool error', async () => {
    const body = (await (await callTool(service.url, 'add', { a: 1 })).json()) as { isError?: boolean };
    expect(body.isError).toBe(true);
  });

  it('rejects unknown tools with 404 and bad JSON with 400', async () => {
    const unknown = await callTool(service.url, 'nope', {});
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toHaveProperty('error');

    const badJson = await fetch(`${service.url}/tools/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"name":',
    });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toHaveProperty('error');
  });

  it('refuses bodies over 1 MiB', async () => {
    const res = await callTool(service.url, 'echo', { text: 'x'.repeat(1024 * 1024) });
    expect(res.status).toBe(413);
  });
});
