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
  const usage = `usage: npm run bench -- <${Object.keys(BENCHES).join('|')}> [options]; npm run bench -- <name> --help says what one measures`;
  // Asked for help: the answer, exit 0. No name or an unknown one: a wrong call, exit 2 as every bench's.
  if (name === '--help' || name === '-h') {
    console.log(usage);
    process.exit(0);
  }
  console.error(name ? `unknown bench '${name}'; ${usage}` : usage);
  process.exit(2);
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
try {
  await import(BENCHES[name]!);
} catch (error) {
  // A wrong call is said in one line, as the usage line above is; anything else keeps its stack.
  const { BenchUsageError } = await import('./usage-error.ts');
  const usage = error instanceof BenchUsageError || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS');
  if (!usage) throw error;
  console.error(`${name}: ${(error as Error).message} (npm run bench -- ${name} --help)`);
  process.exit(2);
}
