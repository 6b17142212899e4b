import path from 'node:path';
import { parseArgs } from 'node:util';
import { apiKeyProblem, creditsProblem, postgresLimits, type Config } from '../config.ts';
import { addApiKey, AccountError, generateApiKey, grantCredits, listAccounts, revokeApiKey } from '../store/accounts.ts';
import { openDatabase } from '../store/open-database.ts';
import { centsToCredits } from '../workflows/pricing.ts';

export const KEYS_USAGE = `qr-art keys <action>

  create --user ID [--credits N] [--label TEXT] [--key KEY]   create the user if new, mint (or store: 24+ characters) a key, grant credits
                                                               (a --key stored already: nothing is granted again)
  credit --user ID --credits N                                 add credits to a user
  list                                                         users, balances and keys (never the keys themselves)
  revoke --key-id KEY_ID                                       revoke a key
  --json                                                       print the result as JSON

Uses DATABASE_URL, or the embedded database in DATA_DIR. The service may be running: with
the embedded database, stop it first (PGlite allows one process at a time; while the service
holds it, this waits up to 12 s and exits 1 saying so).`;

/** Credits given on the command line ("12.5") as integer cents, refusing fractions of a cent. */
function parseCredits(value: string | undefined): number {
  if (value === undefined) return 0;
  const problem = creditsProblem(value);
  if (problem) throw new AccountError(`--credits ${problem}`, 'invalid_amount');
  return Math.round(Number(value) * 100);
}

const ACTIONS: readonly string[] = ['create', 'credit', 'list', 'revoke'];

export async function keysCommand(argv: string[], config: Config): Promise<number> {
  const [action, ...rest] = argv;
  if (!action || action === '--help' || action === '-h' || action === 'help') {
    console.log(KEYS_USAGE);
    return action ? 0 : 1;
  }
  // Before the database is opened: a typo must not wait for (or create) the embedded one.
  if (!ACTIONS.includes(action)) {
    console.error(`unknown action '${action}'\n\n${KEYS_USAGE}`);
    return 1;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      user: { type: 'string' },
      credits: { type: 'string' },
      label: { type: 'string' },
      key: { type: 'string' },
      'key-id': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const keyProblem = values.key === undefined ? undefined : apiKeyProblem(values.key);
  if (keyProblem) {
    console.error(`--key: ${keyProblem}`);
    return 1;
  }
  const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: path.join(config.DATA_DIR, 'pglite'), limits: postgresLimits(config) });
  try {
    switch (action) {
      case 'create': {
        if (!values.user) throw new AccountError('--user is required', 'unknown_user');
        const cents = parseCredits(values.credits);
        const apiKey = values.key ?? generateApiKey();
        const { keyId, created, balanceCents } = await addApiKey(db, values.user, apiKey, values.label ?? null, cents);
        // Run again with the same --key (a provisioning script retried): the key is there, and granting again would pay twice.
        if (!created) console.error(`that key is stored already (${keyId})${cents > 0 ? '; its credits were granted when it was created, not again: `keys credit` adds more' : ''}`);
        const credits = centsToCredits(balanceCents);
        print(values.json, { userId: values.user, keyId, apiKey, created, credits }, `user ${values.user}  key id ${keyId}  credits ${credits}${created ? `\nAPI key (shown once): ${apiKey}` : ''}`);
        return 0;
      }
      case 'credit': {
        if (!values.user) throw new AccountError('--user is required', 'unknown_user');
        if (values.credits === undefined) throw new AccountError('--credits is required: how many to add', 'invalid_amount');
        const balance = await grantCredits(db, values.user, parseCredits(values.credits));
        print(values.json, { userId: values.user, credits: centsToCredits(balance) }, `user ${values.user}  credits ${centsToCredits(balance)}`);
        return 0;
      }
      case 'list': {
        const accounts = await listAccounts(db);
        const text = accounts
          .map((account) =>
            [`${account.userId}  credits ${centsToCredits(account.balanceCents)}`, ...account.keys.map((key) => `  ${key.keyId}  ${key.label ?? ''}  created ${key.createdAt}${key.revokedAt ? `  REVOKED ${key.revokedAt}` : ''}`)].join('\n'),
          )
          .join('\n');
        print(values.json, accounts.map((a) => ({ ...a, credits: centsToCredits(a.balanceCents) })), text || '(no users)');
        return 0;
      }
      case 'revoke': {
        if (!values['key-id']) throw new AccountError('--key-id is required', 'unknown_key');
        await revokeApiKey(db, values['key-id']);
        print(values.json, { keyId: values['key-id'], revoked: true }, `revoked ${values['key-id']}`);
        return 0;
      }
      default:
        throw new Error(`unhandled action '${action}'`);
    }
  } catch (error) {
    if (error instanceof AccountError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  } finally {
    await db.close();
  }
}

function print(json: boolean | undefined, value: unknown, text: string): void {
  console.log(json ? JSON.stringify(value, null, 2) : text);
}
