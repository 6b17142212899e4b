/**
 * Builds the demo CLIP tokenizer files (vocab.json + merges.txt) by learning a small BPE from the
 * corpus below with the same normalization, split and byte table the tokenizer uses, so the demo
 * pipeline tokenizes prompts the way real SD1.5 does, only with a tiny vocabulary.
 *
 * Layout follows CLIP's: ids 0..255 are the byte characters and 256..511 the same with `</w>`
 * (so single characters get their real CLIP ids and nothing is ever unknown), learned tokens
 * from 512 in merge order, and the special tokens at their real ids 49406/49407.
 * The demo text encoder (text-encoder.ts) gives meaning to a few fixed ids, so the words that reach
 * them are pinned there: the colour words at COLOUR_TOKEN_IDS and `nsfwdemo` at
 * NSFW_TRIGGER_ID, each as one whole-word token (extra merges are appended when the learned
 * ones do not already make it one token).
 * Output is byte-for-byte deterministic.
 *
 * Run: npx tsx scripts/demo-models/vocab.ts models/demo/tokenizer
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  bpe,
  byteAlphabet,
  DEFAULT_BOS_TOKEN,
  DEFAULT_EOS_TOKEN,
  END_OF_WORD,
  mergeKey,
  mergeRanks,
  normalizeText,
  preTokenize,
  toByteLevel,
} from '../../src/pipeline/clip-bpe.ts';
import { DEFAULT_BOS_ID, DEFAULT_EOS_ID } from '../../src/pipeline/tokenizer.ts';
import { COLOUR_TOKEN_IDS, NSFW_TRIGGER_ID } from './text-encoder.ts';

export const DEMO_MERGES = 400;

/**
 * Whole words pinned to the ids the demo text encoder reads. One string per id: real CLIP
 * vocabularies never share an id between tokens, so 'gray' is not an alias of 'grey' (it
 * gets a hashed colour like any other word).
 */
export const DEMO_PINNED_WORDS: Readonly<Record<string, number>> = Object.freeze({
  ...COLOUR_TOKEN_IDS,
  nsfwdemo: NSFW_TRIGGER_ID,
});

