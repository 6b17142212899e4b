/**
 * Style presets of v5 / v5s (spec 4.4): each preset wraps the client's prompt in a positive
 * template and adds a negative prompt. The wording is ours. Templates stay short because CLIP
 * reads only 75 tokens and the client's own words should keep most of them; `{prompt}` comes
 * early so truncation cuts style words, not the subject.
 */
import { PRESETS, type PresetName } from '../workflows/presets.ts';

export interface StyleTemplate {
  /** Contains `{prompt}` exactly once. */
  readonly positive: string;
  readonly negative: string;
}

// Negative fragments shared by families of presets.
const LOW_QUALITY = 'blurry, low quality, jpeg artifacts, watermark, text, signature';
const NOT_PHOTO = 'photo, photorealistic, realism';
const NOT_DRAWING = 'drawing, painting, illustration, cartoon, anime, sketch';
const BAD_BODY = 'deformed, disfigured, bad anatomy, extra limbs';
const DULL = 'dull colors, flat lighting, washed out';

const t = (positive: string, ...negative: string[]): StyleTemplate => ({ positive, negative: [...negative, LOW_QUALITY].join(', ') });

export const STYLE_TEMPLATES: Readonly<Record<PresetName, StyleTemplate>> = Object.freeze({
  '3d-model': t('3d render of {prompt}, modelled and lit in a 3d studio, octane style, soft global illumination, clean materials', NOT_PHOTO, 'flat, 2d, sketch'),
  'analog film': t('analog film photo of {prompt}, faded film grain, natural color shift, vintage 35mm look', 'digital render, 3d, cartoon, oversaturated'),
  anime: t('anime artwork of {prompt}, anime key visual, crisp cel shading, vibrant studio anime style', NOT_PHOTO, '3d render, western cartoon'),
  cinematic: t('cinematic film still of {prompt}, shallow depth of field, anamorphic lens, moody color grading, film grain', 'cartoon, anime, illustration, sketch, flat lighting'),
  'comic book': t('comic book panel of {prompt}, bold ink outlines, halftone shading, vivid graphic novel colors', NOT_PHOTO, 'soft focus'),
  'craft clay': t('claymation scene of {prompt}, handmade plasticine sculpture, visible fingerprints, soft studio light', 'photo of a real person, sketch, flat'),
  'digital art': t('digital artwork of {prompt}, detailed digital painting, polished concept art, rich colors', 'photo, photograph, grainy'),
  enhance: t('{prompt}, sharp focus, fine detail, balanced light, high quality', BAD_BODY, DULL),
  'fantasy art': t('fantasy painting of {prompt}, epic magical atmosphere, glowing light, intricate ornate detail', 'photo, modern, mundane'),
  isometric: t('isometric illustration of {prompt}, 30 degree isometric view, clean geometry, miniature diorama', 'perspective distortion, photo, blurry edges'),
  'line art': t('line art drawing of {prompt}, clean continuous ink lines, minimal shading, white paper', 'color fill, photo, 3d render, gradients'),
  lowpoly: t('low poly render of {prompt}, faceted polygon geometry, flat shaded triangles, simple palette', 'high detail texture, photo, noisy'),
  neonpunk: t('neonpunk scene of {prompt}, glowing neon signs, electric pink and cyan light, night haze', 'daylight, muted colors, pastel'),
  origami: t('origami sculpture of {prompt}, folded paper, crisp creases, paper texture, studio backdrop', 'photo of a real object, painting, 3d render'),
  photographic: t('photograph of {prompt}, 50mm lens, natural light, true to life detail, professional photo', NOT_DRAWING),
  'pixel art': t('pixel art of {prompt}, crisp 16-bit pixels, limited palette, retro sprite style', 'smooth gradients, photo, blurry, anti-aliasing'),
  texture: t('seamless texture of {prompt}, tileable surface, flat even lighting, top-down material scan', 'perspective, objects, shadows, vignette'),

  'ads-advertising': t('advertising image of {prompt}, eye-catching commercial composition, bold brand colors, polished', 'amateur, cluttered, dull'),
  'ads-automotive': t('automotive advertisement of {prompt}, glossy paint reflections, dynamic angle, studio road lighting', 'damaged, dirty, amateur'),
  'ads-corporate': t('corporate campaign image of {prompt}, clean modern office aesthetic, confident, bright neutral tones', 'messy, grungy, dark'),
  'ads-fashion editorial': t('fashion editorial of {prompt}, high fashion styling, magazine spread lighting, elegant pose', BAD_BODY, 'casual snapshot'),
  'ads-food photography': t('food photography of {prompt}, appetizing close-up, fresh ingredients, soft window light', 'unappetizing, messy, raw, dim'),
  'ads-luxury': t('luxury advertisement of {prompt}, rich gold and black, refined materials, premium minimal set', 'cheap, cluttered, plastic'),
  'ads-real estate': t('real estate photo of {prompt}, bright wide-angle interior, tidy and spacious, warm daylight', 'dark, cramped, cluttered'),
  'ads-retail': t('retail product shot of {prompt}, clean shelf display, crisp packaging, even store lighting', 'messy, dim, distorted product'),

  'artstyle-abstract': t('abstract artwork of {prompt}, expressive shapes and color fields, non-representational', NOT_PHOTO, 'literal'),
  'artstyle-art deco': t('art deco design of {prompt}, geometric symmetry, gold lines, streamlined 1920s glamour', 'organic, messy, modern minimal'),
  'artstyle-art nouveau': t('art nouveau illustration of {prompt}, flowing organic lines, floral ornament, decorative frame', 'geometric, photo, modern'),
  'artstyle-constructivist': t('constructivist poster of {prompt}, bold diagonals, red black and cream, geometric propaganda style', 'photo, soft, ornate'),
  'artstyle-cubist': t('cubist painting of {prompt}, fragmented planes, multiple viewpoints, muted earthy palette', NOT_PHOTO, 'smooth realism'),
  'artstyle-expressionist': t('expressionist painting of {prompt}, raw emotional brushwork, distorted forms, intense color', NOT_PHOTO, 'calm, precise'),
  'artstyle-graffiti': t('graffiti mural of {prompt}, spray paint on a brick wall, bold lettering style, drips and outlines', 'clean gallery, photo, muted'),
  'artstyle-hyperrealism': t('hyperrealistic painting of {prompt}, extreme fine detail, lifelike textures, precise lighting', 'cartoon, sketch, stylized'),
  'artstyle-impressionist': t('impressionist painting of {prompt}, loose visible brushstrokes, dappled light, plein air colors', NOT_PHOTO, 'sharp lines'),
  'artstyle-pointillism': t('pointillist painting of {prompt}, composed of small dots of pure color, luminous', 'smooth gradients, photo, lines'),
  'artstyle-pop art': t('pop art of {prompt}, bold flat colors, ben-day dots, thick outlines, retro print', 'muted, photo, realistic shading'),
  'artstyle-psychedelic': t('psychedelic artwork of {prompt}, swirling patterns, saturated rainbow colors, trippy distortion', 'monochrome, muted, plain'),
  'artstyle-renaissance': t('renaissance oil painting of {prompt}, classical composition, chiaroscuro, old master technique', 'modern, cartoon, neon'),
  'artstyle-steampunk': t('steampunk artwork of {prompt}, brass gears, copper pipes, victorian machinery, warm sepia', 'modern, minimal, plastic'),
  'artstyle-surrealist': t('surrealist painting of {prompt}, dreamlike impossible scene, strange juxtapositions', 'ordinary, photo, mundane'),
  'artstyle-typography': t('typographic poster of {prompt}, expressive lettering layout, strong grid, graphic design', 'photo, cluttered, illegible'),
  'artstyle-watercolor': t('watercolor painting of {prompt}, soft washes, bleeding pigment, textured paper', NOT_PHOTO, 'hard edges, 3d'),

  'futuristic-biomechanical': t('biomechanical artwork of {prompt}, fused organic and mechanical forms, intricate cables', 'simple, cartoon, cute'),
  'futuristic-biomechanical cyberpunk': t('biomechanical cyberpunk scene of {prompt}, cybernetic implants, neon glow, dark tech', 'natural, rustic, daylight'),
  'futuristic-cybernetic': t('cybernetic artwork of {prompt}, sleek chrome enhancements, glowing circuitry, high tech', 'rustic, medieval, organic'),
  'futuristic-cybernetic robot': t('cybernetic robot of {prompt}, polished metal plating, visible joints, glowing eyes', 'organic, human skin, rustic'),
  'futuristic-cyberpunk cityscape': t('cyberpunk cityscape of {prompt}, towering megastructures, neon signs, rainy streets at night', 'rural, daylight, nature'),
  'futuristic-futuristic': t('futuristic design of {prompt}, sleek clean lines, advanced technology, bright future aesthetic', 'old, vintage, rustic'),
  'futuristic-retro cyberpunk': t('retro cyberpunk art of {prompt}, 1980s sci-fi, crt glow, synth colors', 'modern minimal, daylight'),
  'futuristic-retro futurism': t('retro futurist illustration of {prompt}, mid-century vision of the future, chrome and pastel', 'gritty, dystopian, modern'),
  'futuristic-sci-fi': t('science fiction art of {prompt}, spacecraft and advanced worlds, cinematic sci-fi lighting', 'medieval, rustic, fantasy'),
  'futuristic-vaporwave': t('vaporwave artwork of {prompt}, pink and teal gradients, marble busts, retro grid, 90s nostalgia', 'realistic, muted, dark'),

  'game-bubble bobble': t('cute arcade game art of {prompt}, bubbly round shapes, candy colors, playful 8-bit charm', 'realistic, dark, gritty'),
  'game-cyberpunk game': t('cyberpunk video game scene of {prompt}, game engine render, neon hud glow, detailed environment', 'daylight, rustic, cartoon'),
  'game-fighting game': t('fighting game art of {prompt}, dynamic battle pose, energy effects, arcade character select style', 'static, calm, blurry'),
  'game-gta': t('open world crime game cover art of {prompt}, bold painted portraits, sunny city, stylized realism', 'anime, sketch, dull'),
  'game-mario': t('colorful platformer game art of {prompt}, bright primary colors, rounded friendly shapes, playful', 'dark, realistic, gritty'),
  'game-minecraft': t('voxel game scene of {prompt}, blocky cube world, pixel textures, sunny sandbox', 'smooth, realistic, curved'),
  'game-pokemon': t('creature collecting game art of {prompt}, cute creature design, bright anime colors', 'realistic, scary, dark'),
  'game-retro arcade': t('retro arcade game art of {prompt}, 8-bit sprites, scanlines, glowing cabinet colors', 'modern, realistic, smooth'),
  'game-retro game': t('retro video game art of {prompt}, 16-bit pixel graphics, limited palette, side scroller', 'modern graphics, realistic'),
  'game-rpg fantasy game': t('fantasy rpg game art of {prompt}, heroic adventure, detailed armor and magic, game concept art', 'modern, sci-fi, mundane'),
  'game-strategy game': t('strategy game art of {prompt}, top-down battlefield view, detailed units and terrain', 'close-up portrait, blurry'),
  'game-streetfighter': t('street fighting game art of {prompt}, powerful martial arts pose, vivid energy, arcade style', 'static, dull, realistic'),
  'game-zelda': t('adventure game art of {prompt}, lush fantasy landscape, cel shaded heroic exploration', 'sci-fi, dark, gritty'),

  'papercraft-collage': t('paper collage of {prompt}, cut and torn paper pieces, mixed textures, layered composition', '3d render, photo, smooth'),
  'papercraft-flat papercut': t('flat papercut art of {prompt}, clean cut paper shapes, bold silhouettes, simple palette', 'photo, 3d depth, noisy'),
  'papercraft-kirigami': t('kirigami art of {prompt}, intricate cut and folded paper, delicate patterns, soft shadows', 'photo, painting, clutter'),
  'papercraft-paper mache': t('paper mache sculpture of {prompt}, handmade layered paper, painted surface', 'photo of a real object, sleek'),
  'papercraft-paper quilling': t('paper quilling art of {prompt}, rolled coiled paper strips, intricate spirals', 'photo, flat print, painting'),
  'papercraft-papercut collage': t('papercut collage of {prompt}, layered cut paper shapes, handmade craft look', 'photo, 3d render, smooth'),
  'papercraft-papercut shadow box': t('papercut shadow box of {prompt}, stacked backlit paper layers, depth and glow', 'flat, photo, painting'),
  'papercraft-stacked papercut': t('stacked papercut art of {prompt}, many layers of cut paper, strong depth, soft shadows', 'flat, photo, painting'),
  'papercraft-thick layered papercut': t('thick layered papercut of {prompt}, deep cardboard layers, bold shapes, dramatic shadows', 'thin, flat, photo'),

  'photo-alien': t('photo of {prompt}, alien world, otherworldly landscape, strange sky, science fiction photography', NOT_DRAWING),
  'photo-film noir': t('film noir photo of {prompt}, black and white, hard shadows, venetian blind light, 1940s mood', 'color, bright, cheerful'),
  'photo-hdr': t('hdr photo of {prompt}, high dynamic range, rich detail in shadows and highlights, vivid', NOT_DRAWING, 'flat'),
  'photo-long exposure': t('long exposure photo of {prompt}, light trails, silky motion blur, tripod shot at dusk', NOT_DRAWING, 'frozen motion'),
  'photo-neon noir': t('neon noir photo of {prompt}, dark night scene, neon reflections, moody cinematic shadows', 'daylight, bright, cheerful'),
  'photo-silhouette': t('silhouette photo of {prompt}, dark figure against a bright sunset sky, strong backlight', 'front lit, flat, detailed faces'),
  'photo-tilt-shift': t('tilt-shift photo of {prompt}, miniature effect, narrow focus band, bird eye view', NOT_DRAWING, 'uniform focus'),

  'misc-architectural': t('architectural photo of {prompt}, striking building design, clean lines, dramatic perspective', 'people, clutter, distorted'),
  'misc-disco': t('disco scene of {prompt}, mirror ball sparkles, colorful dance floor lights, 1970s glamour', 'dull, dark, muted'),
  'misc-dreamscape': t('dreamscape of {prompt}, ethereal floating scenery, soft glowing haze, surreal calm', 'harsh, gritty, mundane'),
  'misc-dystopian': t('dystopian scene of {prompt}, bleak ruined city, smog, oppressive atmosphere', 'cheerful, bright, colorful'),
  'misc-fairy tale': t('fairy tale illustration of {prompt}, enchanted storybook scene, whimsical magical details', 'gritty, dark, realistic'),
  'misc-gothic': t('gothic artwork of {prompt}, dark cathedral atmosphere, pointed arches, candlelight, melancholy', 'bright, cheerful, modern'),
  'misc-grunge': t('grunge artwork of {prompt}, distressed textures, dirty gritty surfaces, raw edgy mood', 'clean, polished, bright'),
  'misc-horror': t('horror scene of {prompt}, eerie unsettling atmosphere, dark shadows, dread', 'cheerful, cute, bright'),
  'misc-kawaii': t('kawaii illustration of {prompt}, super cute chibi style, pastel colors, happy faces', 'scary, dark, realistic'),
  'misc-lovecraftian': t('lovecraftian art of {prompt}, cosmic horror, tentacles, ancient unknowable dread', 'cute, cheerful, bright'),
  'misc-macabre': t('macabre artwork of {prompt}, skulls and decay, dark gothic mood, unsettling beauty', 'cute, cheerful, bright'),
  'misc-manga': t('manga page art of {prompt}, black and white ink, screentone shading, dynamic panels', 'color photo, 3d render, realistic'),
  'misc-metropolis': t('metropolis scene of {prompt}, vast art deco skyline, towering buildings, epic urban scale', 'rural, nature, small'),
  'misc-minimalist': t('minimalist design of {prompt}, simple shapes, generous negative space, restrained palette', 'cluttered, busy, ornate'),
  'misc-monochrome': t('monochrome image of {prompt}, single color palette, strong tonal contrast', 'multicolored, saturated'),
  'misc-nautical': t('nautical scene of {prompt}, sailing ships, ropes and anchors, sea spray, maritime mood', 'desert, urban, dry'),
  'misc-space': t('space art of {prompt}, deep space, nebulae, stars and planets, cosmic light', 'earth landscape, daylight sky'),
  'misc-stained glass': t('stained glass window of {prompt}, colored glass pieces, lead lines, light shining through', 'photo, 3d render, plain'),
  'misc-techwear fashion': t('techwear fashion shot of {prompt}, functional urban outfit, straps and pockets, dark palette', BAD_BODY, 'casual, colorful'),
  'misc-tribal': t('tribal art of {prompt}, bold traditional patterns, earthy pigments, carved motifs', 'modern, digital, neon'),
  'misc-zentangle': t('zentangle drawing of {prompt}, intricate repetitive ink patterns, black and white, meditative detail', 'color, photo, blurry'),
});

