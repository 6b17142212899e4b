/**
 * The scan check on QR art, ladder by ladder, against referees:
 *   npx tsx scripts/bench/scan-corpus.ts [--corpus DIR] [--styled 100] [--seed 5] [--ladders a,b] [--uhd 12] [--runs 15]
 *
 * Corpora: the generated art in DIR (default data/scan-corpus/generated) (scan-corpus-make.ts: demo-model art as generated, and
 * its phone captures; skipped when DIR has no corpus.json) and `--styled` codes stylized by
 * image operations (scan-corpus-styled.ts), with their captures. Every image encodes exactly
 * one content. For each ladder (scan-corpus-ladders.ts) and each kind of image it reports the
 * share the check reads, how that agrees with the referees (scan-corpus-referees.ts: ZBar,
 * OpenCV, and WeChat's decoder where installed, on the image and camera-like views), wrong
 * reads (a decoder reading any other text: must be 0) and the time per image (median, p95,
 * max) at SD (short side <= 800 px) and at UltraHD (`--uhd` corpus images upscaled to a
 * 3840 px long side), and the synthetic timing cases of scan-check.ts (`--runs` runs each).
 * For the ladder in use it also checks that every image is refused for a content it does not
 * encode.
 */
import { parseArgs } from 'node:util';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { rawImage, type RawImage } from '../../src/image/raw.ts';
import { scanCheck, SCAN_LADDER, type Rung } from '../../src/qr/scan.ts';
import { benchScanCheck, summarize } from './scan-check.ts';
import { readCorpus, type CorpusImage } from './scan-corpus-files.ts';
import { BENCH_LADDERS } from './scan-corpus-ladders.ts';
import { Referees, type RefereeReads } from './scan-corpus-referees.ts';
import { styledCorpus } from './scan-corpus-styled.ts';
import { BenchUsageError, wholeNumber } from './usage-error.ts';

const { values } = parseArgs({
  options: {
    corpus: { type: 'string', default: 'data/scan-corpus/generated' },
    styled: { type: 'string', default: '100' },
    seed: { type: 'string', default: '5' },
    ladders: { type: 'string' },
    uhd: { type: 'string', default: '12' },
    runs: { type: 'string', default: '15' },
    json: { type: 'string' },
  },
  allowPositionals: true,
});
sharp.concurrency(1);
const styled = wholeNumber('styled', values.styled, 0);
const uhdCount = wholeNumber('uhd', values.uhd, 0);
const runs = wholeNumber('runs', values.runs, 1);
const corpusSeed = wholeNumber('seed', values.seed, 0);
const ladderNames = values.ladders ? values.ladders.split(',') : Object.keys(BENCH_LADDERS);
for (const name of ladderNames) if (!BENCH_LADDERS[name]) throw new BenchUsageError(`unknown ladder ${name}; known: ${Object.keys(BENCH_LADDERS).join(', ')}`);

const t0 = performance.now();
const corpus: CorpusImage[] = [];
if (existsSync(join(values.corpus, 'corpus.json'))) corpus.push(...(await readCorpus(values.corpus)));
else console.log(`no generated corpus in ${values.corpus} (make one: npx tsx scripts/bench/scan-corpus-make.ts)`);
corpus.push(...(await styledCorpus(styled, corpusSeed)));
if (corpus.length === 0) throw new BenchUsageError(`no images to read: no generated corpus in ${values.corpus} and --styled 0`);

interface Outcome {
  readonly read: boolean;
  readonly wrong?: string;
  readonly ms: number;
}

const referees = new Referees();
const refs: RefereeReads[] = [];
const outcomes = new Map<string, Outcome[]>(ladderNames.map((n) => [n, []]));
let falseClaims = 0;
async function timed(image: RawImage, expected: string, codeSide: number, ladder: readonly Rung[]): Promise<Outcome> {
  const start = performance.now();
  const verdict = await scanCheck(image, expected, { codeSide, ladder });
  return { read: verdict.scannable, ms: performance.now() - start, ...(verdict.otherContent !== undefined ? { wrong: verdict.otherContent } : {}) };
}
await scanCheck(corpus[0]!.image, corpus[0]!.expected); // warm-up: wasm instantiation, JIT
for (const [i, c] of corpus.entries()) {
  refs.push(await referees.read(c.image, c.codeSide, c.expected));
  for (const name of ladderNames) outcomes.get(name)!.push(await timed(c.image, c.expected, c.codeSide, BENCH_LADDERS[name]!));
  if ((await scanCheck(c.image, `${c.expected}#`, { codeSide: c.codeSide })).scannable) falseClaims++;
  process.stderr.write(`\r${i + 1}/${corpus.length} images`);
}
process.stderr.write('\n');
referees.close();

const pct = (n: number, d: number) => (d === 0 ? 'n/a' : `${((100 * n) / d).toFixed(1)}%`);
const kinds = [...new Set(corpus.map((c) => c.kind))];
const byKind = (kind: string) => corpus.flatMap((c, i) => (c.kind === kind ? [i] : []));
const anyRef = (i: number) => Object.values(refs[i]!.anyView).some(Boolean);

