/**
 * A create whose COMMIT reached PostgreSQL but whose answer never came back (the connection
 * broke, a failover): the API must not say "nothing was changed" about a prediction it charged.
 * A TCP proxy in front of a server of the test's own forwards the COMMIT and then cuts the
 * connection before the answer (fault injection); the submitter then asks the database what
 * committed.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toApiError } from '../../src/api/errors.ts';
import { CreateOutcomeUnknownError, createSubmitter } from '../../src/predictions/create.ts';
import type { OutboxRelay } from '../../src/queue/outbox-relay.ts';
import { freePort } from '../../src/runtime/local-nats.ts';
import pg from 'pg';
import { balanceOf, ensureUser, grantCredits } from '../../src/store/accounts.ts';
import { InsufficientCreditsError } from '../../src/store/predictions.ts';
import type { Database } from '../../src/store/database.ts';
import { migrate } from '../../src/store/migrations.ts';
import { openPostgres } from '../../src/store/postgres.ts';
import type { ParsedPrediction } from '../../src/workflows/validate.ts';
import { postgresBinDir, startPgServer, type PgServer } from '../helpers/pg-server.ts';

/**
 * 'cut-once': the next COMMIT's answer is lost, then all passes; 'cut-then-down': after that cut,
 * every connection is dropped; 'drop-after-commit': the client's connection is dropped 300 ms
 * after the next COMMIT went through, answered or not (a COMMIT that takes longer is still running).
 */
type Mode = 'pass' | 'cut-once' | 'cut-then-down' | 'down' | 'drop-after-commit';

/** A TCP proxy in front of PostgreSQL that loses a COMMIT's answer as `mode` says. */
async function startProxy(target: URL): Promise<{ url: string; mode: Mode; close(): void }> {
  const state = { mode: 'pass' as Mode };
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (state.mode === 'down') return void client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    open.add(client);
    let cut = false;
    client.on('data', (chunk) => {
      const isCommit = chunk[0] === 0x51 && chunk.toString('latin1').includes('COMMIT');
      if (!cut && state.mode === 'drop-after-commit' && isCommit) {
        state.mode = 'pass';
        setTimeout(() => client.destroy(), 300);
      }
      // A simple-query message ('Q') carrying COMMIT: node-postgres sends the transaction's statements so.
      if (!cut && state.mode.startsWith('cut') && isCommit) {
        cut = true;
        state.mode = state.mode === 'cut-then-down' ? 'down' : 'pass';
        if (state.mode === 'down') for (const other of open) if (other !== client) other.destroy();
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!cut) return void client.write(chunk);
      client.destroy();
      upstream.end();
    });
    for (const socket of [client, upstream]) socket.on('error', () => undefined);
    client.on('close', () => (open.delete(client), upstream.destroy()));
    upstream.on('close', () => client.destroy());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = new URL(target.href);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.href,
    get mode() {
      return state.mode;
    },
    set mode(mode: Mode) {
      state.mode = mode;
    },
    close: () => server.close(),
  };
}

const PARSED: ParsedPrediction = {
  workflow: 'generate_qr_art_v4s',
  input: { workflow: 'generate_qr_art_v4s', qrText: 'a storm', qrContent: 'https://example.com/commit' },
  imageCount: 1,
  costCents: 100,
} as ParsedPrediction;
const noRelay: OutboxRelay = { publish: () => undefined, sweep: async () => undefined, stop: async () => undefined };

