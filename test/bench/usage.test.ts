import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function bench(...args: string[]): { code: number | null; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/index.ts', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, stderr: run.stderr };
}

describe('npm run bench', () => {
  it('a wrong flag value or an unknown flag is one line naming it and exit 2, not a stack', () => {
    const images = bench('scan', '--images', '0');
    expect(images.code).toBe(2);
    expect(images.stderr.trim()).toBe('scan: --images must be a positive integer (npm run bench -- scan --help)');
    const unknown = bench('scan-check', '--rusn', '3');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim()).toMatch(/^scan-check: Unknown option '--rusn'.* \(npm run bench -- scan-check --help\)$/);
  }, 120_000);
});
