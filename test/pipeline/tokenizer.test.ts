import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDemoTokenizer, DEMO_CORPUS, learnMerges } from '../../scripts/demo-models/vocab.ts';
import { bpe, byteAlphabet, bytesToUnicode, mergeRanks, normalizeText, preTokenize, toByteLevel } from '../../src/pipeline/clip-bpe.ts';
import { parseMergesTxt } from '../../src/pipeline/tokenizer-files.ts';
import { ClipTokenizer } from '../../src/pipeline/tokenizer.ts';

const BOS = 49406;
const EOS = 49407;
const DEMO_DIR = fileURLToPath(new URL('../../models/demo/tokenizer', import.meta.url));

/** ids 0..511 laid out as CLIP lays them out: byte characters, then the same with </w>. */
function byteVocab(): Map<string, number> {
  const vocab = new Map<string, number>();
  const alphabet = byteAlphabet();
  alphabet.forEach((ch, i) => vocab.set(ch, i));
  alphabet.forEach((ch, i) => vocab.set(`${ch}</w>`, 256 + i));
  vocab.set('<|startoftext|>', BOS);
  vocab.set('<|endoftext|>', EOS);
  return vocab;
}

/** Expected 77 ids: the given prefix, then SD1.5's padding (its eos). */
const padded = (ids: number[], pad = EOS): number[] => [...ids, ...new Array<number>(77 - ids.length).fill(pad)];

// ---------------------------------------------------------------------------------------------
// Hand-made merge table where the order of merges decides the result.

const ORDER_MERGES: [string, string][] = [
  ['w', 'e'], // 0
  ['e', 'r</w>'], // 1: loses to "w e" in "lower"
  ['l', 'o'], // 2
  ['lo', 'we'], // 3
  ['lowe', 'r</w>'], // 4
  ['n', 'e'], // 5
  ['ne', 'w'], // 6: never reached in "newer" because "w e" went first
  ['a', 'a'], // 7
  ['aa', 'aa'], // 8
  ['z', 'z</w>'], // 9: its result is deliberately missing from the vocabulary
];
const ORDER_TOKENS: Record<string, number> = {
  we: 1000, 'er</w>': 1001, lo: 1002, lowe: 1003, 'lower</w>': 1004, ne: 1005, new: 1006, aa: 1007, aaaa: 1008,
};
const orderTokenizer = (merges = ORDER_MERGES): ClipTokenizer => {
  const vocab = byteVocab();
  for (const [t, id] of Object.entries(ORDER_TOKENS)) vocab.set(t, id);
  return new ClipTokenizer({ vocab, merges });
};
const trace = (word: string, merges = ORDER_MERGES): { merges: string[]; symbols: string[] } => {
  const seen: string[] = [];
  const symbols = bpe(word, mergeRanks(merges), (a, b) => seen.push(`${a} ${b}`));
  return { merges: seen, symbols };
};

