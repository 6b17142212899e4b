/**
 * The client as a consumer of the published package gets it: `npm run build`'s compiler
 * settings (tsconfig.build.json) into a node_modules/qr-art of a scratch project, then
 * `import 'qr-art'` and `'qr-art/client'` resolved through package.json's exports, at run
 * time by node and at compile time by tsc on the emitted declarations.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const REPO = path.resolve(import.meta.dirname, '../..');
const TSC = path.join(REPO, 'node_modules/typescript/bin/tsc');

describe('the published package', () => {
  let project: string;

  beforeAll(async () => {
    project = await mkdtemp(path.join(tmpdir(), 'qr-art-consumer-'));
    const pkg = path.join(project, 'node_modules/qr-art');
    await mkdir(pkg, { recursive: true });
    await cp(path.join(REPO, 'package.json'), path.join(pkg, 'package.json'));
    // Never into the repository's own dist/: bin/qr-art.js would run that instead of the sources.
    await run(process.execPath, [TSC, '-p', path.join(REPO, 'tsconfig.build.json'), '--outDir', path.join(pkg, 'dist')], { cwd: REPO });
    // Its dependencies, as npm would have installed them next to it.
    await symlink(path.join(REPO, 'node_modules'), path.join(pkg, 'node_modules'), 'dir');
    await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  }, 180_000);
  afterAll(async () => project && rm(project, { recursive: true, force: true }));

  it('node imports the client from "qr-art" and "qr-art/client", and it loads nothing of the server', async () => {
    await writeFile(
      path.join(project, 'app.mjs'),
      `import { QrArtClient, QrArtApiError, verifyWebhook } from 'qr-art';
import * as sub from 'qr-art/client';
const client = new QrArtClient({ baseUrl: 'http://127.0.0.1:1/', apiKey: 'k' });
console.log(JSON.stringify({ same: sub.QrArtClient === QrArtClient, base: client.baseUrl, error: new QrArtApiError(400, 'x', 'y').name, verify: typeof verifyWebhook }));`,
    );
    const { stdout } = await run(process.execPath, ['app.mjs'], { cwd: project });
    expect(JSON.parse(stdout)).toEqual({ same: true, base: 'http://127.0.0.1:1', error: 'QrArtApiError', verify: 'function' });
    // What the client's compiled modules import: each other and its three libraries, nothing of the server.
    const dir = path.join(project, 'node_modules/qr-art/dist/client');
    const imports = new Set<string>();
    for (const file of (await readdir(dir)).filter((f) => f.endsWith('.js'))) {
      for (const match of (await readFile(path.join(dir, file), 'utf8')).matchAll(/^(?:import|export)\b[^;]*?from ['"]([^'"]+)['"]/gm)) imports.add(match[1]!);
    }
    expect([...imports].filter((spec) => !/^\.\/[a-z-]+\.js$/.test(spec)).sort()).toEqual(['eventsource-parser', 'standardwebhooks', 'zod']);
  });

  it('tsc types a consumer through the emitted declarations: bodies by workflow, records, errors', async () => {
    await writeFile(
      path.join(project, 'app.ts'),
      `import { QrArtClient, QrArtApiError, type CreateBody, type PredictionRecord } from 'qr-art';
const body: CreateBody = { workflow: 'generate_qr_art_v5s', prompt: 'koi', qrContent: 'https://example.com', aspectRatio: '16:9' };
// @ts-expect-error a v5 body has no qrText
const wrong: CreateBody = { workflow: 'generate_qr_art_v5', qrText: 'x', qrContent: 'y' };
export async function first(client: QrArtClient): Promise<PredictionRecord['status'] | number> {
  try {
    return (await client.wait((await client.create(body)).id)).status;
  } catch (error) {
    return error instanceof QrArtApiError ? error.status : wrong.workflow.length;
  }
}
`,
    );
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'], typeRoots: [path.join(REPO, 'node_modules/@types')] },
        files: ['app.ts'],
      }),
    );
    const result = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: project }).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe('');
  }, 60_000);
});
