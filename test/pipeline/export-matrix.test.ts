/**
 * The export matrix (docs/models.md §5), row by row: every fixture (scripts/demo-models/exports)
 * is built into a temporary folder and `qr-art models check` runs on its manifest: a row that
 * serves or adapts starts the worker's sessions (createSessions) and runs a tiny generation plus
 * one step through every other role; a refused row's start fails with its refusal; either way the
 * check names the row the fixture's graph matched. Rows whose manifests are the same share one check.
 */
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, fixtureCoverage } from '../../scripts/demo-models/exports/index.ts';
import { checkManifest, type CheckResult } from '../../src/cli/models-check.ts';

const manifests = new Map<string, string>();
const checks = new Map<string, Promise<CheckResult>>();

/** The check of a manifest, once per distinct manifest content. */
async function check(file: string): Promise<CheckResult> {
  const key = await readFile(file, 'utf8');
  let c = checks.get(key);
  if (!c) checks.set(key, (c = checkManifest(file, { provider: 'cpu' }, 1)));
  return c;
}

beforeAll(async () => {
  const root = await mkdtemp(join(tmpdir(), 'qrart-matrix-'));
  for (const row of FIXTURES) {
    const dir = join(root, row.contract.id);
    await mkdir(dir, { recursive: true });
    manifests.set(row.contract.id, await row.build(dir));
  }
}, 60_000);

describe('export matrix', () => {
  it('has exactly one fixture per contract', () => {
    expect(fixtureCoverage()).toEqual({ missing: [], unknown: [], duplicated: [] });
  });

  for (const row of FIXTURES) {
    const c = row.contract;
    it(`${c.id}: ${c.exporter} ${c.graph} ${c.verdict === 'refuses' ? 'is refused at start' : `is ${c.verdict === 'serves' ? 'served' : 'adapted'}`}`, async () => {
      const result = await check(manifests.get(c.id)!);
      const matched = result.rows.filter((r) => r.role === c.role && r.contracts.some((x) => x.id === c.id));
      const seen = JSON.stringify(result.rows.map((r) => [r.role, r.contracts.map((x) => x.id)]));
      // A refusal of the manifest's settings (not of the graph) has no facts of its own to match: its message is the check.
      if (c.verdict !== 'refuses' || result.error === undefined || !result.error.includes(c.refusal!)) {
        expect(matched, `no graph of the fixture's manifest matched ${c.id}: ${seen}`).not.toHaveLength(0);
      }
      if (c.verdict === 'refuses') {
        expect(result.error).toBeDefined();
        expect(result.error).toContain(c.refusal!);
      } else {
        expect(result.error).toBeUndefined();
        // Its graph ran a step (a tokenizer has no step of its own: the text encoder's ran through it).
        if (c.role !== 'tokenizer') expect(matched.every((r) => r.ms !== undefined), `${c.id} did not run`).toBe(true);
        const denoiser = result.rows.find((r) => r.role === 'denoiser' || r.role === 'unet');
        expect(denoiser?.ms, 'a generation step ran').toBeDefined();
      }
    }, 30_000);
  }
});
