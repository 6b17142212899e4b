/**
 * The API image (Dockerfile) cannot be built here (no Docker): what can be checked without
 * building is checked. What it copies exists and is not excluded by .dockerignore (which the
 * worker's Dockerfile.cuda shares), it runs a real CLI command, as the user and on the ports the
 * deployment expects, on a Node the package supports, and it keeps onnxruntime-node's install
 * script from downloading the CUDA provider.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { containerOf } from './pods.ts';
import { noKubectlReason, REPO_DIR, render } from './render.ts';

interface Instruction {
  keyword: string;
  args: string;
  stage: number;
}

/** Instructions with their build stage (0-based), line continuations joined, comments dropped. */
function instructions(file: string): Instruction[] {
  const text = readFileSync(path.join(REPO_DIR, file), 'utf8');
  const lines = text.split('\n').filter((line) => !/^\s*#/.test(line));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  let stage = -1;
  const result: Instruction[] = [];
  for (const line of joined.split('\n')) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!match) continue;
    if (match[1] === 'FROM') stage++;
    result.push({ keyword: match[1]!, args: match[2]!.trim(), stage });
  }
  return result;
}

/** .dockerignore patterns (top-level names and globs, as this repository uses them). */
function ignored(source: string): boolean {
  const patterns = readFileSync(path.join(REPO_DIR, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const first = source.replace(/^\.\//, '').split('/')[0]!;
  return patterns.some((pattern) => {
    const regex = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    return regex.test(first) || regex.test(source);
  });
}

/** Sources of COPY instructions that read the build context (not --from another stage). */
function contextSources(file: string): string[] {
  return instructions(file)
    .filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))
    .flatMap((i) => {
      const parts = i.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      return parts.slice(0, -1);
    });
}

const stages = (file: string) => Math.max(...instructions(file).map((i) => i.stage));
const last = (file: string, keyword: string) => instructions(file).filter((i) => i.keyword === keyword && i.stage === stages(file));

describe('Dockerfile (API image)', () => {
  it('copies only files that exist and that .dockerignore leaves in the context, for both images', () => {
    for (const file of ['Dockerfile', 'Dockerfile.cuda']) {
      const sources = contextSources(file);
      expect(sources.length, file).toBeGreaterThan(0);
      for (const source of sources) {
        expect(existsSync(path.join(REPO_DIR, source)), `${file}: COPY ${source}`).toBe(true);
        expect(ignored(source), `${file}: COPY ${source} is excluded by .dockerignore`).toBe(false);
      }
    }
    // The compiled output the final stage takes from the build stage is where tsc writes it.
    const outDir = JSON.parse(readFileSync(path.join(REPO_DIR, 'tsconfig.build.json'), 'utf8')).compilerOptions.outDir;
    expect(last('Dockerfile', 'COPY').map((i) => i.args)).toContain(`--from=build /app/${outDir} ./${outDir}`);
    // The playground's files, which tsc does not emit, next to the compiled route that serves them.
    expect(last('Dockerfile', 'COPY').map((i) => i.args)).toContain(`--from=build /app/src/api/playground ./${outDir}/api/playground`);
    expect(existsSync(path.join(REPO_DIR, 'src/api/playground/index.html'))).toBe(true);
    expect(readFileSync(path.join(REPO_DIR, 'src/api/routes/playground.ts'), 'utf8')).toContain("path.resolve(here, '../playground')");
  });

  it.skipIf(!!noKubectlReason)('runs `qr-art serve`, a command of the CLI, the same command the API Deployment runs', () => {
    const [cmd] = last('Dockerfile', 'CMD');
    const command = JSON.parse(cmd!.args) as string[];
    expect(command).toEqual(['node', 'bin/qr-art.js', 'serve']);
    expect(existsSync(path.join(REPO_DIR, command[1]!))).toBe(true);
    expect(readFileSync(path.join(REPO_DIR, 'src/cli.ts'), 'utf8')).toContain(`case '${command[2]}':`);
    expect(containerOf(render('base'), 'qr-art-api').container.command).toEqual(command);
    const [workerCmd] = last('Dockerfile.cuda', 'CMD');
    expect(containerOf(render('base'), 'qr-art-worker').container.command).toEqual(JSON.parse(workerCmd!.args));
  });

  it('uses a Node the package supports, production dependencies only, and skips the CUDA provider download', () => {
    const nodeVersion = /^NODE_VERSION=(\d+)$/.exec(instructions('Dockerfile').find((i) => i.keyword === 'ARG')!.args)![1];
    const engines = JSON.parse(readFileSync(path.join(REPO_DIR, 'package.json'), 'utf8')).engines.node as string;
    expect(Number(nodeVersion)).toBeGreaterThanOrEqual(Number(/(\d+)/.exec(engines)![1]));
    for (const from of instructions('Dockerfile').filter((i) => i.keyword === 'FROM')) expect(from.args).toMatch(/^node:\$\{NODE_VERSION\}-bookworm-slim\b/);
    const install = last('Dockerfile', 'RUN').find((i) => i.args.includes('npm ci'))!.args;
    expect(install).toContain('--omit=dev');
    expect(install).toContain('ONNXRUNTIME_NODE_INSTALL=skip');
    // The variable and value onnxruntime-node's install script reads to skip its download.
    const installUtils = readFileSync(path.join(REPO_DIR, 'node_modules/onnxruntime-node/script/install-utils.js'), 'utf8');
    expect(installUtils).toContain('process.env.ONNXRUNTIME_NODE_INSTALL');
    expect(installUtils).toMatch(/case 'skip':\s*return false;/);
  });

  it.skipIf(!!noKubectlReason)('runs as the non-root uid the Deployment expects, exposing the ports it uses', () => {
    const [user] = last('Dockerfile', 'USER');
    expect(user!.args).toBe('10001:10001');
    const { deployment, container } = containerOf(render('base'), 'qr-art-api');
    expect(deployment.spec.template.spec.securityContext.runAsUser).toBe(10001);
    const [workerUser] = last('Dockerfile.cuda', 'USER');
    expect(workerUser!.args).toBe('10001:10001');
    const exposed = last('Dockerfile', 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map(Number));
    expect(exposed.sort()).toEqual(container.ports.map((p: { containerPort: number }) => p.containerPort).sort());
  });

  it('builds the worker image (Dockerfile.cuda) the same way: compiled in a build stage, production dependencies only in the image', () => {
    const file = 'Dockerfile.cuda';
    const build = instructions(file).filter((i) => i.stage === 0);
    expect(build.find((i) => i.keyword === 'FROM')!.args).toMatch(/^node:\$\{NODE_VERSION\}-bookworm-slim AS build$/);
    expect(build.some((i) => i.keyword === 'RUN' && i.args.includes('tsc -p tsconfig.build.json'))).toBe(true);
    const runs = last(file, 'RUN').map((i) => i.args);
    const installs = runs.filter((args) => /\bnpm (ci|install|i)\b/.test(args));
    // One install, without dev dependencies: an `npm install` after it would bring them back.
    expect(installs).toHaveLength(1);
    expect(installs[0]).toContain('npm ci --omit=dev');
    expect(runs.some((args) => args.includes('tsc'))).toBe(false);
    expect(last(file, 'COPY').map((i) => i.args)).toContain('--from=build /app/dist ./dist');
  });
});
