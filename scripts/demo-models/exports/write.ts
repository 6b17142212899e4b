/**
 * Writes every export-matrix fixture to a folder of your choosing, one sub-folder per row id, so
 * the matrix can be re-run by hand: `npx tsx scripts/demo-models/exports/write.ts /tmp/matrix`
 * prints each row's manifest, and `node bin/qr-art.js models check --manifest <it>` checks it
 * (the same command the matrix test runs on each).
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { FIXTURES } from './index.ts';

const [target] = process.argv.slice(2);
if (!target) {
  console.error('usage: npx tsx scripts/demo-models/exports/write.ts <output folder>');
  process.exit(2);
}
for (const row of FIXTURES) {
  const dir = join(resolve(target), row.contract.id);
  await mkdir(dir, { recursive: true });
  const manifest = await row.build(dir);
  console.log(`${row.contract.verdict.padEnd(8)} ${row.contract.id.padEnd(48)} ${manifest}`);
}