/** Written for this project: prompt-style English about art, colour, places, styles and QR codes. */
export const DEMO_CORPUS = `
A beautiful painting of a mountain village at sunset, warm golden light, highly detailed.
A watercolor painting of a quiet harbor with small boats, soft pastel colors, morning fog.
An oil painting of a forest path in autumn, red and orange leaves, rays of light through the trees.
A digital painting of a futuristic city at night, neon lights, rain on the streets, cyberpunk style.
A photograph of a coffee shop in Paris, bokeh, shallow depth of field, 35mm film, cinematic lighting.
A detailed illustration of a castle on a cliff above the ocean, dramatic clouds, fantasy art.
A QR code made of flowers in a green garden, the black modules are dark leaves, the white modules are petals.
A scannable QR code hidden in a city skyline, the finder patterns are windows of tall buildings.
A QR code drawn as a mosaic of colored tiles, blue and white, Mediterranean style, high contrast.
A QR code in the style of Japanese ink painting, mountains and rivers, minimal, elegant.
A QR code as a snowy landscape, pine trees form the dark modules, clean quiet zone around the code.
A QR code woven into a Persian carpet, intricate patterns, deep red, gold and blue threads.
A QR code built from stones on a beach, the sea in the background, golden hour, photorealistic.
A QR code in pixel art, a tiny village with houses and roads, bright colors, retro video game style.
Art nouveau poster of a woman with flowing hair, flowers and ornaments, muted green and gold.
Baroque still life with fruit, silver cups and a candle, dark background, dramatic light.
Impressionist painting of a river with water lilies, light blue, soft green, pink reflections.
Surreal landscape with floating islands, waterfalls falling into the clouds, purple and orange sky.
Steampunk workshop with brass machines, gears and pipes, warm light, highly detailed, intricate.
Minimalist poster, geometric shapes, black and white, strong contrast, clean lines, modern design.
Concept art of a desert city with domes and towers, sand storms, orange sky, epic scale.
A cozy library with wooden shelves, books, a fireplace and a sleeping cat, warm colors, soft light.
A lighthouse on a rocky coast during a storm, big waves, dark clouds, dramatic, cinematic.
A market street in Marrakech, colorful lamps, spices, crowds, evening light, travel photography.
A temple in Kyoto in spring, cherry blossoms, pink petals on the water, peaceful, serene.
Northern lights over a frozen lake in Norway, green and purple sky, stars, reflections on the ice.
A field of lavender in Provence, purple rows, a stone house, summer afternoon, golden light.
Underwater coral reef with tropical fish, turquoise water, rays of sunlight, vivid colors.
A medieval town square with a fountain, cobblestone streets, flags, people, sunny day.
A jungle with giant leaves, a hidden ruin covered with moss, mist, green light, adventure.
A portrait of an old sailor with a white beard, oil painting, rich texture, dramatic lighting.
A street art mural on a brick wall, bold colors, graffiti style, urban, sunlight.
A paper cut art scene of a forest with deer, layered paper, soft shadows, pastel colors.
A stained glass window with a sun and moon, bright blue, red and yellow glass, church light.
A charcoal sketch of a city bridge, loose lines, black and white, textured paper.
A low poly render of mountains and a lake, flat colors, isometric view, clean design.
A vaporwave scene with palm trees, a pink and teal gradient sky, a grid floor, retro style.
An anime style illustration of a girl in a field of sunflowers, blue sky, summer clouds.
A children's book illustration of a fox in the woods, warm, friendly, soft watercolor.
A ceramic vase with blue patterns, studio lighting, white background, product photography.
The QR code must stay readable: keep strong contrast between dark and light modules.
Keep the three finder patterns clear, keep the quiet zone light, and let the art follow the grid.
Scan the code with a phone camera; a good QR code is both beautiful and easy to scan.
Colors: red, orange, yellow, green, blue, purple, pink, brown, black, white, gray, gold, silver,
crimson, scarlet, amber, emerald, teal, turquoise, navy, indigo, violet, magenta, beige, ivory.
Styles: watercolor, oil painting, ink, pencil, charcoal, pastel, gouache, acrylic, fresco, mosaic,
photography, cinematic, surreal, abstract, realistic, photorealistic, anime, cartoon, pixel art,
art deco, art nouveau, baroque, gothic, cyberpunk, steampunk, fantasy, minimalist, impressionist.
Places: mountain, forest, ocean, river, lake, desert, jungle, island, village, city, castle,
garden, harbor, temple, market, library, street, bridge, tower, cave, valley, beach, meadow.
Quality: masterpiece, best quality, highly detailed, sharp focus, intricate details, 8k, 4k, HDR,
trending on artstation, award winning, volumetric lighting, soft light, golden hour, studio light.
Negative: blurry, low quality, worst quality, ugly, deformed, distorted, watermark, text, signature,
jpeg artifacts, noisy, overexposed, underexposed, cropped, out of frame, bad anatomy.
`;

/** A word as symbols with the end-of-word suffix on its last character, as bpe() starts. */
function initialSymbols(byteWord: string): string[] {
  const chars = Array.from(byteWord);
  chars[chars.length - 1] += END_OF_WORD;
  return chars;
}

/**
 * Classic BPE training: repeatedly merge the most frequent adjacent pair (weighted by word
 * count) in every word. Ties go to the smaller pair key so the result never depends on map order.
 * Stops at maxMerges or when no pair occurs twice.
 */
