/**
 * Static check of the container image definition (no container engine runs
 * on these machines): the Dockerfile passes the `dockerfile-utils` linter
 * (the VS Code Docker extension's) and keeps the rules docs/operations.md
 * promises — multi-stage, pinned Node 24 trixie base, production
 * dependencies only, numeric non-root user, STOPSIGNAL, the default ports
 * exposed, the CLI as entrypoint. `npm run test:container` runs what the
 * image would run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Copy, DockerfileParser, Env, type Instruction } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/shared/config/defaults.js';
import { ADMIN_PORT, CONFIG_MOUNT_PATH, IMAGE_ENV, IMAGE_NODE_FLAGS } from './deployment-constants.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const dockerfile = DockerfileParser.parse(text);
const instructions = dockerfile.getInstructions();

/** Instructions grouped by stage (the FROM that opens each). */
const stages: Instruction[][] = [];
for (const i of instructions) {
  if (i.getKeyword() === 'FROM') stages.push([i]);
  else stages[stages.length - 1]?.push(i);
}
const finalStage = stages[stages.length - 1] ?? [];
const args = (i: Instruction): string[] => i.getArguments().map((a) => a.getValue());
/** `--from=<stage>` of a COPY, or null for a COPY from the build context. */
const copyFrom = (i: Instruction): string | null => (i instanceof Copy ? (i.getFromFlag()?.getValue() ?? null) : null);
const inFinal = (keyword: string): Instruction[] => finalStage.filter((i) => i.getKeyword() === keyword);
const argDefaults = new Map(dockerfile.getARGs().map((a) => [a.getProperty()?.getName() ?? '', a.getProperty()?.getValue() ?? '']));

/** The image a FROM names, with `${ARG}` replaced by the ARG's default. */
function imageOf(from: Instruction): string {
  const raw = args(from)[0] ?? '';
  return raw.replace(/^\$\{?(\w+)\}?$/, (_m, name: string) => argDefaults.get(name) ?? raw);
}

describe('Dockerfile', () => {
  it('passes the dockerfile-utils linter without a diagnostic', () => {
    expect(validate(text).map((d) => `${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
  });

  it('is multi-stage: compiles in one stage, installs production dependencies in another, runs in a third', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const runs = instructions.filter((i) => i.getKeyword() === 'RUN').map((i) => args(i).join(' '));
    expect(runs.some((r) => /\bnpm ci\b/.test(r) && !r.includes('--omit=dev'))).toBe(true);
    expect(runs.some((r) => /\btsc\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm ci\b.*--omit=dev/.test(r))).toBe(true);
    // The runtime stage builds nothing: it only copies the compiled code and the production node_modules.
    expect(
      inFinal('RUN')
        .map((i) => args(i).join(' '))
        .filter((r) => /npm (ci|install)|tsc/.test(r)),
    ).toEqual([]);
    const copiedFromStages = inFinal('COPY')
      .map(copyFrom)
      .filter((from) => from !== null);
    expect(copiedFromStages.length).toBeGreaterThanOrEqual(2);
  });

  it('pins every base image to a Node 24 trixie-slim version tag (never latest or a floating major)', () => {
    for (const stage of stages) {
      const image = imageOf(stage[0] as Instruction);
      expect(image).toMatch(/^node:24\.\d+\.\d+-trixie-slim(@sha256:[0-9a-f]{64})?$/);
      expect(image).not.toMatch(/:latest\b/);
    }
  });

  it('copies only the compiled code, production node_modules and package.json into the runtime stage', () => {
    const sources = inFinal('COPY').map((i) => args(i).slice(0, -1).join(' '));
    expect(sources.sort()).toEqual(['/app/node_modules', '/src/dist/src', 'package.json']);
    expect(instructions.filter((i) => i.getKeyword() === 'ADD')).toEqual([]);
  });

  it('runs as a numeric non-root user in group 0 (OpenShift arbitrary UIDs)', () => {
    const users = inFinal('USER');
    expect(users.length).toBe(1);
    const [uid, gid] = (args(users[0] as Instruction)[0] ?? '').split(':');
    expect(uid).toMatch(/^\d+$/);
    expect(Number(uid)).toBeGreaterThan(0);
    expect(gid).toBe('0');
  });

  it('stops with SIGTERM, exposes the traffic and admin ports, has no HEALTHCHECK', () => {
    expect(inFinal('STOPSIGNAL').map((i) => args(i))).toEqual([['SIGTERM']]);
    const exposed = inFinal('EXPOSE').flatMap((i) => args(i));
    expect(exposed).toContain(String(DEFAULTS.server.port));
    expect(exposed).toContain(String(ADMIN_PORT));
    expect(instructions.filter((i) => i.getKeyword() === 'HEALTHCHECK')).toEqual([]);
  });

  it('sets exactly the environment the bench and the container runner start the gateway with (IMAGE_ENV)', () => {
    const env = inFinal('ENV').flatMap((i) => (i instanceof Env ? i.getProperties().map((p) => [p.getName(), p.getValue()]) : []));
    expect(Object.fromEntries(env)).toEqual(IMAGE_ENV);
  });

  it('starts the CLI in exec form with the node flags the bench and the container runner use (IMAGE_NODE_FLAGS), reading the config file the manifests mount', () => {
    const entrypoint = ['node', ...IMAGE_NODE_FLAGS, 'dist/src/main/cli.js'].map((a) => JSON.stringify(a)).join(', ');
    expect(inFinal('ENTRYPOINT').map((i) => i.getRawArgumentsContent())).toEqual([`[${entrypoint}]`]);
    expect(existsSync(join(ROOT, 'dist', 'src', 'main', 'cli.js'))).toBe(true);
    expect(inFinal('CMD').map((i) => i.getRawArgumentsContent())).toEqual([`["--config", "${CONFIG_MOUNT_PATH}"]`]);
  });

  it('npm start runs node with the same flags as the image (IMAGE_NODE_FLAGS)', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts['start']).toBe(`exec node ${IMAGE_NODE_FLAGS.join(' ')} dist/examples/demo.js`);
  });

  it('builds from an allow-listed context (.dockerignore) that holds what the build stage copies', () => {
    const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(ignore[0]).toBe('*');
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, ''));
    const copiedFromContext = instructions.filter((i) => i.getKeyword() === 'COPY' && copyFrom(i) === null).flatMap((i) => args(i).slice(0, -1));
    for (const source of copiedFromContext) expect(allowed, `${source} is not in the build context`).toContain(source);
  });
});