describe('BPE merge order (hand-made table)', () => {
  it('"lower": the lowest-ranked pair anywhere in the word merges first, not the leftmost', () => {
    expect(trace('lower')).toEqual({ merges: ['w e', 'l o', 'lo we', 'lowe r</w>'], symbols: ['lower</w>'] });
  });

  it('"lower" with two ranks swapped ends differently', () => {
    const swapped: [string, string][] = [ORDER_MERGES[1]!, ORDER_MERGES[0]!, ...ORDER_MERGES.slice(2)];
    expect(trace('lower', swapped)).toEqual({ merges: ['e r</w>', 'l o'], symbols: ['lo', 'w', 'er</w>'] });
  });

  it('"newer": a pair that disappears is never merged, even with a lower rank than what remains', () => {
    expect(trace('newer')).toEqual({ merges: ['w e', 'n e'], symbols: ['ne', 'we', 'r</w>'] });
  });

  it('"aaaaa": one round merges every occurrence left to right without overlap', () => {
    expect(trace('aaaaa')).toEqual({ merges: ['a a', 'aa aa'], symbols: ['aaaa', 'a</w>'] });
    expect(trace('aaa')).toEqual({ merges: ['a a'], symbols: ['aa', 'a</w>'] });
  });

  it('a one-character word is that character with </w>, and the empty word has no symbols', () => {
    expect(trace('x')).toEqual({ merges: [], symbols: ['x</w>'] });
    expect(bpe('', mergeRanks(ORDER_MERGES))).toEqual([]);
  });

  it('the tokenizer applies the same merges and maps tokens to ids', () => {
    const tok = orderTokenizer();
    expect(tok.tokenize('Lower newer')).toEqual(['lower</w>', 'ne', 'we', 'r</w>']);
    const r = byteVocab().get('r</w>')!;
    expect(Array.from(tok.encode('lower newer').slice(0, 6))).toEqual([BOS, 1004, 1005, 1000, r, EOS]);
  });

  it('a merged token missing from the vocabulary falls back to its byte pieces', () => {
    const tok = orderTokenizer();
    expect(tok.tokenize('zz')).toEqual(['zz</w>']);
    const v = byteVocab();
    expect(tok.encodeContent('zz')).toEqual([v.get('z')!, v.get('z</w>')!]);
  });

  it('merges.txt: the #version line is skipped and only the first 48894 merges count, as CLIP reads it', () => {
    expect(parseMergesTxt('#version: 0.2\nw e\ne r</w>\n')).toEqual([['w', 'e'], ['e', 'r</w>']]);
    const many = ['#version: 0.2', ...Array.from({ length: 48_900 }, (_, i) => `a${i} b`)].join('\n');
    const parsed = parseMergesTxt(many);
    expect(parsed).toHaveLength(48_894);
    expect(parsed.at(-1)).toEqual(['a48893', 'b']);
    expect(() => parseMergesTxt('#version: 0.2\nonlyone\n')).toThrow(/bad merge line/);
  });
});

// ---------------------------------------------------------------------------------------------
// Byte table and normalization

describe('byte-level alphabet (GPT-2 bytes_to_unicode, CLIP id order)', () => {
  it('is a bijection; printable bytes map to themselves, the rest to U+0100 onwards', () => {
    const table = bytesToUnicode();
    expect(new Set(table).size).toBe(256);
    expect(table[0x41]).toBe('A');
    expect(table[0x20]).toBe('\u0120'); // space is "Ġ"
    expect(table[0x0a]).toBe('\u010a'); // newline is "Ċ"
    expect(table[0x00]).toBe('\u0100');
    expect(table[0xad]).toBe('\u0143'); // soft hyphen is the last unprintable byte
  });

  it('writes UTF-8 bytes as byte characters (the well-known GPT-2 spellings)', () => {
    expect(toByteLevel('😀')).toBe('ðŁĺĢ');
    expect(toByteLevel('é')).toBe('Ã©');
    expect(toByteLevel('界')).toBe('çķĮ');
  });

  it('orders ids like CLIP: "!" is 0, "~" is 93, "¡" is 94, byte 0 is 188', () => {
    const alphabet = byteAlphabet();
    expect([alphabet[0], alphabet[93], alphabet[94], alphabet[188], alphabet[255]]).toEqual(['!', '~', '¡', '\u0100', '\u0143']);
  });
});