describe.skipIf(!postgresBinDir())('a create whose COMMIT went unanswered', () => {
  let server: PgServer;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let db: Database;

  beforeAll(async () => {
    server = await startPgServer();
    proxy = await startProxy(new URL(server.url));
    db = await openPostgres(proxy.url, { poolSize: 4, connectTimeoutMs: 1000, queryTimeoutMs: 1500 });
    await migrate(db);
    for (const user of ['committed', 'unknown', 'batch', 'slow']) {
      await ensureUser(db, user);
      await grantCredits(db, user, 1000);
    }
  }, 60_000);
  afterAll(async () => {
    await db?.close();
    proxy?.close();
    await server?.destroy();
  });

  const predictionsOf = async (user: string) => (await db.query<{ id: string }>('SELECT id FROM predictions WHERE user_id = $1', [user])).rows.map((row) => row.id);

  it('is answered with the prediction it made when the database says it committed: made once, charged once', async () => {
    const submitter = createSubmitter({ db, relay: noRelay });
    proxy.mode = 'cut-once';
    const result = await submitter.submit('committed', PARSED);
    expect(result).toMatchObject({ ok: true, replayed: false, record: { userId: 'committed', status: 'queued' } });
    expect(await predictionsOf('committed')).toEqual([result.record.id]);
    expect(await balanceOf(db, 'committed')).toBe(900);
  });

  it('each of a group-committed batch gets its own prediction, and the job waits in the outbox for the sweep', async () => {
    const submitter = createSubmitter({ db, relay: noRelay });
    proxy.mode = 'cut-once';
    const [a, b, poor] = await Promise.all([submitter.submit('batch', PARSED), submitter.submit('batch', PARSED), submitter.submit('batch', { ...PARSED, costCents: 5000 })].map((p) => p.catch((e: Error) => e)));
    expect(a).toMatchObject({ ok: true, replayed: false });
    expect(b).toMatchObject({ ok: true, replayed: false });
    expect(poor).toBeInstanceOf(InsufficientCreditsError); // refused inside the transaction, refused again
    const ids = [(a as { record: { id: string } }).record.id, (b as { record: { id: string } }).record.id];
    expect((await predictionsOf('batch')).sort()).toEqual(ids.sort());
    expect(await balanceOf(db, 'batch')).toBe(800);
    const outbox = (await db.query<{ msg_id: string }>('SELECT msg_id FROM outbox WHERE msg_id = ANY($1::text[])', [ids])).rows;
    expect(outbox.map((row) => row.msg_id).sort()).toEqual(ids.sort());
  });

  it('a COMMIT still in progress when its answer is lost is waited for, never run again beside it: made once, charged once, never a plain 503 or 402', async () => {
    // A synchronous standby that does not exist holds every COMMIT (as one far behind would):
    // committed locally, not yet visible, the users' rows still locked.
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    const holdCommits = async (standby: string) => {
      await admin.query(`ALTER SYSTEM SET synchronous_standby_names = '${standby}'`);
      await admin.query('SELECT pg_reload_conf()');
    };
    try {
      // Costs the whole balance: a second run beside the first would be refused with a 402.
      const parsed = { ...PARSED, costCents: 1000 } as ParsedPrediction;
      const submitter = createSubmitter({ db, relay: noRelay });
      await holdCommits('ghost');
      proxy.mode = 'drop-after-commit';
      const answer = await submitter.submit('slow', parsed).catch((e: unknown) => e);
      await holdCommits('');
      // Made (once the COMMIT finished within the wait) or said to be possibly made; nothing else.
      if (answer instanceof Error) expect(answer).toBeInstanceOf(CreateOutcomeUnknownError);
      else expect(answer).toMatchObject({ ok: true, replayed: false, record: { userId: 'slow' } });
      const deadline = Date.now() + 10_000;
      while ((await predictionsOf('slow')).length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await predictionsOf('slow')).toHaveLength(1);
      expect(await balanceOf(db, 'slow')).toBe(0);
    } finally {
      proxy.mode = 'pass';
      await holdCommits('').catch(() => undefined);
      await admin.end();
    }
  });

  it('says it may have been made (a 503 that does not claim nothing was changed) when the database does not answer again', async () => {
    const submitter = createSubmitter({ db, relay: noRelay });
    // After the cut every connection is dropped, for longer than the lookup waits.
    proxy.mode = 'cut-then-down';
    const error = await submitter.submit('unknown', PARSED).catch((e: unknown) => e);
    proxy.mode = 'pass';
    expect(error).toBeInstanceOf(CreateOutcomeUnknownError);
    const answer = toApiError(error as Error);
    expect(answer.statusCode).toBe(503);
    expect(answer.retryAfterSeconds).toBeGreaterThan(0);
    const body = answer.toBody() as { error: { code: string; message: string; details: unknown[] } };
    expect(body.error.code).toBe('service_unavailable');
    expect(body.error.message).toMatch(/^the database stopped answering while this create was being committed, so it may have been made and charged/);
    expect(body.error.message).not.toContain('nothing was changed');
    expect(body.error.details).toEqual([{ field: '', rule: 'create_outcome_unknown' }]);
    // And so it was.
    expect(await predictionsOf('unknown')).toHaveLength(1);
    expect(await balanceOf(db, 'unknown')).toBe(900);
  });
});
