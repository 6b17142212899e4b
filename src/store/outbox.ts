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

/** Writes messages in the caller's transaction; returns them with their row ids, in order. */
export async function enqueueOutbox(tx: Queryable, messages: readonly OutboxMessage[]): Promise<PendingOutboxMessage[]> {
  if (messages.length === 0) return [];
  const { rows } = await tx.query<{ id: string | number }>(
    `INSERT INTO outbox (subject, msg_id, payload)
     SELECT subject, msg_id, payload FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS v(subject, msg_id, payload, n)
     ORDER BY n RETURNING id`,
    [messages.map((m) => m.subject), messages.map((m) => m.msgId), messages.map((m) => JSON.stringify(m.payload))],
  );
  return messages.map((message, index) => ({ ...message, id: Number(rows[index]!.id) }));
}

/** Rows written at least olderThanMs ago and not yet published (their writer crashed, or NATS was away). */
export async function pendingOutbox(db: Queryable, max: number, olderThanMs = 0): Promise<PendingOutboxMessage[]> {
  const { rows } = await db.query<{ id: string | number; subject: string; msg_id: string; payload: string }>(
    `SELECT id, subject, msg_id, payload FROM outbox WHERE created_at <= now() - $2 * interval '1 millisecond' ORDER BY id LIMIT $1`,
    [max, olderThanMs],
  );
  return rows.map((row) => ({ id: Number(row.id), subject: row.subject, msgId: row.msg_id, payload: JSON.parse(row.payload) as unknown }));
}

export async function removeFromOutbox(db: Queryable, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query('DELETE FROM outbox WHERE id = ANY($1::bigint[])', [ids]);
}