describe('normalization', () => {
  it('collapses whitespace, trims and lowercases', () => {
    expect(normalizeText('  A\tPHOTO\n\nof   a  CAT  ')).toBe('a photo of a cat');
    expect(normalizeText('a\u00a0b\u3000c\u2028d')).toBe('a b c d');
    // The `regex` module's \s (Unicode White_Space): U+0085 is a space, the separators U+001C-U+001F are not.
    expect(normalizeText('x\u0085y\u001cz')).toBe('x y\u001cz');
    expect(preTokenize(normalizeText('x\u0085y\u001cz'))).toEqual(['x', 'y', '\u001c', 'z']);
  });

  it('unescapes html entities twice, as CLIP does', () => {
    expect(normalizeText('rock &amp; roll')).toBe('rock & roll');
    expect(normalizeText('&amp;lt;b&amp;gt;')).toBe('<b>');
    expect(normalizeText('&quot;hi&quot; &#39;x&#39; &#x41;')).toBe('"hi" \'x\' a');
    expect(normalizeText('a&nbsp;b')).toBe('a b');
    expect(normalizeText('&bogus; & &')).toBe('&bogus; & &');
  });

  it('composes to NFC and straightens curly quotes (the part of ftfy that matters for prompts)', () => {
    expect(normalizeText('cafe\u0301')).toBe('café');
    expect(normalizeText('don’t “stop”')).toBe('don\'t "stop"');
  });
});

describe('pre-tokenization (CLIP regex)', () => {
  const tok = orderTokenizer();
  it('splits contractions, punctuation runs and single digits', () => {
    expect(tok.words("don't stop 42 times")).toEqual(['don', "'t", 'stop', '4', '2', 'times']);
    expect(tok.words('hello-world, 3.14 (test)')).toEqual(['hello', '-', 'world', ',', '3', '.', '1', '4', '(', 'test', ')']);
    expect(tok.words("It's wow!!! ...yes")).toEqual(['it', "'s", 'wow', '!!!', '...', 'yes']);
    expect(tok.words('8k, 35mm')).toEqual(['8', 'k', ',', '3', '5', 'mm']);
  });

  it('keeps letters of any script together and puts emoji in punctuation runs', () => {
    expect(tok.words('café 東京 naïve 😀😀')).toEqual(['café', '東京', 'naïve', '😀😀']);
  });

  it('recognizes the special tokens typed in text, like CLIP', () => {
    expect(tok.words('a <|endoftext|> b')).toEqual(['a', '<|endoftext|>', 'b']);
    expect(tok.encodeContent('a <|endoftext|>')).toEqual([320, EOS]);
  });
});

// ---------------------------------------------------------------------------------------------
// Real CLIP encodings found in public sources. The real vocabulary is not here, so the fixture
// below holds only the tokens those encodings use, at their real ids, plus merges we made up
// that build them. What these tests prove is normalization, the split, the byte table, </w>
// placement, the specials, padding and the id layout of single characters; they cannot prove
// that our merge table is CLIP's.

/** Real (token → id) pairs, read off the published encodings below. */
const REAL_TOKENS: Record<string, number> = {
  'photo</w>': 1125, 'of</w>': 539, 'cat</w>': 2368, // zer0int/CLIP-tokenizer README
  'hello</w>': 3306, 'world</w>': 1002, 'don</w>': 847, "'t</w>": 713, 'stop</w>': 1691, // fortmeier/klartraum tests/test_clip_tokenizer.cpp
  'mm</w>': 2848, 'photography</w>': 2108, 'red</w>': 736, 'car</w>': 1615, 'ðŁĺĢ</w>': 7334, // same file
  'times</w>': 1661, 'test</w>': 1628, // a Zig SDXL parity test against transformers' CLIPTokenizer
};

/** Adds, per word, the left-to-right merges that build it, and checks each word ends whole. */
function realFixture(): ClipTokenizer {
  const vocab = byteVocab();
  const merges: [string, string][] = [];
  let nextId = 40_000;
  for (const [token, id] of Object.entries(REAL_TOKENS)) {
    const word = token.slice(0, -'</w>'.length);
    for (;;) {
      const symbols = bpe(word, mergeRanks(merges));
      if (symbols.length === 1) break;
      const merged = symbols[0]! + symbols[1]!;
      merges.push([symbols[0]!, symbols[1]!]);
      if (!vocab.has(merged)) vocab.set(merged, merged === token ? id : nextId++);
    }
    vocab.set(token, id);
  }
  for (const token of Object.keys(REAL_TOKENS)) {
    expect(bpe(token.slice(0, -4), mergeRanks(merges)), token).toEqual([token]);
  }
  return new ClipTokenizer({ vocab, merges });
}

