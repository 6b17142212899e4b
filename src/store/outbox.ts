import type { Queryable } from './database.ts';

export interface OutboxMessage {
  subject: string;
  /** Becomes Nats-Msg-Id, so a message published twice is stored once. */
  msgId: string;
  payload: unknown;
}

export interface PendingOutboxMessage extends OutboxMessage {
  id: number;
}

export async function enqueueOutbox(tx: Queryable, message: OutboxMessage): Promise<void> {
  await tx.query('INSERT INTO outbox (subject, msg_id, payload) VALUES ($1, $2, $3::jsonb)', [
    message.subject,
    message.msgId,
    JSON.stringify(message.payload),
  ]);
}

export async function pendingOutbox(db: Queryable, max: number): Promise<PendingOutboxMessage[]> {
  const { rows } = await db.query<{ id: string | number; subject: string; msg_id: string; payload: unknown }>(
    'SELECT id, subject, msg_id, payload FROM outbox ORDER BY id LIMIT $1',
    [max],
  );
  return rows.map((row) => ({ id: Number(row.id), subject: row.subject, msgId: row.msg_id, payload: row.payload }));
}

export async function removeFromOutbox(db: Queryable, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query('DELETE FROM outbox WHERE id = ANY($1::bigint[])', [ids]);
}