// Fail at import, not in a job, if presets.ts gains a name this table lacks.
for (const name of PRESETS) {
  if (!Object.hasOwn(STYLE_TEMPLATES, name)) throw new Error(`prompts.ts: no style template for preset '${name}'`);
}

export interface StyledPrompt {
  readonly prompt: string;
  readonly negativePrompt: string;
}

/** Tidies what an empty client prompt leaves behind: no stray or doubled commas. */
function tidy(text: string): string {
  return text
    .replace(/\s+,/g, ',')
    .replace(/,(\s*,)+/g, ',')
    .replace(/\s{2,}/g, ' ')
    .replace(/^[\s,]+|[\s,]+$/g, '');
}

/** The prompts the model sees: the preset's template around the prompt, negatives joined. */
export function applyPreset(preset: PresetName | undefined, prompt: string, negativePrompt = ''): StyledPrompt {
  if (preset === undefined) return { prompt: prompt.trim(), negativePrompt: negativePrompt.trim() };
  const template = STYLE_TEMPLATES[preset];
  if (template === undefined) throw new RangeError(`unknown preset ${String(preset)}`);
  const subject = prompt.trim();
  // With no subject, "film still of {prompt}, ..." becomes "film still, ...".
  const positive = tidy(subject ? template.positive.replace('{prompt}', () => subject) : template.positive.replace(/(\s+of)?\s*\{prompt\}/, ''));
  const negative = [negativePrompt.trim(), template.negative].filter((s) => s.length > 0).join(', ');
  return { prompt: positive, negativePrompt: negative };
}