describe('published CLIP encodings (structure and single-character ids)', () => {
  const tok = realFixture();
  const cases: [string, number[]][] = [
    // zer0int/CLIP-tokenizer README; also many model tests ("a photo of a cat").
    ['a photo of a cat', [BOS, 320, 1125, 539, 320, 2368, EOS]],
    // fortmeier/klartraum tests/test_clip_tokenizer.cpp (checked against Hugging Face there).
    ['Hello, world!', [BOS, 3306, 267, 1002, 256, EOS]],
    ["don't stop", [BOS, 847, 713, 1691, EOS]],
    ['35mm photography', [BOS, 274, 276, 2848, 2108, EOS]],
    ['😀 red car', [BOS, 7334, 736, 1615, EOS]],
    // Zig SDXL tokenizer parity test (expected ids generated with transformers' CLIPTokenizer).
    ['A PHOTO of  a Cat!', [BOS, 320, 1125, 539, 320, 2368, 256, EOS]],
    ["don't stop 42 times", [BOS, 847, 713, 1691, 275, 273, 1661, EOS]],
    ['hello-world, 3.14 (test)', [BOS, 3306, 268, 1002, 267, 274, 269, 272, 275, 263, 1628, 264, EOS]],
    // Derived: a published encoding of "你好世界" ends with 163, 243, 490 = bytes e7 95 8c</w>,
    // "界" unmerged; with no merge touching those bytes the same ids come out alone.
    ['界', [BOS, 163, 243, 490, EOS]],
    ['', [BOS, EOS]],
    ['    \t\n', [BOS, EOS]],
  ];
  it.each(cases)('%j', (text, ids) => {
    expect(Array.from(tok.encode(text))).toEqual(padded(ids));
  });

  it('pads with the eos id by default (SD1.5) and with "!" when the config names it (SD2-style)', () => {
    const vocab = byteVocab();
    const sd2 = new ClipTokenizer({ vocab, merges: [], padToken: '!' });
    expect(sd2.padId).toBe(0);
    expect(Array.from(sd2.encode('a'))).toEqual(padded([BOS, 320, EOS], 0));
  });
});

// ---------------------------------------------------------------------------------------------
// Length, truncation, batches, determinism

describe('fixed length and truncation', () => {
  const tok = realFixture();
  const cats = (n: number): string => new Array<string>(n).fill('cat').join(' ');

  it('is always 77 ids: bos first, eos right after the content, eos padding after', () => {
    const ids = tok.encode('a photo of a cat');
    expect(ids).toBeInstanceOf(Int32Array);
    expect(ids.length).toBe(77);
    expect(tok.maxLength).toBe(77);
    expect([tok.bosId, tok.eosId, tok.padId]).toEqual([BOS, EOS, EOS]);
  });

  it.each([
    [74, 'pad in the last slot'],
    [75, 'exactly full'],
    [76, 'one token too many'],
    [300, 'far too long'],
  ])('%i content tokens (%s): at most 75 kept, eos always follows them', (n) => {
    const ids = Array.from(tok.encode(cats(n)));
    expect(ids).toHaveLength(77);
    expect(ids[0]).toBe(BOS);
    const kept = Math.min(n, 75);
    expect(ids.slice(1, 1 + kept).every((id) => id === 2368)).toBe(true);
    expect(ids[1 + kept]).toBe(EOS);
    expect(ids.slice(2 + kept).every((id) => id === EOS)).toBe(true);
    expect(tok.encodeContent(cats(n))).toHaveLength(n);
  });

  it('truncation keeps the first tokens, not the first words, when a word splits', () => {
    const ids = Array.from(tok.encode(`${cats(74)} 42`));
    expect(ids.slice(74, 77)).toEqual([2368, 275, EOS]);
  });

  it('encodeBatch gives row-major [B, 77] rows equal to encode()', () => {
    const texts = ['a photo of a cat', '', cats(100)];
    const batch = tok.encodeBatch(texts);
    expect(batch.length).toBe(3 * 77);
    texts.forEach((t, row) => expect(Array.from(batch.subarray(row * 77, (row + 1) * 77))).toEqual(Array.from(tok.encode(t))));
    expect(tok.encodeBatch([]).length).toBe(0);
  });

  it('is deterministic: the word cache and other prompts do not change a result', () => {
    const fresh = realFixture();
    const first = Array.from(tok.encode("Hello, world! don't stop"));
    tok.encode('😀 red car 35mm photography');
    expect(Array.from(tok.encode("Hello, world! don't stop"))).toEqual(first);
    expect(Array.from(fresh.encode("Hello, world! don't stop"))).toEqual(first);
  });

  it('falls back to the default special ids when the vocabulary lacks them', () => {
    const vocab = byteVocab();
    vocab.delete('<|startoftext|>');
    vocab.delete('<|endoftext|>');
    const t = new ClipTokenizer({ vocab, merges: [] });
    expect([t.bosId, t.eosId, t.padId]).toEqual([BOS, EOS, EOS]);
  });
});

