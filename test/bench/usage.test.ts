import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function bench(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/bench/index.ts', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
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

  it('a count that is not a whole number is refused before anything runs (1.5 jobs hung the scale bench for its 10 minutes)', () => {
    const jobs = bench('scale', '--jobs', '1.5');
    expect(jobs.code).toBe(2);
    expect(jobs.stderr.trim()).toBe('scale: --jobs must be a whole number of at least 1 (got "1.5") (npm run bench -- scale --help)');
    const batch = bench('worker', '--batch', '5');
    expect(batch.code).toBe(2);
    expect(batch.stderr.trim()).toBe('worker: --batch must be a whole number from 1 to 4 (got "5") (npm run bench -- worker --help)');
    expect(bench('qr', '--runs', 'abc').code).toBe(2);
    expect(bench('outages', '--bogus-flag', '7').code).toBe(2);
    const merge = bench('scan', '--merge', '/nonexistent/rows.json');
    expect(merge.code).toBe(2);
    expect(merge.stderr).toContain('--merge: cannot read /nonexistent/rows.json');
  }, 120_000);

  it('asked for help with no bench named: the list, exit 0; an unknown name: exit 2', () => {
    const help = bench('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: npm run bench -- <api|');
    const unknown = bench('nosuch');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown bench 'nosuch'");
  }, 60_000);
});
