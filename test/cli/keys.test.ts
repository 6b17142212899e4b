import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../helpers/database.ts';

const run = promisify(execFile);
const bin = path.resolve(import.meta.dirname, '../../bin/qr-art.js');

describe('qr-art keys', () => {
  let env: NodeJS.ProcessEnv;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'qrart-keys-'));
    const database = await testDatabaseUrl();
    env = { ...process.env, DATA_DIR: dataDir, ...(database.url ? { DATABASE_URL: database.url } : {}) };
    cleanup = async () => {
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    };
  });
  afterAll(async () => cleanup?.());

  const keys = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, [bin, 'keys', ...args], { env });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const failed = error as { code: number; stdout: string; stderr: string };
      return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
    }
  };

  it('creates a user with a fresh key and credits, adds credits, lists without revealing keys, revokes', async () => {
    const created = await keys('create', '--user', 'carol', '--credits', '12.5', '--json');
    expect(created.code).toBe(0);
    const { apiKey, keyId, credits } = JSON.parse(created.stdout);
    expect(apiKey).toMatch(/^qra_[A-Za-z0-9_-]{43}$/);
    expect(credits).toBe(12.5);

    const credited = await keys('credit', '--user', 'carol', '--credits', '0.25', '--json');
    expect(JSON.parse(credited.stdout).credits).toBe(12.75);
    const noAmount = await keys('credit', '--user', 'carol');
    expect(noAmount.code).toBe(1);
    expect(noAmount.stderr).toContain('--credits is required');

    const listed = await keys('list', '--json');
    expect(listed.stdout).not.toContain(apiKey);
    const carol = JSON.parse(listed.stdout).find((account: { userId: string }) => account.userId === 'carol');
    expect(carol.credits).toBe(12.75);
    expect(carol.keys).toEqual([expect.objectContaining({ keyId, revokedAt: null })]);

    expect((await keys('revoke', '--key-id', keyId)).code).toBe(0);
    const after = JSON.parse((await keys('list', '--json')).stdout).find((account: { userId: string }) => account.userId === 'carol');
    expect(after.keys[0].revokedAt).not.toBeNull();
  }, 60_000);

  it('refuses fractions of a cent, unknown users and unknown key ids with a message and exit code 1', async () => {
    const fraction = await keys('credit', '--user', 'carol', '--credits', '1.005');
    expect(fraction.code).toBe(1);
    expect(fraction.stderr).toContain('at most two decimals');
    const unknown = await keys('credit', '--user', 'nobody', '--credits', '1');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no user nobody');
    const revoke = await keys('revoke', '--key-id', 'key_missing');
    expect(revoke.code).toBe(1);
  }, 60_000);

  it('refuses a chosen --key shorter than 24 characters, or one no HTTP header can carry, and creates nothing', async () => {
    const weak = await keys('create', '--user', 'dora', '--key', 'secret123');
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain('--key: the key has 9 characters; use at least 24');
    // Stored, it would be granted credits and then answered 401 at every request.
    const euros = await keys('create', '--user', 'dora', '--key', 'prix-en-euros-€€€-0123456789abcdef', '--credits', '5');
    expect(euros.code).toBe(1);
    expect(euros.stderr).toContain('--key: the key may hold only visible ASCII characters');
    expect(JSON.parse((await keys('list', '--json')).stdout).map((account: { userId: string }) => account.userId)).not.toContain('dora');
  }, 60_000);

  it('refuses to store a revoked key again, granting nothing, rather than say it works', async () => {
    const chosen = 'key-chosen-by-the-operator-0123456789';
    const created = JSON.parse((await keys('create', '--user', 'erin', '--key', chosen, '--credits', '5', '--json')).stdout);
    expect((await keys('create', '--user', 'erin', '--key', chosen, '--json')).code).toBe(0);
    expect((await keys('revoke', '--key-id', created.keyId)).code).toBe(0);
    const again = await keys('create', '--user', 'erin', '--key', chosen, '--credits', '5');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`that API key was revoked (${created.keyId}), and a revoked key stays revoked: create a new one`);
    expect(again.stdout).not.toContain(chosen);
    const erin = JSON.parse((await keys('list', '--json')).stdout).find((account: { userId: string }) => account.userId === 'erin');
    expect(erin).toMatchObject({ credits: 5, keys: [expect.objectContaining({ keyId: created.keyId, revokedAt: expect.any(String) })] });
  }, 60_000);

  it('run again with the same --key (a retried provisioning script) grants its credits once; a key of another user leaves no user behind', async () => {
    const chosen = 'key-provisioned-twice-0123456789abcdef';
    const first = await keys('create', '--user', 'gina', '--key', chosen, '--credits', '100', '--json');
    expect(JSON.parse(first.stdout)).toMatchObject({ created: true, credits: 100 });
    const second = await keys('create', '--user', 'gina', '--key', chosen, '--credits', '100', '--json');
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ keyId: JSON.parse(first.stdout).keyId, created: false, credits: 100 });
    expect(second.stderr).toContain('not again: `keys credit` adds more');
    const taken = await keys('create', '--user', 'hank', '--key', chosen, '--credits', '5');
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('that API key belongs to another user');
    expect(JSON.parse((await keys('list', '--json')).stdout).map((account: { userId: string }) => account.userId)).not.toContain('hank');
  }, 60_000);

  it('refuses a grant too large for one --credits before writing anything', async () => {
    const huge = await keys('create', '--user', 'fred', '--credits', '99999999999999999');
    expect(huge.code).toBe(1);
    expect(huge.stderr).toContain('--credits must be at most 1000000000000 in one grant');
    expect(JSON.parse((await keys('list', '--json')).stdout).map((account: { userId: string }) => account.userId)).not.toContain('fred');
  }, 60_000);

  it('answers -h with the usage, and an unknown action without opening (or creating) the database', async () => {
    const empty = await mkdtemp(path.join(tmpdir(), 'qrart-keys-empty-'));
    try {
      const local = { ...env, DATA_DIR: empty, DATABASE_URL: '' };
      const help = await run(process.execPath, [bin, 'keys', '-h'], { env: local });
      expect(help.stdout).toContain('qr-art keys <action>');
      const typo = await run(process.execPath, [bin, 'keys', 'lsit'], { env: local }).catch((error: { code: number; stderr: string }) => error);
      expect(typo).toMatchObject({ code: 1, stderr: expect.stringContaining("unknown action 'lsit'") });
      expect(await readdir(empty)).toEqual([]);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
