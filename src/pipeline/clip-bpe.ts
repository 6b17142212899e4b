/**
 * CLIP's text → tokens steps below the vocabulary: normalize (NFC, a small part of ftfy, html
 * unescape, whitespace, lowercase), split with CLIP's regex, write each word's UTF-8 bytes as
 * printable characters (GPT-2's table) and merge them by rank. The vocabulary lookup is
 * tokenizer.ts's. ftfy itself is not reproduced (see normalizeText).
 */

export const DEFAULT_BOS_TOKEN = '<|startoftext|>';
export const DEFAULT_EOS_TOKEN = '<|endoftext|>';
export const END_OF_WORD = '</w>';

// ---------------------------------------------------------------------------------------------
// Byte-level alphabet

/**
 * The 256 byte characters in CLIP's vocabulary order: printable Latin-1 bytes map to themselves
 * and come first, the rest map to U+0100.. in byte order. CLIP's ids 0..255 are these characters
 * and 256..511 the same with `</w>`, which is why single-character tokens have fixed ids.
 */
function buildAlphabet(): { order: number[]; charOf: string[] } {
  const order: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) order.push(b);
  for (let b = 0xa1; b <= 0xac; b++) order.push(b);
  for (let b = 0xae; b <= 0xff; b++) order.push(b);
  const charOf = new Array<string>(256);
  for (const b of order) charOf[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (charOf[b] === undefined) {
      charOf[b] = String.fromCharCode(256 + n++);
      order.push(b);
    }
  }
  return { order, charOf };
}

const ALPHABET = buildAlphabet();
const BYTE_OF_CHAR = new Map<string, number>(ALPHABET.charOf.map((c, b) => [c, b]));
const utf8 = new TextEncoder();

/** byte value → its character (GPT-2's bytes_to_unicode). */
export function bytesToUnicode(): readonly string[] {
  return ALPHABET.charOf;
}

/** The 256 byte characters in vocabulary order (index = CLIP id of the bare character). */
export function byteAlphabet(): string[] {
  return ALPHABET.order.map((b) => ALPHABET.charOf[b]!);
}

/** Byte characters (and any other characters, as UTF-8) → the bytes they stand for. */
export function fromByteLevel(chars: string): number[] {
  const bytes: number[] = [];
  for (const ch of chars) {
    const b = BYTE_OF_CHAR.get(ch);
    if (b !== undefined) bytes.push(b);
    else bytes.push(...utf8.encode(ch));
  }
  return bytes;
}

/** Text → its UTF-8 bytes written as byte characters. */
export function toByteLevel(text: string): string {
  let out = '';
  for (const b of utf8.encode(text)) out += ALPHABET.charOf[b]!;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Normalization and pre-tokenization

// Unicode's White_Space set: CLIP collapses whitespace with the `regex` module (OpenAI's
// simple_tokenizer and HF's tokenization_clip import it as re), whose \s is wider than
// JavaScript's in \x85 and narrower in \ufeff. Python's built-in re would also take \x1c-\x1f.
const WS_CLASS = '\\t\\n\\v\\f\\r\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const WS_RUN = new RegExp(`[${WS_CLASS}]+`, 'g');

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', AMP: '&', lt: '<', LT: '<', gt: '>', GT: '>', quot: '"', QUOT: '"', apos: "'", nbsp: '\u00a0',
};
// Semicolons are optional for numeric and legacy entities, as in Python's html.unescape.
const ENTITY = /&(?:#[xX]([0-9a-fA-F]+);?|#([0-9]+);?|(amp|AMP|lt|LT|gt|GT|quot|QUOT|nbsp);?|(apos);)/g;

function unescapeHtml(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (_m, hex: string | undefined, dec: string | undefined, legacy: string | undefined, apos: string | undefined) => {
    if (legacy ?? apos) return NAMED_ENTITIES[(legacy ?? apos)!]!;
    const cp = hex !== undefined ? Number.parseInt(hex, 16) : Number.parseInt(dec!, 10);
    // Invalid code points become U+FFFD as in html.unescape (its cp1252 remap of 0x80-0x9f is not copied).
    if (!Number.isFinite(cp) || cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return '\ufffd';
    return String.fromCodePoint(cp);
  });
}

/**
 * CLIP's text cleanup: ftfy.fix_text, html.unescape twice, whitespace collapse, lowercase.
 * ftfy is not available, so only the parts of it that change ordinary prompts are kept: NFC and
 * straight quotes (so "don’t" splits like "don't"). Mojibake repair, width folding and control
 * character removal are not done.
 */
export function normalizeText(text: string): string {
  let t = text.normalize('NFC');
  t = t.replace(/[\u02bc\u2018-\u201b]/g, "'").replace(/[\u201c-\u201f]/g, '"');
  t = unescapeHtml(unescapeHtml(t));
  t = t.replace(WS_RUN, ' ').replace(/^ | $/g, '');
  return t.toLowerCase();
}

const escapeRegExp = (s: string): string => s.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

/** CLIP's split: special tokens, English contractions, letter runs, single digits, other runs. */
export function preTokenizer(specialTokens: readonly string[] = [DEFAULT_BOS_TOKEN, DEFAULT_EOS_TOKEN]): RegExp {
  const specials = [...specialTokens].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const parts = [...specials, "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", '\\p{L}+', '\\p{N}', `[^${WS_CLASS}\\p{L}\\p{N}]+`];
  return new RegExp(parts.join('|'), 'gu');
}

const DEFAULT_SPLIT = preTokenizer();

/** Words of already normalized text. */
export function preTokenize(normalized: string, pattern: RegExp = DEFAULT_SPLIT): string[] {
  return normalized.match(pattern) ?? [];
}

// ---------------------------------------------------------------------------------------------
// BPE

export type MergeRanks = ReadonlyMap<string, number>;

export const mergeKey = (a: string, b: string): string => `${a} ${b}`;

/** Ranks from merges in priority order; a repeated pair keeps its last rank, as Python's dict() does. */
export function mergeRanks(merges: ReadonlyArray<readonly [string, string]>): Map<string, number> {
  const ranks = new Map<string, number>();
  merges.forEach(([a, b], i) => ranks.set(mergeKey(a, b), i));
  return ranks;
}

/**
 * One word (byte characters) → its BPE symbols. The last character carries the end-of-word
 * suffix from the start. Each round merges every occurrence, left to right and without overlap,
 * of the adjacent pair with the lowest rank, exactly as CLIP's bpe() does; onMerge sees each round.
 */
export function bpe(word: string, ranks: MergeRanks, onMerge?: (a: string, b: string) => void, suffix = END_OF_WORD): string[] {
  const chars = Array.from(word);
  if (chars.length === 0) return [];
  let symbols = chars;
  symbols[symbols.length - 1] += suffix;
  while (symbols.length > 1) {
    let best = Infinity;
    let first = '';
    let second = '';
    for (let i = 0; i < symbols.length - 1; i++) {
      const rank = ranks.get(mergeKey(symbols[i]!, symbols[i + 1]!));
      if (rank !== undefined && rank < best) {
        best = rank;
        first = symbols[i]!;
        second = symbols[i + 1]!;
      }
    }
    if (best === Infinity) break;
    onMerge?.(first, second);
    const next: string[] = [];
    for (let i = 0; i < symbols.length; ) {
      if (i < symbols.length - 1 && symbols[i] === first && symbols[i + 1] === second) {
        next.push(first + second);
        i += 2;
      } else {
        next.push(symbols[i]!);
        i += 1;
      }
    }
    symbols = next;
  }
  return symbols;
}