// ---------------------------------------------------------------------------------------------
// Files

describe('loading tokenizer folders', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'clip-tokenizer-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const vocabObject = (): Record<string, number> => {
    const v = byteVocab();
    for (const [t, id] of Object.entries(ORDER_TOKENS)) v.set(t, id);
    return Object.fromEntries(v);
  };
  const prompts = ['Lower newer', 'aaaaa zz', 'a photo of a cat!', '😀 東京'];
  const expected = orderTokenizer();

  it('reads vocab.json + merges.txt', async () => {
    const d = join(dir, 'txt');
    await mkdir(d);
    await writeFile(join(d, 'vocab.json'), JSON.stringify(vocabObject()));
    await writeFile(join(d, 'merges.txt'), `#version: 0.2\n${ORDER_MERGES.map((m) => m.join(' ')).join('\n')}\n`);
    const tok = await ClipTokenizer.load(d);
    for (const p of prompts) expect(Array.from(tok.encode(p))).toEqual(Array.from(expected.encode(p)));
  });

  it.each([
    ['string merges', ORDER_MERGES.map((m) => m.join(' '))],
    ['pair merges', ORDER_MERGES],
  ])('reads tokenizer.json (%s) and a tokenizer_config.json pad token', async (name, merges) => {
    const d = join(dir, name.replace(' ', '-'));
    await mkdir(d);
    const vocab = vocabObject();
    delete vocab['<|startoftext|>'];
    const json = {
      version: '1.0',
      added_tokens: [{ id: BOS, content: '<|startoftext|>', special: true }],
      model: { type: 'BPE', vocab, merges, end_of_word_suffix: '</w>' },
    };
    await writeFile(join(d, 'tokenizer.json'), JSON.stringify(json));
    await writeFile(join(d, 'tokenizer_config.json'), JSON.stringify({ pad_token: { content: '!' }, bos_token: '<|startoftext|>' }));
    const tok = await ClipTokenizer.load(d);
    expect([tok.bosId, tok.eosId, tok.padId]).toEqual([BOS, EOS, 0]);
    for (const p of prompts) expect(tok.encodeContent(p)).toEqual(expected.encodeContent(p));
  });

  it('says what it looked for when the folder has no tokenizer', async () => {
    await expect(ClipTokenizer.load(join(dir, 'nothing-here'))).rejects.toThrow(/no CLIP tokenizer in .*nothing-here: looked for vocab\.json \+ merges\.txt .*tokenizer\.json .*tokenizer graph .*the folder is empty or missing/);
  });
});

// ---------------------------------------------------------------------------------------------
// The demo vocabulary

