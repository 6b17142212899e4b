/**
 * The expiry backstop: a prediction left queued or executing long after it last changed (its job
 * or its status event lost) is failed as expired and refunded once; recent and finished ones are
 * left alone, and a result that comes after the expiry does not undo it.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPIRED_ERROR, expireUnfinished } from '../../src/predictions/expiry.ts';
import type { OutboxRelay } from '../../src/queue/outbox-relay.ts';
import { balanceOf, ensureUser, grantCredits } from '../../src/store/accounts.ts';
import type { Database } from '../../src/store/database.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import type { PendingOutboxMessage } from '../../src/store/outbox.ts';
import type { PredictionRecord } from '../../src/store/prediction-record.ts';
import { applyTransition } from '../../src/store/prediction-transitions.ts';
import { createPrediction } from '../../src/store/predictions.ts';
import { webhookDeliveryFor } from '../../src/predictions/webhook-delivery.ts';
import { testDatabaseUrl } from '../helpers/database.ts';

const HOUR = 3600_000;

describe('expiring unfinished predictions', () => {
  let dir: string;
  let db: Database;
  let drop: () => Promise<void>;
  const published: PendingOutboxMessage[] = [];
  const changed: PredictionRecord[] = [];
  const relay: OutboxRelay = { publish: (messages) => void published.push(...messages), sweep: async () => undefined, stop: async () => undefined };
  const deps = () => ({ db, relay, onChange: (record: PredictionRecord) => void changed.push(record) });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'qrart-expiry-'));
    const database = await testDatabaseUrl();
    drop = database.drop;
    db = await openDatabase({ pgliteDir: dir, ...(database.url ? { databaseUrl: database.url } : {}) });
    await ensureUser(db, 'ines');
    await grantCredits(db, 'ines', 1000);
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
    await rm(dir, { recursive: true, force: true });
  });

  /** A prediction of ines, as created `ageMs` ago, with a webhook. */
  async function prediction(ageMs: number, userId = 'ines'): Promise<string> {
    const id = randomUUID();
    await createPrediction(db, { id, userId, workflow: 'generate_qr_art_v4s', input: { workflow: 'generate_qr_art_v4s' }, imageCount: 1, costCents: 100, webhook: 'https://example.com/hook', job: { subject: 'qrart.jobs.x', msgId: id, payload: { id } } });
    await db.query(`UPDATE predictions SET updated_at = now() - make_interval(secs => $2::double precision / 1000) WHERE id = $1`, [id, ageMs]);
    return id;
  }
  const statusOf = async (id: string) => (await db.query<{ status: string; refunded: boolean }>('SELECT status, refunded FROM predictions WHERE id = $1', [id])).rows[0]!;

  it('fails and refunds, once, what has been queued or executing past the limit; leaves the rest', async () => {
    const stale = await prediction(25 * HOUR);
    const staleExecuting = await prediction(30 * HOUR);
    await db.query(`UPDATE predictions SET status = 'executing' WHERE id = $1`, [staleExecuting]);
    const recent = await prediction(HOUR);
    const finished = await prediction(48 * HOUR);
    await applyTransition(db, finished, { status: 'failed', at: new Date().toISOString(), refund: true, error: { code: 'invalid_input', message: 'x' } }, webhookDeliveryFor);
    const before = await balanceOf(db, 'ines');

    expect(await expireUnfinished(deps(), 24 * HOUR)).toBe(2);
    for (const id of [stale, staleExecuting]) expect(await statusOf(id)).toEqual({ status: 'failed', refunded: true });
    expect(await statusOf(recent)).toEqual({ status: 'queued', refunded: false });
    expect(await balanceOf(db, 'ines')).toBe(before + 200);
    expect(changed.map((record) => [record.id, record.error])).toEqual([
      [staleExecuting, EXPIRED_ERROR],
      [stale, EXPIRED_ERROR],
    ]);
    // The webhooks of both go out.
    expect(published).toHaveLength(2);

    // A second sweep (another replica's) finds nothing; a result that comes late changes nothing.
    expect(await expireUnfinished(deps(), 24 * HOUR)).toBe(0);
    const late = await applyTransition(db, stale, { status: 'executed', at: new Date().toISOString(), output: { images: [] }, isScanables: [] } as never, webhookDeliveryFor);
    expect(late.applied).toBe(false);
    expect(await statusOf(stale)).toEqual({ status: 'failed', refunded: true });
    expect(await balanceOf(db, 'ines')).toBe(before + 200);
  });

  it('refunds a backlog larger than one batch in one sweep, not 100 every 10 minutes', async () => {
    await ensureUser(db, 'otto');
    await grantCredits(db, 'otto', 230 * 100);
    const ids: string[] = [];
    for (let i = 0; i < 230; i++) ids.push(await prediction(26 * HOUR, 'otto'));
    expect(await expireUnfinished(deps(), 24 * HOUR)).toBe(230);
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM predictions WHERE user_id = 'otto' AND status = 'failed' AND refunded`);
    expect(Number(rows[0]!.n)).toBe(230);
  });
});