console.log(`\nScan check on QR art: ${corpus.length} images, Node ${process.version}, referees ${referees.names().join(', ')}`);
console.table(
  kinds.map((kind) => {
    const is = byKind(kind);
    const row: Record<string, string | number> = { kind, images: is.length };
    for (const name of referees.names()) row[`${name} (given / any view)`] = `${pct(is.filter((i) => refs[i]!.given[name]).length, is.length)} / ${pct(is.filter((i) => refs[i]!.anyView[name]).length, is.length)}`;
    row['any referee'] = pct(is.filter(anyRef).length, is.length);
    return row;
  }),
);
const refereeOther = refs.flatMap((r) => r.other);
if (refereeOther.length) console.log(`referees read other texts ${refereeOther.length} times: the corpus is unsound (${refereeOther.slice(0, 3).join(' | ')})`);

for (const kind of kinds) {
  const is = byKind(kind);
  console.log(`\n${kind}: ${is.length} images, a referee reads ${is.filter(anyRef).length}`);
  console.table(
    ladderNames.map((name) => {
      const o = outcomes.get(name)!;
      const read = is.filter((i) => o[i]!.read);
      const ms = summarize(is.map((i) => o[i]!.ms));
      return {
        ladder: name,
        reads: `${read.length} (${pct(read.length, is.length)})`,
        'and a referee': read.filter(anyRef).length,
        'no referee': read.filter((i) => !anyRef(i)).length,
        'referee only (missed)': is.filter((i) => anyRef(i) && !o[i]!.read).length,
        'wrong reads': is.filter((i) => o[i]!.wrong !== undefined).length,
        'ms median / p95 / max': `${ms.medianMs.toFixed(1)} / ${ms.p95Ms.toFixed(1)} / ${Math.max(...is.map((i) => o[i]!.ms)).toFixed(1)}`,
      };
    }),
  );
}

// Time at SD over the corpus, split by verdict, then at UltraHD on upscaled copies.
const sd = corpus.flatMap((c, i) => (Math.min(c.image.width, c.image.height) <= 800 && Math.min(c.image.width, c.image.height) >= 256 ? [i] : []));
const timeRow = (name: string, ms: readonly number[]) => {
  const s = summarize(ms);
  return ms.length ? `${s.medianMs.toFixed(1)} / ${s.p95Ms.toFixed(1)} / ${Math.max(...ms).toFixed(1)} (${ms.length})` : 'n/a';
};
const uhdPicks = corpus.flatMap((c, i) => (c.kind === 'art' || c.kind === 'styled' ? [i] : [])).filter((_, k, all) => k % Math.max(1, Math.floor(all.length / uhdCount)) === 0).slice(0, uhdCount);
const uhd: Array<{ image: RawImage; expected: string; codeSide: number }> = [];
for (const i of uhdPicks) {
  const c = corpus[i]!;
  const factor = 3840 / Math.max(c.image.width, c.image.height);
  const { data, info } = await sharp(c.image.data, { raw: { width: c.image.width, height: c.image.height, channels: c.image.channels } })
    .resize(Math.round(c.image.width * factor), Math.round(c.image.height * factor), { kernel: 'lanczos3' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  uhd.push({ image: rawImage(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height, 3), expected: c.expected, codeSide: Math.round(c.codeSide * factor) });
}
const timing = [];
for (const name of ladderNames) {
  const o = outcomes.get(name)!;
  const uhdOutcomes: Outcome[] = [];
  for (const u of uhd) uhdOutcomes.push(await timed(u.image, u.expected, u.codeSide, BENCH_LADDERS[name]!));
  timing.push({
    ladder: name,
    'SD read: ms median / p95 / max (n)': timeRow(name, sd.filter((i) => o[i]!.read).map((i) => o[i]!.ms)),
    'SD not read': timeRow(name, sd.filter((i) => !o[i]!.read).map((i) => o[i]!.ms)),
    'UltraHD read': timeRow(name, uhdOutcomes.filter((u) => u.read).map((u) => u.ms)),
    'UltraHD not read': timeRow(name, uhdOutcomes.filter((u) => !u.read).map((u) => u.ms)),
  });
}
console.log('\nTime per scanCheck (one core, in process); targets: SD read <= 40 ms median, UltraHD read <= 200 ms median, not read bounded');
console.table(timing);
const synthetic = [];
for (const name of ladderNames) {
  for (const [image, t] of Object.entries(await benchScanCheck(runs, BENCH_LADDERS[name]))) {
    synthetic.push({ ladder: name, image, 'ms median / p95 / max': `${t.medianMs.toFixed(1)} / ${t.p95Ms.toFixed(1)} / ${(t.maxMs ?? NaN).toFixed(1)}` });
  }
}
console.log('\nSynthetic timing cases (scan-check.ts): a plain code on a noisy canvas, and the same with its finders painted over');
console.table(synthetic);
if (values.json) {
  const perImage = corpus.map((c, i) => ({ file: c.file, kind: c.kind, about: c.style ?? `${c.workflow} ${c.pattern} v${c.version}`, referees: refs[i]!.anyView, reads: Object.fromEntries(ladderNames.map((n) => [n, outcomes.get(n)![i]!.read])) }));
  await writeFile(values.json, JSON.stringify(perImage, null, 1));
}
console.log(`\nSCAN_LADDER (${SCAN_LADDER.length} rungs) said true for a content the image does not encode: ${falseClaims} of ${corpus.length} (must be 0)`);
console.log(`wall ${((performance.now() - t0) / 1000).toFixed(0)} s`);