describe('demo vocabulary (models/demo/tokenizer)', () => {
  let tok: ClipTokenizer;
  beforeAll(async () => {
    tok = await ClipTokenizer.load(DEMO_DIR);
  });

  it('the committed files are exactly what the script builds, every time', async () => {
    const a = buildDemoTokenizer();
    const b = buildDemoTokenizer();
    expect(a).toEqual(b);
    expect(await readFile(join(DEMO_DIR, 'vocab.json'), 'utf8')).toBe(a.vocabJson);
    expect(await readFile(join(DEMO_DIR, 'merges.txt'), 'utf8')).toBe(a.mergesTxt);
  });

  it('has CLIP\'s layout: 512 byte tokens at their real ids, learned tokens after, specials at 49406/49407', async () => {
    const vocab = JSON.parse(await readFile(join(DEMO_DIR, 'vocab.json'), 'utf8')) as Record<string, number>;
    const alphabet = byteAlphabet();
    alphabet.forEach((ch, i) => {
      expect(vocab[ch]).toBe(i);
      expect(vocab[`${ch}</w>`]).toBe(256 + i);
    });
    expect(vocab['<|startoftext|>']).toBe(BOS);
    expect(vocab['<|endoftext|>']).toBe(EOS);
    const ids = Object.values(vocab);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Math.max(...ids)).toBeLessThan(49408);
    expect(tok.vocabSize).toBe(ids.length);
    const merges = parseMergesTxt(await readFile(join(DEMO_DIR, 'merges.txt'), 'utf8'));
    expect(merges.length).toBeGreaterThanOrEqual(200);
    for (const [a, b] of merges) expect(vocab[a + b], `${a} ${b}`).toBeDefined();
  });

  it('learns whole tokens for frequent prompt words', () => {
    for (const w of ['qr', 'code', 'painting', 'light', 'of', 'and']) expect(tok.tokenize(w), w).toHaveLength(1);
    expect(tok.tokenize('a beautiful watercolor painting').length).toBeLessThan(12);
  });

  it('learning is deterministic and stops when no pair repeats', () => {
    expect(learnMerges(DEMO_CORPUS, 50)).toEqual(learnMerges(DEMO_CORPUS, 50));
    expect(learnMerges('ab', 10)).toEqual([]);
    expect(learnMerges('abc abc', 10)).toEqual([['a', 'b'], ['ab', 'c</w>']]);
  });

  it('never needs the unknown id: any text becomes known tokens, emoji and CJK included', () => {
    const ids = tok.encodeContent('🌈 日本語 Ωμέγα \u0000\u0007 ¿qué? 𝔘𝔫𝔦𝔠𝔬𝔡𝔢');
    expect(ids.length).toBeGreaterThan(0);
    expect(ids.every((id) => id >= 0 && id < 49406)).toBe(true);
  });

  it('round-trips: decode(encode(x)) is the normalized words joined by spaces', () => {
    for (const text of ['a qr code made of flowers in a misty forest', 'café 😀 東京', 'neon city at night']) {
      expect(tok.decode(tok.encode(text))).toBe(text);
    }
    expect(tok.decode(tok.encode('  Hello,   World!! &amp; more'))).toBe('hello , world !! & more');
    expect(tok.decode(tok.encode('a').subarray(0, 4), { skipSpecial: false })).toBe('<|startoftext|>a <|endoftext|><|endoftext|>');
  });

  it('round-trips random text of mixed scripts, digits, punctuation and emoji', () => {
    const pool = Array.from('abcxyzQR 0123456789 .,!?-()\'"&;: éüñ 東京界 ωΩ 😀🌈✨ \t\n');
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let i = 0; i < 300; i++) {
      const text = Array.from({ length: 1 + rand(40) }, () => pool[rand(pool.length)]!).join('');
      expect(tok.decode(tok.encodeContent(text)), JSON.stringify(text)).toBe(tok.words(text).join(' '));
    }
  });

  it('decode rejects ids that are not in the vocabulary', () => {
    expect(() => tok.decode([45_000])).toThrow(/not in the vocabulary/);
  });
});
