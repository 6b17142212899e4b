import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Database, Queryable } from './database.ts';

/** An authenticated caller. */
export interface Principal {
  userId: string;
  keyId: string;
}

export interface UserSummary {
  userId: string;
  balanceCents: number;
  keys: { keyId: string; label: string | null; createdAt: string; revokedAt: string | null }[];
}

export class AccountError extends Error {
  constructor(
    message: string,
    readonly code: 'unknown_user' | 'unknown_key' | 'invalid_amount' | 'key_taken' | 'key_revoked',
  ) {
    super(message);
  }
}

/**
 * Keys are stored as SHA-256 digests: a leaked table reveals no usable key. Keys we mint
 * carry 256 random bits, so a fast digest is enough; keys an operator chooses through
 * API_KEYS should be equally long (documented).
 */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

export function generateApiKey(): string {
  return `qra_${randomBytes(32).toString('base64url')}`;
}

export async function authenticate(db: Queryable, presentedKey: string): Promise<Principal | null> {
  const presentedHash = hashApiKey(presentedKey);
  const { rows } = await db.query<{ id: string; user_id: string; key_hash: string }>(
    'SELECT id, user_id, key_hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [presentedHash],
  );
  const row = rows[0];
  // The index lookup already matched; the constant-time comparison keeps the decision
  // itself free of early exits on the secret-derived value.
  if (!row || !timingSafeEqual(Buffer.from(row.key_hash, 'hex'), Buffer.from(presentedHash, 'hex'))) return null;
  return { userId: row.user_id, keyId: row.id };
}