export function learnMerges(corpus: string, maxMerges: number): [string, string][] {
  const counts = new Map<string, number>();
  for (const word of preTokenize(normalizeText(corpus))) {
    const key = toByteLevel(word);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const words = [...counts.keys()].sort().map((w) => ({ symbols: initialSymbols(w), count: counts.get(w)! }));
  const merges: [string, string][] = [];
  while (merges.length < maxMerges) {
    const pairs = new Map<string, { a: string; b: string; n: number }>();
    for (const { symbols, count } of words) {
      for (let i = 0; i < symbols.length - 1; i++) {
        const key = mergeKey(symbols[i]!, symbols[i + 1]!);
        const entry = pairs.get(key);
        if (entry) entry.n += count;
        else pairs.set(key, { a: symbols[i]!, b: symbols[i + 1]!, n: count });
      }
    }
    let bestKey: string | undefined;
    for (const [key, entry] of pairs) {
      const best = bestKey === undefined ? undefined : pairs.get(bestKey)!;
      if (!best || entry.n > best.n || (entry.n === best.n && key < bestKey!)) bestKey = key;
    }
    const best = bestKey === undefined ? undefined : pairs.get(bestKey)!;
    if (!best || best.n < 2) break;
    merges.push([best.a, best.b]);
    for (const word of words) {
      const next: string[] = [];
      const s = word.symbols;
      for (let i = 0; i < s.length; ) {
        if (i < s.length - 1 && s[i] === best.a && s[i + 1] === best.b) {
          next.push(best.a + best.b);
          i += 2;
        } else {
          next.push(s[i]!);
          i += 1;
        }
      }
      word.symbols = next;
    }
  }
  return merges;
}

export interface DemoTokenizerFiles {
  vocabJson: string;
  mergesTxt: string;
  vocabSize: number;
  merges: number;
}

/**
 * Merges that turn each pinned word into one `word</w>` token: the learned ones first, then,
 * where BPE still leaves several symbols, left-to-right merges appended at the lowest priority
 * (so they only ever join symbols no learned merge joins).
 */
function mergesForPinned(learned: [string, string][], words: readonly string[]): [string, string][] {
  const merges = [...learned];
  for (const word of words) {
    const symbols = bpe(toByteLevel(word), mergeRanks(merges));
    for (let joined = symbols[0]!, i = 1; i < symbols.length; i++) {
      merges.push([joined, symbols[i]!]);
      joined += symbols[i]!;
    }
  }
  return merges;
}

export function buildDemoTokenizer(corpus = DEMO_CORPUS, maxMerges = DEMO_MERGES): DemoTokenizerFiles {
  const pinned = new Map(Object.entries(DEMO_PINNED_WORDS).map(([w, id]) => [toByteLevel(w) + END_OF_WORD, id]));
  const merges = mergesForPinned(learnMerges(corpus, maxMerges), Object.keys(DEMO_PINNED_WORDS));
  const entries: [string, number][] = [];
  const seen = new Set<string>();
  const add = (token: string, id: number): void => {
    if (seen.has(token)) return;
    seen.add(token);
    entries.push([token, id]);
  };
  const alphabet = byteAlphabet();
  alphabet.forEach((ch, i) => add(ch, i));
  alphabet.forEach((ch, i) => add(ch + END_OF_WORD, alphabet.length + i));
  let next = 2 * alphabet.length;
  for (const [a, b] of merges) {
    const token = a + b;
    if (seen.has(token)) continue;
    add(token, pinned.get(token) ?? next++);
  }
  const lowestFixed = Math.min(DEFAULT_BOS_ID, ...pinned.values());
  if (next > lowestFixed) throw new Error('demo vocabulary collides with the fixed token ids');
  for (const [token, id] of pinned) {
    if (!seen.has(token)) throw new Error(`pinned token ${token} is not reachable by the merges`);
    if (entries.find(([t]) => t === token)![1] !== id) throw new Error(`pinned token ${token} did not get id ${id}`);
  }
  add(DEFAULT_BOS_TOKEN, DEFAULT_BOS_ID);
  add(DEFAULT_EOS_TOKEN, DEFAULT_EOS_ID);
  // One entry per line keeps diffs readable; written by hand because JS objects reorder integer-like keys.
  const vocabJson = `{\n${entries.map(([t, id]) => `${JSON.stringify(t)}: ${id}`).join(',\n')}\n}\n`;
  const mergesTxt = `#version: 0.2\n${merges.map(([a, b]) => `${a} ${b}\n`).join('')}`;
  return { vocabJson, mergesTxt, vocabSize: entries.length, merges: merges.length };
}

export async function writeDemoTokenizer(outDir: string): Promise<DemoTokenizerFiles> {
  const files = buildDemoTokenizer();
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'vocab.json'), files.vocabJson);
  await writeFile(join(outDir, 'merges.txt'), files.mergesTxt);
  return files;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = resolve(process.argv[2] ?? 'models/demo/tokenizer');
  const files = await writeDemoTokenizer(outDir);
  console.log(`wrote ${outDir}: ${files.vocabSize} tokens, ${files.merges} merges`);
}
