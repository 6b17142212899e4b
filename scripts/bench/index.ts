// npm run bench -- <name> [options]: the benchmarks, one file each.
const BENCHES: Record<string, string> = {
  api: './api.ts',
  outages: './outages.ts',
  outpaint: './outpaint.ts',
  qr: './qr.ts',
  scale: './scale.ts',
  scan: './scan.ts',
  'scan-check': './scan-check-table.ts',
  'scan-corpus': './scan-corpus.ts',
  'scan-regen': './scan-regen.ts',
  worker: './worker.ts',
};

const [name] = process.argv.slice(2);
if (!name || !(name in BENCHES)) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> [options]`);
  process.exit(1);
}
process.argv.splice(2, 1);
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  // Each bench says what it measures and how it is called in its opening comment: that is its help.
  const { readFile } = await import('node:fs/promises');
  const source = await readFile(new URL(BENCHES[name]!, import.meta.url), 'utf8');
  const header = /^\/\*\*([\s\S]*?)\*\//.exec(source)?.[1] ?? '';
  console.log(header.split('\n').map((line) => line.replace(/^ ?\* ?/, '')).join('\n').trim());
  process.exit(0);
}
await import(BENCHES[name]!);