export async function ensureUser(db: Queryable, userId: string): Promise<void> {
  await db.query('INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [userId]);
}

export async function grantCredits(db: Database, userId: string, cents: number): Promise<number> {
  if (!Number.isSafeInteger(cents) || cents <= 0) throw new AccountError('amount must be a positive number of credits with at most two decimals', 'invalid_amount');
  return db.transaction((tx) => grantWithin(tx, userId, cents));
}

/** A grant inside the caller's transaction: the balance and its ledger row; returns the new balance. */
async function grantWithin(tx: Queryable, userId: string, cents: number): Promise<number> {
  const { rows } = await tx.query<{ balance_cents: string }>('UPDATE users SET balance_cents = balance_cents + $2 WHERE id = $1 RETURNING balance_cents', [userId, cents]);
  if (!rows[0]) throw new AccountError(`no user ${userId}`, 'unknown_user');
  await tx.query("INSERT INTO credit_ledger (user_id, delta_cents, reason) VALUES ($1, $2, 'grant')", [userId, cents]);
  return Number(rows[0].balance_cents);
}

export interface AddedKey {
  keyId: string;
  /** False: the user had this key already; nothing was stored or granted. */
  created: boolean;
  balanceCents: number;
}

/**
 * Stores a key for the user (creating the user when new) and, only when the key is new, grants
 * `grantCents`, in one transaction: a provisioning script run twice grants once, as API_KEYS
 * does. The same key id comes back when the user has the key already, unless it was revoked.
 */
export async function addApiKey(db: Database, userId: string, apiKey: string, label: string | null = null, grantCents = 0): Promise<AddedKey> {
  const keyId = `key_${randomBytes(8).toString('hex')}`;
  return db.transaction(async (tx) => {
    await ensureUser(tx, userId);
    const { rows } = await tx.query<{ id: string; user_id: string; revoked_at: Date | null }>(
      'SELECT id, user_id, revoked_at FROM api_keys WHERE key_hash = $1',
      [hashApiKey(apiKey)],
    );
    const existing = rows[0];
    if (existing) {
      if (existing.user_id !== userId) throw new AccountError('that API key belongs to another user', 'key_taken');
      // Storing it again must not look like a key that works: a revocation is for good.
      if (existing.revoked_at !== null) throw new AccountError(`that API key was revoked (${existing.id}), and a revoked key stays revoked: create a new one`, 'key_revoked');
      return { keyId: existing.id, created: false, balanceCents: await balanceOf(tx, userId) };
    }
    await tx.query('INSERT INTO api_keys (id, user_id, key_hash, label) VALUES ($1, $2, $3, $4)', [
      keyId,
      userId,
      hashApiKey(apiKey),
      label,
    ]);
    return { keyId, created: true, balanceCents: grantCents > 0 ? await grantWithin(tx, userId, grantCents) : await balanceOf(tx, userId) };
  });
}

export async function revokeApiKey(db: Queryable, keyId: string): Promise<void> {
  const { rows } = await db.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id', [keyId]);
  if (rows.length === 0) throw new AccountError(`no key ${keyId}`, 'unknown_key');
}

export async function balanceOf(db: Queryable, userId: string): Promise<number> {
  const { rows } = await db.query<{ balance_cents: string }>('SELECT balance_cents FROM users WHERE id = $1', [userId]);
  if (!rows[0]) throw new AccountError(`no user ${userId}`, 'unknown_user');
  return Number(rows[0].balance_cents);
}

export async function listAccounts(db: Queryable): Promise<UserSummary[]> {
  const { rows: users } = await db.query<{ id: string; balance_cents: string }>('SELECT id, balance_cents FROM users ORDER BY id');
  const { rows: keys } = await db.query<{ id: string; user_id: string; label: string | null; created_at: Date; revoked_at: Date | null }>(
    'SELECT id, user_id, label, created_at, revoked_at FROM api_keys ORDER BY created_at',
  );
  return users.map((user) => ({
    userId: user.id,
    balanceCents: Number(user.balance_cents),
    keys: keys
      .filter((key) => key.user_id === user.id)
      .map((key) => ({
        keyId: key.id,
        label: key.label,
        createdAt: new Date(key.created_at).toISOString(),
        revokedAt: key.revoked_at ? new Date(key.revoked_at).toISOString() : null,
      })),
  }));
}

/**
 * Seeds users and keys from API_KEYS ("userId:apiKey:credits,..."). Idempotent, also when
 * several replicas start at once: each entry is one transaction that inserts the key with
 * ON CONFLICT DO NOTHING and grants the credits only when its insert took. A concurrent
 * insert of the same key waits on the unique index for the first transaction, then does
 * nothing, so a new user is granted once whatever the race, and restarting with the same
 * variable never mints credits again.
 *
 * A key already stored is left as it is, also when it was revoked or is another user's: the
 * variable never undoes a revocation or moves a key. Those entries are returned, so that the
 * operator is told why a key listed there does not work as listed.
 */
export async function seedFromSpec(db: Database, spec: readonly SeedEntry[]): Promise<SeedConflict[]> {
  const conflicts: SeedConflict[] = [];
  for (const entry of spec) {
    const keyHash = hashApiKey(entry.apiKey);
    const { rows } = await db.query<{ id: string; user_id: string; revoked_at: Date | null }>(
      'SELECT id, user_id, revoked_at FROM api_keys WHERE key_hash = $1',
      [keyHash],
    );
    const stored = rows[0];
    if (stored) {
      if (stored.revoked_at) conflicts.push({ userId: entry.userId, keyId: stored.id, reason: 'key_revoked', owner: stored.user_id });
      else if (stored.user_id !== entry.userId) conflicts.push({ userId: entry.userId, keyId: stored.id, reason: 'other_user', owner: stored.user_id });
      continue;
    }
    await db.transaction(async (tx) => {
      await ensureUser(tx, entry.userId);
      const { rows: inserted } = await tx.query(
        `INSERT INTO api_keys (id, user_id, key_hash, label) VALUES ($1, $2, $3, 'API_KEYS')
         ON CONFLICT (key_hash) DO NOTHING RETURNING id`,
        [`key_${randomBytes(8).toString('hex')}`, entry.userId, keyHash],
      );
      if (inserted.length === 0 || entry.credits <= 0) return;
      await grantWithin(tx, entry.userId, Math.round(entry.credits * 100));
    });
  }
  return conflicts;
}

/** An API_KEYS entry whose key was already stored in a way the entry does not say. */
export interface SeedConflict {
  /** The user the entry names. */
  userId: string;
  /** The stored key's id (never the key). */
  keyId: string;
  /** key_revoked: revoked with `qr-art keys revoke`; other_user: stored under `owner`. */
  reason: 'key_revoked' | 'other_user';
  /** The user the stored key belongs to. */
  owner: string;
}

export interface SeedEntry {
  userId: string;
  apiKey: string;
  credits: number;
}
