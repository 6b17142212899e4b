/** docs/models.md §5's export-matrix table is the one generated from the contracts (run `npx tsx scripts/demo-models/exports/table.ts --write` after changing a contract). */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { DOC, exportTable, tableIn } from '../../scripts/demo-models/exports/table.ts';
import { CONTRACTS } from '../../src/models/contracts/index.ts';

describe('docs/models.md export matrix', () => {
  it('equals the table generated from the contracts', async () => {
    expect(tableIn(await readFile(DOC, 'utf8'))).toBe(exportTable());
  });

  it('lists every contract once', () => {
    const table = exportTable();
    for (const c of CONTRACTS) expect(table.split(`\`${c.id}\``).length - 1, c.id).toBe(1);
  });
});
