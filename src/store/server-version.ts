import type { Queryable } from './database.ts';

/**
 * The oldest PostgreSQL the store runs on. A create whose COMMIT went unanswered is looked up by
 * its transaction id (pg_current_xact_id, pg_xact_status on xid8), which came with 13: on an
 * older server the migrations pass and every create then fails.
 */
export const MIN_SERVER_VERSION_NUM = 130000;

export class UnsupportedServerError extends Error {
  override readonly name = 'UnsupportedServerError';
}

/** Refuses a server older than MIN_SERVER_VERSION_NUM, at start, in one line naming both versions. */
export async function refuseUnsupportedServer(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ server_version: string; server_version_num: string }>(
    `SELECT current_setting('server_version') AS server_version, current_setting('server_version_num') AS server_version_num`,
  );
  const found = Number(rows[0]?.server_version_num);
  if (Number.isFinite(found) && found < MIN_SERVER_VERSION_NUM) {
    throw new UnsupportedServerError(
      `PostgreSQL ${rows[0]!.server_version} is not supported: qr-art needs PostgreSQL ${MIN_SERVER_VERSION_NUM / 10000} or later (it uses pg_current_xact_id and pg_xact_status)`,
    );
  }
}
