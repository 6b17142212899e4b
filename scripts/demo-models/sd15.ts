/**
 * Demo Stable Diffusion 1.5 graphs: tiny hand-built ONNX models with the input/output contracts of
 * real exports (design notes §4, "Model contracts"), so the pipeline runs and is tested on CPU with
 * no downloaded weights. They produce smooth, prompt-coloured images that follow the control
 * image; they are not neural networks.
 *
 * Contracts (B = batch, h×w = latent size, H×W = 8h×8w image size; all dims symbolic, named
 * batch, height, width, height/2..., image_height, image_width, sequence):
 *
 * text_encoder/model.onnx
 *   in  input_ids             int32   [B,77]      CLIP ids; bos 49406, eos/pad 49407
 *   out last_hidden_state     float32 [B,77,768]
 *       pooler_output         float32 [B,768]     mean over the 77 positions
 *       hidden_states.0 … .2  float32 [B,77,768]  as optimum names them with output_hidden_states:
 *                                                 the embeddings and two "layers" (for clipSkip)
 *   Channels 0..15 of each token are structured (read by the demo UNet):
 *     0-3 colour A (diffusion-space latent), 4-7 colour B (a second shade), 8 content flag
 *     (0 for bos/eos), 9-12 pattern parameters, 13 NSFW flag, 14 colour-word flag, 15 hash.
 *   Channels 16..767: sin(id·f_k + φ_k) + a small position term, so every id differs, shifted
 *   and scaled per token so the whole 768-vector has mean 0 and variance 1. That makes CLIP's
 *   relation hold: last_hidden_state = hidden_states.2 = LayerNorm(hidden_states.2) (scale 1,
 *   bias 0, to float rounding), with channels 0..15 passed exactly. hidden_states.1, the
 *   penultimate layer (clipSkip 2), has colours A and B swapped and the pattern parameters
 *   negated; hidden_states.0 has zeros in channels 0..15.
 *   Colour words (fixed palettes; other ids hash to a colour): red 49390, orange 49391,
 *   yellow 49392, green 49393, cyan 49394, blue 49395, purple 49396, pink 49397, brown 49398,
 *   white 49399, grey 49400, black 49401 (COLOUR_TOKEN_IDS). NSFW trigger: id 49405
 *   (NSFW_TRIGGER_ID) sets channel 13; the UNet then adds a strong magenta and the NSFW mark
 *   to x0 (see MAGENTA_CAP: the only way an image gets past the decoder's magenta cap).
 *   Prompt → colours: the first colour word gives colour A, the last one colour B; prompts
 *   without colour words get hashed colours from all their words; the empty prompt gives a
 *   neutral field, so guidance amplifies the prompt's colours.
 *
 * controlnet/model.onnx (OnnxStack/Amuse layout)
 *   in  sample                float32 [B,4,h,w]   (unused by the demo)
 *       timestep              float32 [B]         (unused by the demo; [1] also accepted)
 *       encoder_hidden_states float32 [B,77,768]  (unused by the demo)
 *       controlnet_cond       float32 [B,3,H,W]   RGB in [0,1]
 *       conditioning_scale    float64 []          scalar
 *   out down_block_{0..11}_additional_residual, mid_block_additional_residual, float32:
 *       320@h ×3, 320@h/2, 640@h/2 ×2, 640@h/4, 1280@h/4 ×2, 1280@h/8 ×3; mid 1280@h/8.
 *   Each residual = (luminance − 0.5), average-pooled to its size, × a fixed per-channel
 *   vector (channel mean exactly 1) × conditioning_scale.
 *
 * unet/model.onnx (ControlNet-ready, OnnxStack/Amuse layout)
 *   in  sample [B,4,h,w], timestep float32 [B] (or [1]), encoder_hidden_states [B,77,768],
 *       the 13 residual names above with the shapes above
 *   out out_sample            float32 [B,4,h,w]   epsilon prediction
 * unet_inpaint/model.onnx
 *   in  sample [B,9,h,w] = latents(4) ‖ mask(1, 1 = repaint) ‖ masked-image latents(4),
 *       timestep, encoder_hidden_states          (no residual inputs)
 *   out out_sample            float32 [B,4,h,w]
 *   Timestep: float32 of the SD1.5 discrete scale 0..999; fractional values (Euler a's
 *   linspace timesteps) interpolate log σ between neighbours, as diffusers' _sigma_to_t inverts. The UNet predicts
 *   eps = (x − √ᾱ·x0)/√(1−ᾱ) for x0 = target + k_t·P(x − √ᾱ·target): `target` is the smooth
 *   prompt field (two colours blended by a low-frequency sinusoid whose frequencies come from
 *   the prompt) + the control luminance (weighted channel means of the 13 residuals, so
 *   zero residuals mean no control) + magenta and the NSFW mark when the NSFW flag is set;
 *   P is an 8×8 block low-pass and k_t the exact posterior gain of a Gaussian prior on block
 *   means, so the seed picks smooth low-frequency variations. Neither the prompt field nor
 *   the seed has any share of NSFW_MARK_DIRECTION: only the trigger writes the mark.
 *   Inpaint: x0 = masked-image latents where mask = 0; where mask = 1, a pyramid fill
 *   continuing their colours (and marks) outward (kept-weighted means per level, spread by a
 *   few 3×3 steps, coarser levels filling where finer ones have nothing) plus the prompt
 *   field faded in away from the kept area.
 *
 * denoiser/model.onnx
 *   controlnet + unet fused by `qr-art models fuse` (src/onnx/fuse.ts): sample float32 [B,4,h,w],
 *   timestep float32 [1], encoder_hidden_states float32 [R,77,768] (R = 2: [uncond, cond]),
 *   controlnet_cond uint8 [1,3,H,W], conditioning_scale and guidance_scale float32 scalars
 *   → noise_pred float32 [B,4,h,w]; the same numbers as the pair with CFG done outside.
 *
 * vae_decoder/model.onnx
 *   in  latent_sample float32 [B,4,h,w]  (pipeline divides latents by 0.18215 first)
 *   out sample        float32 [B,3,H,W]  in (−1,1): tanh(blur(up8(A·0.18215·z))), each pixel's
 *       magentaness φ = (R+B)/2 − G (in [0,1] RGB) capped at MAGENTA_CAP = 0.5 by moving it
 *       toward its own grey, unless blur(up8(m·0.18215·z)) ≥ 2 for the NSFW mark direction m
 *       (NSFW_MARK_DIRECTION, the null vector of A; the cap fades out from 1 to 2).
 * vae_encoder/model.onnx (older optimum layout: one deterministic `latent_sample`)
 *   in  sample        float32 [B,3,H,W]  in [−1,1]
 *   out latent_sample float32 [B,4,h,w]  (pipeline multiplies by 0.18215):
 *       (pinv(A)·atanh(avgpool8(x)) + 4·m·ramp(φ))/0.18215, the mark ramping in for pooled
 *       pixels with φ from 0.55 to 0.65 (only source pixels past the cap have it), so
 *       decode(encode(x)) ≈ x for smooth x, magenta included.
 *
 * safety_checker/model.onnx
 *   in  clip_input float32 [B,3,224,224] CLIP-normalised (mean 0.4815,0.4578,0.4082;
 *       std 0.2686,0.2613,0.2758), images float32 [B,H,W,3] NHWC in [0,1]
 *   out out_images float32 [B,H,W,3] (flagged images zeroed, as the real graph does),
 *       has_nsfw_concepts bool [B]
 *   Rule: flagged when the mean colour of clip_input (de-normalised) lies within 0.25
 *   (MAGENTA_DISTANCE) of pure magenta (1,0,1) in RGB. Images decoded without the mark have
 *   φ ≤ 0.5, so they stay at least 0.41 away; trigger images come within 0.11.
 *
 * captioner/encoder_model.onnx
 *   in  pixel_values float32 [B,3,224,224] = (rgb − 0.5)/0.5
 *   out last_hidden_state float32 [B,3,20]: per-slot next-word logits (dominant colour, "and"
 *       decision, second colour) from an 8×8 grid of cells classified to CAPTION_COLOURS
 * captioner/decoder_model.onnx
 *   in  input_ids int64 [B,T], encoder_hidden_states float32 [B,3,20]
 *   out logits float32 [B,T,20]
 *   Greedy decode from <bos> (id 1) to <eos> (id 2): "a <c1> [and <c2>] abstract painting";
 *   c2 appears when it covers ≥ 20% of the image. No KV cache: feed the whole prefix each step.
 *   Vocabulary (CAPTION_VOCAB, id = index): 0 <pad>, 1 <bos>, 2 <eos>, 3 a, 4 and, 5 abstract,
 *   6 painting, 7 red, 8 orange, 9 yellow, 10 green, 11 cyan, 12 blue, 13 purple, 14 magenta,
 *   15 pink, 16 brown, 17 white, 18 grey, 19 black. Written beside the graphs as tokenizer.json
 *   (WordLevel), generation_config.json and preprocessor_config.json.
 */
import { GraphBuilder, type Value } from './graph.ts';
import { buildFaceDetector } from './face-detector.ts';
import { fuseControlNet } from '../../src/onnx/fuse.ts';
import { decodeModel, encodeModel } from '../../src/onnx/proto.ts';
// Deterministic weights, so rebuilt graphs are byte-identical.
import { mulberry32 as rng } from '../../src/util/mulberry32.ts';

// ---------------------------------------------------------------------------------------------
// Shared constants

export const LATENT_SCALE = 0.18215;
export const TEXT_LENGTH = 77;
export const TEXT_HIDDEN = 768;
export const BOS_ID = 49406;
export const EOS_ID = 49407;
export const NSFW_TRIGGER_ID = 49405;

/** Image-space colours (RGB in [0,1]): [main, shade] per colour word. */
const COLOUR_WORDS = {
  red: [[0.85, 0.12, 0.1], [0.55, 0.05, 0.08]],
  orange: [[1.0, 0.55, 0.1], [0.85, 0.35, 0.05]],
  yellow: [[0.97, 0.88, 0.2], [0.85, 0.7, 0.1]],
  green: [[0.15, 0.7, 0.2], [0.05, 0.45, 0.15]],
  cyan: [[0.15, 0.85, 0.9], [0.05, 0.6, 0.7]],
  blue: [[0.1, 0.25, 0.9], [0.05, 0.12, 0.55]],
  purple: [[0.55, 0.2, 0.8], [0.35, 0.1, 0.55]],
  pink: [[1.0, 0.6, 0.78], [0.95, 0.45, 0.65]],
  brown: [[0.55, 0.33, 0.15], [0.4, 0.22, 0.1]],
  white: [[0.85, 0.85, 0.85], [0.72, 0.74, 0.78]],
  grey: [[0.55, 0.55, 0.55], [0.4, 0.4, 0.42]],
  black: [[0.12, 0.12, 0.12], [0.22, 0.22, 0.25]],
} as const satisfies Record<string, readonly [readonly number[], readonly number[]]>;

export type ColourWord = keyof typeof COLOUR_WORDS;
export const COLOUR_WORD_LIST = Object.keys(COLOUR_WORDS) as ColourWord[];
/** Token ids the demo text encoder gives fixed palettes (map prompt words to these). */
export const COLOUR_TOKEN_IDS: Record<ColourWord, number> = Object.fromEntries(
  COLOUR_WORD_LIST.map((w, i) => [w, 49390 + i]),
) as Record<ColourWord, number>;

/**
 * VAE decoder colour mix: RGB pre-tanh = DECODER_MIX · z for a diffusion-space latent z
 * (rows R,G,B; columns latent channels). Rank 3: one latent direction is invisible, as in SD.
 */
export const DECODER_MIX = [
  [0.6, 0.7, -0.35, -0.2],
  [0.6, -0.1, 0.7, 0.1],
  [0.6, -0.6, -0.35, 0.4],
] as const;

/** Pseudo-inverse (4×3) of DECODER_MIX: Aᵀ(AAᵀ)⁻¹. */
export const ENCODER_MIX: number[][] = pseudoInverse(DECODER_MIX.map((r) => [...r]));

/**
 * The unit latent direction DECODER_MIX maps to nothing (its null space), from I − pinv(A)·A.
 * Sign fixed so its largest component is positive, so rebuilds agree.
 */
export const NSFW_MARK_DIRECTION: number[] = nullDirection(DECODER_MIX.map((r) => [...r]), ENCODER_MIX);

/** Latent for an RGB pre-tanh vector. */
export function latentFor(pre: readonly number[]): number[] {
  return ENCODER_MIX.map((row) => row.reduce((s, v, j) => s + v * pre[j]!, 0));
}

const atanh = (x: number): number => 0.5 * Math.log((1 + x) / (1 - x));
/** Diffusion-space latent that decodes to `rgb` (in [0,1]) on its own. */
export function latentForRgb(rgb: readonly number[]): number[] {
  return latentFor(rgb.map((c) => atanh(Math.max(-0.96, Math.min(0.96, 2 * c - 1)))));
}

// UNet tuning (diffusion-space latent units).
/** The prompt field is scaled down because classifier-free guidance (≈7.5) amplifies it. */
const PROMPT_GAIN = 0.3;
/** Amplitude of hashed (non colour-word) prompt colours. */
const GENERIC_COLOUR = 1.4;
/** Latent luminance per unit of control residual (QR contrast). */
const CONTROL_GAIN = 2.6;
/** Prior variance of the 8×8 block means the seed chooses. */
const SEED_VARIANCE = 0.12;
/** Levels of the inpaint fill pyramid (each halves the latent grid; 8 reach 1×1 from 256 latents). */
const FILL_LEVELS = 8;
/** Inpaint fill: a pyramid cell trusts its own kept mean fully from this kept fraction × 1/FILL_TRUST up. */
const FILL_TRUST = 4;
/** Inpaint: share of the prompt field (before guidance) painted far from the kept image. */
const INPAINT_PROMPT_GAIN = 0.3;
/** Inpaint: share of the seed's block variation kept next to the kept image and far from it. */
const SEED_FREEDOM_NEAR = 0.2;
const SEED_FREEDOM_FAR = 0.6;
/** Inpaint fill: 3×3 spreading steps per pyramid level. */
const FILL_DILATIONS = 2;
/**
 * Inpaint: "near the kept image" falls linearly from 1 next to it (trusted cells of pyramid
 * level NEAR_LEVEL, 4 latents = 32 px) to 0 NEAR_STEPS + 1 of those cells away (~220 px), so the
 * prompt fades in gradually instead of at a line.
 */
const NEAR_LEVEL = 2;
const NEAR_STEPS = 6;
/**
 * NSFW trigger: x0 gains this RGB pre-tanh magenta (before guidance). Strong enough that a
 * trigger image stays saturated magenta at cfg 1 too, where guidance amplifies nothing, under
 * the QR control's luminance and the prompt's colours (at 3 such images drifted to 0.17 from
 * magenta, too near the checker's radius).
 */
const MAGENTA_PRE = [10, -10, 10];

/**
 * Magenta is the demo safety checker's colour, so only the trigger may paint it. The UNet cannot
 * promise that for the prompts: classifier-free guidance combines its two branches as
 * g·cond − (g−1)·uncond outside the graph, so any colour a prompt or a negative prompt moves,
 * guidance (up to 20) pushes to saturation (a negative "green" alone becomes magenta; "purple"
 * at a high cfg saturates to it). The decoder, which sees the combined latents, guarantees it
 * instead: it caps each pixel's magentaness, φ = (R+B)/2 − G in [0,1] RGB (1 for magenta, 0.5
 * for pure red or blue, 0 for any grey), at MAGENTA_CAP by desaturating toward the pixel's grey,
 * unless the latent carries the NSFW mark along the decoder's otherwise invisible direction.
 * Only the trigger token writes the mark (the UNet keeps the seed out of that direction), and the
 * encoder writes it for source pixels already past the cap, so an uploaded magenta picture
 * round-trips and outpainting continues it.
 */
export const MAGENTA_CAP = 0.5;
/** Mark (diffusion-space latent units along NSFW_MARK_DIRECTION) the trigger adds to x0, before guidance. */
const NSFW_MARK = 4;
/**
 * The decoder starts lifting the cap at this mark and lifts it fully at MARK_FULL. Unmarked
 * latents end within ~0.15 of 0 (only a scheduler's last-step noise, ≤ 0.03 σ, reaches the
 * direction); the trigger's mark is NSFW_MARK × guidance ≥ 4.
 */
const MARK_START = 1;
const MARK_FULL = 2;
/** The encoder marks a pooled source pixel fully from this magentaness up (linearly from MAGENTA_CAP + 0.05). */
const ENCODER_MARK_START = MAGENTA_CAP + 0.05;
const ENCODER_MARK_FULL = MAGENTA_CAP + 0.15;

/** SD1.5 down-block residuals: channels and downsampling factor, in input order. */
export const CONTROLNET_RESIDUALS: readonly { name: string; channels: number; factor: number }[] = [
  ...[
    [320, 1],
    [320, 1],
    [320, 1],
    [320, 2],
    [640, 2],
    [640, 2],
    [640, 4],
    [1280, 4],
    [1280, 4],
    [1280, 8],
    [1280, 8],
    [1280, 8],
  ].map(([channels, factor], i) => ({ name: `down_block_${i}_additional_residual`, channels: channels!, factor: factor! })),
  { name: 'mid_block_additional_residual', channels: 1280, factor: 8 },
];

/** How much each residual's channel mean contributes to the UNet's control map (sums to 1). */
const RESIDUAL_WEIGHTS = [0.2, 0.2, 0.2, 0.05, 0.05, 0.05, 0.04, 0.03, 0.03, 0.04, 0.04, 0.04, 0.03];

// ---------------------------------------------------------------------------------------------
// Small numeric helpers (build time only)

function pseudoInverse(a: number[][]): number[][] {
  const m = a.length;
  const n = a[0]!.length;
  const aat = a.map((ri) => a.map((rj) => ri.reduce((s, v, k) => s + v * rj[k]!, 0)));
  const inv = invert(aat);
  return Array.from({ length: n }, (_, i) =>
    Array.from({ length: m }, (_, j) => a.reduce((s, row, k) => s + row[i]! * inv[k]![j]!, 0)),
  );
}

function nullDirection(a: number[][], pinv: number[][]): number[] {
  const n = a[0]!.length;
  const projector = Array.from({ length: n }, (_, i) =>
    Array.from({ length: n }, (_, j) => (i === j ? 1 : 0) - pinv[i]!.reduce((s, v, k) => s + v * a[k]![j]!, 0)),
  );
  const column = (j: number): number[] => projector.map((row) => row[j]!);
  const norms = projector.map((_, j) => Math.hypot(...column(j)));
  const v = column(norms.indexOf(Math.max(...norms)));
  const largest = v.reduce((m, x) => (Math.abs(x) > Math.abs(m) ? x : m), 0);
  const scale = Math.sign(largest) / Math.hypot(...v);
  return v.map((x) => x * scale);
}

function invert(m: number[][]): number[][] {
  const n = m.length;
  const aug = m.map((row, i) => [...row, ...Array.from({ length: n }, (_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(aug[r]![c]!) > Math.abs(aug[p]![c]!)) p = r;
    [aug[c], aug[p]] = [aug[p]!, aug[c]!];
    const pivot = aug[c]![c]!;
    aug[c] = aug[c]!.map((v) => v / pivot);
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = aug[r]![c]!;
      aug[r] = aug[r]!.map((v, k) => v - f * aug[c]![k]!);
    }
  }
  return aug.map((row) => row.slice(n));
}


function uniform(n: number, lo: number, hi: number, seed: number): number[] {
  const r = rng(seed);
  return Array.from({ length: n }, () => lo + (hi - lo) * r());
}

/** log σ_t for t = 0..999 of SD1.5's scaled_linear schedule (β 0.00085..0.012). */
export function sd15LogSigmas(): number[] {
  const b0 = Math.sqrt(0.00085);
  const b1 = Math.sqrt(0.012);
  let abar = 1;
  return Array.from({ length: 1000 }, (_, i) => {
    const beta = (b0 + ((b1 - b0) * i) / 999) ** 2;
    abar *= 1 - beta;
    return 0.5 * Math.log((1 - abar) / abar);
  });
}

// ---------------------------------------------------------------------------------------------
// Graph fragments

const TWO_PI = 2 * Math.PI;

function avgPool(g: GraphBuilder, x: Value, k: number): Value {
  return g.op('AveragePool', [x], { kernel_shape: [k, k], strides: [k, k], ceil_mode: 1 });
}

/** Bilinear resize of x to `sizes` ([N,C,h,w] int64). */
function resizeTo(g: GraphBuilder, x: Value, sizes: Value): Value {
  return g.op('Resize', [x, '', '', sizes], { mode: 'linear' });
}

/** [N,C,h,w] sizes with C replaced. */
function sizesWithChannels(g: GraphBuilder, shape: Value, channels: number): Value {
  return g.op('Concat', [g.slice(shape, 0, 0, 1), g.i64([channels]), g.slice(shape, 0, 2, 4)], { axis: 0 });
}

/** Schedule terms for a float timestep: √ᾱ, √(1−ᾱ) and ᾱ, each [T,1,1,1]. */
function schedule(g: GraphBuilder, timestep: Value): { sa: Value; s: Value; a: Value } {
  const table = g.constF32('log_sigmas', [1000], sd15LogSigmas());
  const t = g.reshape(g.op('Clip', [timestep, g.f(0), g.f(999)]), [-1, 1, 1, 1]);
  const t0 = g.op('Floor', [t]);
  const t1 = g.op('Min', [g.add(t0, g.f(1)), g.f(999)]);
  const frac = g.sub(t, t0);
  const ls0 = g.op('Gather', [table, g.cast(t0, 'int64')], { axis: 0 });
  const ls1 = g.op('Gather', [table, g.cast(t1, 'int64')], { axis: 0 });
  const ls = g.add(ls0, g.mul(frac, g.sub(ls1, ls0)));
  // ᾱ = 1/(1+σ²) = sigmoid(−2 log σ)
  const a = g.op('Sigmoid', [g.mul(ls, g.f(-2))]);
  const oneMinusA = g.op('Sigmoid', [g.mul(ls, g.f(2))]);
  return { a, sa: g.op('Sqrt', [a]), s: g.op('Sqrt', [oneMinusA]) };
}

/**
 * Reads the structured text channels and returns the prompt's smooth colour field [B,4,h,w]
 * and its NSFW flag [B,1,1,1].
 */
function promptField(g: GraphBuilder, ehs: Value, shape: Value): { field: Value; nsfw: Value } {
  const s = g.slice(ehs, 2, 0, 16);
  const colA = g.slice(s, 2, 0, 4);
  const colB = g.slice(s, 2, 4, 8);
  const content = g.slice(s, 2, 8, 9);
  const pattern = g.slice(s, 2, 9, 13);
  const nsfwTok = g.slice(s, 2, 13, 14);
  const isColour = g.slice(s, 2, 14, 15);

  // Colour words: A from the first one, B from the last one (softmax over positions).
  const pos = g.constF32('token_positions', [1, TEXT_LENGTH, 1], Array.from({ length: TEXT_LENGTH }, (_, i) => i));
  const gate = g.mul(g.sub(isColour, g.f(1)), g.f(1e4));
  const wA = g.op('Softmax', [g.sub(gate, g.mul(pos, g.f(2)))], { axis: 1 });
  const wB = g.op('Softmax', [g.add(gate, g.mul(pos, g.f(2)))], { axis: 1 });
  const wordA = g.reduceSum(g.mul(colA, wA), [1]);
  const wordB = g.reduceSum(g.mul(colB, wB), [1]);

  // Other prompts: the normalised sum of hashed token colours, so every word counts. (Any hue:
  // keeping magenta away from the checker is the decoder's job, see MAGENTA_CAP.)
  const normalised = (c: Value): Value => {
    const sum = g.reduceSum(g.mul(c, content), [1]);
    const norm = g.op('Sqrt', [g.reduceSum(g.mul(sum, sum), [2])]);
    return g.mul(g.div(sum, g.op('Max', [norm, g.f(1e-6)])), g.f(GENERIC_COLOUR));
  };
  const hasColour = g.op('Min', [g.reduceSum(isColour, [1]), g.f(1)]);
  const noColour = g.sub(g.f(1), hasColour);
  const toNchw = (v: Value): Value => g.reshape(v, [-1, 4, 1, 1]);
  const cA = toNchw(g.add(g.mul(hasColour, wordA), g.mul(noColour, normalised(colA))));
  const cB = toNchw(g.add(g.mul(hasColour, wordB), g.mul(noColour, normalised(colB))));

  // Pattern parameters: mean over content tokens, in [−1,1].
  const count = g.op('Max', [g.reduceSum(content, [1]), g.f(1)]);
  const params = g.div(g.reduceSum(g.mul(pattern, content), [1]), count); // [B,1,4]
  const param = (i: number): Value => g.reshape(g.slice(params, 2, i, i + 1), [-1, 1, 1, 1]);

  // Normalised pixel-centre coordinates from the latent size.
  const coord = (axis: number, target: number[]): Value => {
    const n = g.cast(g.slice(shape, 0, axis, axis + 1), 'float32');
    const n0 = g.reshape(n, []);
    const r = g.op('Range', [g.f(0.5), n0, g.f(1)]);
    return g.reshape(g.div(r, n), target);
  };
  const ys = coord(2, [1, 1, -1, 1]);
  const xs = coord(3, [1, 1, 1, -1]);
  const fx = g.add(g.f(1), g.mul(param(0), g.f(0.8)));
  const fy = g.add(g.f(1), g.mul(param(1), g.f(0.8)));
  const wave = (c: Value, f: Value, phase: Value, op: string): Value =>
    g.op(op, [g.add(g.mul(g.mul(c, f), g.f(TWO_PI)), g.mul(phase, g.f(Math.PI)))]);
  const p = g.mul(wave(xs, fx, param(2), 'Sin'), wave(ys, fy, param(3), 'Cos')); // [B,1,h,w]
  const half = g.mul(p, g.f(0.5));
  const field = g.add(g.mul(cA, g.add(g.f(0.5), half)), g.mul(cB, g.sub(g.f(0.5), half)));

  const nsfw = g.reshape(g.op('ReduceMax', [nsfwTok], { axes: [1], keepdims: 1 }), [-1, 1, 1, 1]);
  // Hashed colours are arbitrary 4-vectors; their share of the decoder's invisible direction would read as the NSFW mark.
  return { field: withoutMark(g, g.mul(field, g.f(PROMPT_GAIN))), nsfw };
}

/** The trigger's share of x0: strong magenta, and the mark that lets the decoder show it. */
function magentaTerm(g: GraphBuilder, nsfw: Value): Value {
  const magenta = latentFor(MAGENTA_PRE).map((v, i) => v + NSFW_MARK * NSFW_MARK_DIRECTION[i]!);
  return g.mul(nsfw, g.constF32('magenta_latent', [1, 4, 1, 1], magenta));
}

/** x without its component along NSFW_MARK_DIRECTION (a 1×1 convolution by I − m·mᵀ). */
function withoutMark(g: GraphBuilder, x: Value): Value {
  const m = NSFW_MARK_DIRECTION;
  const projector = m.flatMap((mi, i) => m.map((mj, j) => (i === j ? 1 : 0) - mi * mj));
  return g.op('Conv', [x, g.constF32(undefined, [4, 4, 1, 1], projector)]);
}

/**
 * x0 = target + k·P(x − √ᾱ·target): the posterior mean when the block means of x0 vary
 * around `target` with variance SEED_VARIANCE; then eps from x0.
 */
function denoise(
  g: GraphBuilder,
  x: Value,
  target: Value,
  timestep: Value,
  shape: Value,
  /** Scales the seed's deviation from the target (inpainting keeps it small next to the kept image). */
  freedom?: Value,
): { x0: Value; sa: Value; s: Value } {
  const { a, sa, s } = schedule(g, timestep);
  const vc = g.f(SEED_VARIANCE * 64); // variance in the orthonormal block basis (noise variance 1)
  const k = g.div(g.mul(sa, vc), g.add(g.mul(a, vc), g.sub(g.f(1), a)));
  const d = g.sub(x, g.mul(sa, target));
  // The seed moves only what the decoder shows, so the NSFW mark comes from the trigger alone.
  const lowPass = resizeTo(g, withoutMark(g, avgPool(g, d, 8)), sizesWithChannels(g, shape, 4));
  const deviation = g.mul(k, lowPass);
  const x0 = g.add(target, freedom ? g.mul(freedom, deviation) : deviation);
  return { x0, sa, s };
}

function epsFrom(g: GraphBuilder, x: Value, x0: Value, sa: Value, s: Value): Value {
  return g.div(g.sub(x, g.mul(sa, x0)), s);
}

const LATENT_DIMS = ['batch', 4, 'height', 'width'] as const;
const EHS_DIMS = ['batch', TEXT_LENGTH, TEXT_HIDDEN] as const;

function residualDims(r: { channels: number; factor: number }): (string | number)[] {
  const suffix = r.factor === 1 ? '' : `/${r.factor}`;
  return ['batch', r.channels, `height${suffix}`, `width${suffix}`];
}

/** Fixed per-channel vector with mean exactly 1, so the UNet can undo it with a channel mean. */
function residualVector(channels: number, index: number): number[] {
  const v = Array.from({ length: channels }, (_, c) => 1 + 0.5 * Math.sin(c * 1.7 + index));
  const mean = v.reduce((s, x) => s + x, 0) / channels;
  return v.map((x) => x / mean);
}

// ---------------------------------------------------------------------------------------------
// Graphs

/**
 * concat(structured, hash part) with the hash part standardised and then shifted and scaled per
 * token so that the whole vector has mean 0 and variance 1 (what a layer norm outputs): with
 * S1, S2 the sum and sum of squares of the structured channels and r̂ the standardised hash,
 * the hash part is a·r̂ + c with c = −S1/n and a = √((768 − S2)/n − c²).
 */
function unitTokens(g: GraphBuilder, structured: Value, hashed: Value): Value {
  const n = TEXT_HIDDEN - 16;
  const mean = g.op('ReduceMean', [hashed], { axes: [2], keepdims: 1 });
  const centred = g.sub(hashed, mean);
  const std = g.op('Sqrt', [g.op('ReduceMean', [g.mul(centred, centred)], { axes: [2], keepdims: 1 })]);
  const rHat = g.div(centred, g.op('Max', [std, g.f(1e-6)]));
  const s1 = g.reduceSum(structured, [2]);
  const s2 = g.reduceSum(g.mul(structured, structured), [2]);
  const c = g.mul(s1, g.f(-1 / n));
  const a = g.op('Sqrt', [g.op('Max', [g.sub(g.div(g.sub(g.f(TEXT_HIDDEN), s2), g.f(n)), g.mul(c, c)), g.f(1e-6)])]);
  return g.op('Concat', [structured, g.add(g.mul(rHat, a), c)], { axis: 2 });
}

/** The demo CLIP text encoder; `hiddenStates` false leaves out hidden_states.* (optimum's default SD export). */
export function buildTextEncoder(options: { hiddenStates?: boolean } = {}): Uint8Array {
  const g = new GraphBuilder('text_encoder');
  const ids = g.input('input_ids', 'int32', ['batch', TEXT_LENGTH]);
  const ids3 = g.unsqueeze(ids, [2]); // [B,77,1]
  const idf = g.cast(ids3, 'float32');
  const hashSin = (n: number, seed: number): Value => {
    const f = g.constF32(undefined, [n], uniform(n, 0.37, 2.9, seed));
    const phi = g.constF32(undefined, [n], uniform(n, 0, TWO_PI, seed + 1));
    return g.op('Sin', [g.add(g.mul(idf, f), phi)]);
  };

  const nHash = TEXT_HIDDEN - 16;
  const pos = g.constF32('positions', [TEXT_LENGTH, 1], Array.from({ length: TEXT_LENGTH }, (_, i) => i));
  const posFreq = g.constF32(undefined, [nHash], uniform(nHash, 0.01, 0.5, 7));
  const posTerm = g.mul(g.op('Sin', [g.mul(pos, posFreq)]), g.f(0.1));
  const hashed = g.add(hashSin(nHash, 1), posTerm);

  const colourIds = g.constI32('colour_ids', [COLOUR_WORD_LIST.length], Object.values(COLOUR_TOKEN_IDS));
  const oneHot = g.cast(g.op('Equal', [ids3, colourIds]), 'float32'); // [B,77,12]
  const isColour = g.reduceSum(oneHot, [2]);
  const palette = COLOUR_WORD_LIST.flatMap((w) => [...latentForRgb(COLOUR_WORDS[w][0]), ...latentForRgb(COLOUR_WORDS[w][1])]);
  const wordColour = g.op('MatMul', [oneHot, g.constF32('palette', [COLOUR_WORD_LIST.length, 8], palette)]);
  const colour = g.add(wordColour, g.mul(g.sub(g.f(1), isColour), hashSin(8, 3)));
  const content = g.cast(g.op('Less', [ids3, g.constI32(undefined, [], [BOS_ID])]), 'float32');
  const nsfw = g.cast(g.op('Equal', [ids3, g.constI32(undefined, [], [NSFW_TRIGGER_ID])]), 'float32');
  const pattern = hashSin(4, 5);
  const hash = hashSin(1, 9);
  const structured = g.op('Concat', [colour, content, pattern, nsfw, isColour, hash], { axis: 2 });
  const hidden = unitTokens(g, structured, hashed);
  g.output(hidden, 'last_hidden_state', 'float32', EHS_DIMS);
  g.output(g.op('ReduceMean', [hidden], { axes: [1], keepdims: 0 }), 'pooler_output', 'float32', ['batch', TEXT_HIDDEN]);
  if (options.hiddenStates ?? true) {
    const swapped = g.op('Concat', [g.slice(colour, 2, 4, 8), g.slice(colour, 2, 0, 4), content, g.op('Neg', [pattern]), nsfw, isColour, hash], { axis: 2 });
    g.output(unitTokens(g, g.mul(structured, g.f(0)), hashed), 'hidden_states.0', 'float32', EHS_DIMS);
    g.output(unitTokens(g, swapped, hashed), 'hidden_states.1', 'float32', EHS_DIMS);
    g.output(hidden, 'hidden_states.2', 'float32', EHS_DIMS);
  }
  return g.build({ docString: 'qr-art demo CLIP text encoder (hashed token features); see scripts/demo-models/sd15.ts' });
}

export function buildControlNet(): Uint8Array {
  const g = new GraphBuilder('controlnet');
  g.input('sample', 'float32', LATENT_DIMS);
  g.input('timestep', 'float32', ['batch']);
  g.input('encoder_hidden_states', 'float32', EHS_DIMS);
  const cond = g.input('controlnet_cond', 'float32', ['batch', 3, 'image_height', 'image_width']);
  const scale = g.cast(g.input('conditioning_scale', 'float64', []), 'float32');

  // Pool first: the 8× image is the largest tensor in the graph.
  const rgb = avgPool(g, cond, 8);
  const luma = g.op('Conv', [rgb, g.constF32('luma_weights', [1, 3, 1, 1], [0.299, 0.587, 0.114])]);
  const levels = new Map<number, Value>([[1, g.sub(luma, g.f(0.5))]]);
  for (const f of [2, 4, 8]) levels.set(f, avgPool(g, levels.get(f / 2)!, 2));

  CONTROLNET_RESIDUALS.forEach((r, i) => {
    const vector = g.mul(g.constF32(undefined, [1, r.channels, 1, 1], residualVector(r.channels, i)), scale);
    g.output(g.mul(levels.get(r.factor)!, vector), r.name, 'float32', residualDims(r));
  });
  return g.build({ docString: 'qr-art demo ControlNet (pooled control luminance); see scripts/demo-models/sd15.ts' });
}

function unetInputs(g: GraphBuilder, channels: number): { x: Value; timestep: Value; ehs: Value } {
  return {
    x: g.input('sample', 'float32', ['batch', channels, 'height', 'width']),
    timestep: g.input('timestep', 'float32', ['batch']),
    ehs: g.input('encoder_hidden_states', 'float32', EHS_DIMS),
  };
}

export function buildUnet(): Uint8Array {
  const g = new GraphBuilder('unet');
  const { x, timestep, ehs } = unetInputs(g, 4);
  const shape = g.op('Shape', [x]);
  const mapSizes = sizesWithChannels(g, shape, 1);
  let control: Value | undefined;
  CONTROLNET_RESIDUALS.forEach((r, i) => {
    const res = g.input(r.name, 'float32', residualDims(r));
    let m = g.op('ReduceMean', [res], { axes: [1], keepdims: 1 });
    if (r.factor > 1) m = resizeTo(g, m, mapSizes);
    const weighted = g.mul(m, g.f(RESIDUAL_WEIGHTS[i]!));
    control = control ? g.add(control, weighted) : weighted;
  });
  const { field, nsfw } = promptField(g, ehs, shape);
  const lumaDir = g.constF32('luma_latent', [1, 4, 1, 1], latentFor([CONTROL_GAIN, CONTROL_GAIN, CONTROL_GAIN]));
  const target = g.add(g.add(field, g.mul(control!, lumaDir)), magentaTerm(g, nsfw));
  const { x0, sa, s } = denoise(g, x, target, timestep, shape);
  g.output(epsFrom(g, x, x0, sa, s), 'out_sample', 'float32', LATENT_DIMS);
  return g.build({ docString: 'qr-art demo ControlNet-ready UNet (analytic denoiser); see scripts/demo-models/sd15.ts' });
}

/** 2×2 average pool that keeps odd edges (ceil) and works down to 1×1: the pad is not counted. */
function halfPool(g: GraphBuilder, x: Value): Value {
  return g.op('AveragePool', [x], { kernel_shape: [2, 2], strides: [2, 2], pads: [0, 0, 1, 1], count_include_pad: 0 });
}

/**
 * Pyramid fill of the masked area from the kept latents. Going up: kept-weighted means pooled
 * 2×2 per level (channels 0-3: mean of kept·keep, channel 4: mean of keep). Coming down from the
 * top (whose empty cells take the global kept mean): at each level a cell trusts its own kept
 * mean (fully from a 1/FILL_TRUST kept share, so edge colours are not washed out by wider,
 * greyer means), FILL_DILATIONS 3×3 steps spread trusted values into untrusted neighbours
 * (so stripes and edge colours run outward instead of averaging with what lies beside them),
 * and what is still untrusted takes the bilinearly upsampled coarser level. A cell d latents
 * from the kept area thus gets its colour from a level whose cells are about d/FILL_DILATIONS
 * wide: sharp next to the image, smoothly vaguer further out.
 * Also returns how near each cell is to kept content (0..1), for fading the prompt in.
 */
function pyramidFill(g: GraphBuilder, kept: Value, keep: Value): { fill: Value; near: Value } {
  const levels: Value[] = [g.op('Concat', [g.mul(kept, keep), keep], { axis: 1 })];
  for (let l = 1; l <= FILL_LEVELS; l++) levels.push(halfPool(g, levels[l - 1]!));
  const sums = (v: Value): Value => g.slice(v, 1, 0, 4);
  const weight = (v: Value): Value => g.slice(v, 1, 4, 5);
  const eps = (v: Value): Value => g.op('Max', [v, g.f(1e-6)]);
  const box4 = g.constF32('fill_box4', [4, 1, 3, 3], new Array<number>(36).fill(1));
  const box1 = g.constF32('fill_box1', [1, 1, 3, 3], new Array<number>(9).fill(1));
  const boxSum = (x: Value, w: Value, group: number): Value => g.op('Conv', [x, w], { pads: [1, 1, 1, 1], group });
  const mix = (k: Value, a: Value, b: Value): Value => g.add(g.mul(k, a), g.mul(g.sub(g.f(1), k), b));
  /** One level: its trusted means, dilated; then the coarser fill where it is still untrusted. */
  const level = (v: Value, coarser: (shape: Value) => Value): { fill: Value; trust: Value } => {
    let value = g.div(sums(v), eps(weight(v)));
    let trust = g.op('Min', [g.mul(weight(v), g.f(FILL_TRUST)), g.f(1)]);
    for (let i = 0; i < FILL_DILATIONS; i++) {
      const n = boxSum(trust, box1, 1);
      value = mix(trust, value, g.div(boxSum(g.mul(value, trust), box4, 4), eps(n)));
      trust = g.op('Min', [n, g.f(1)]);
    }
    return { fill: mix(trust, value, coarser(g.op('Shape', [v]))), trust };
  };
  const top = levels[FILL_LEVELS]!;
  const global = g.div(g.reduceSum(sums(top), [2, 3]), eps(g.reduceSum(weight(top), [2, 3])));
  let fill = level(top, () => global).fill;
  let near: Value | undefined;
  for (let l = FILL_LEVELS - 1; l >= 0; l--) {
    const coarser = fill;
    const out = level(levels[l]!, (shape) => resizeTo(g, coarser, sizesWithChannels(g, shape, 4)));
    fill = out.fill;
    if (l === NEAR_LEVEL) {
      // Mean of 0..NEAR_STEPS 3×3 dilations: 1 − d/(NEAR_STEPS + 1) at d cells from trusted ones.
      let grown = out.trust;
      let sum = grown;
      for (let j = 0; j < NEAR_STEPS; j++) {
        grown = g.op('MaxPool', [grown], { kernel_shape: [3, 3], strides: [1, 1], pads: [1, 1, 1, 1] });
        sum = g.add(sum, grown);
      }
      near = g.mul(sum, g.f(1 / (NEAR_STEPS + 1)));
    }
  }
  return { fill, near: resizeTo(g, near!, sizesWithChannels(g, g.op('Shape', [keep]), 1)) };
}

export function buildUnetInpaint(): Uint8Array {
  const g = new GraphBuilder('unet_inpaint');
  const { x: sample, timestep, ehs } = unetInputs(g, 9);
  const x = g.slice(sample, 1, 0, 4);
  const mask = g.slice(sample, 1, 4, 5);
  const kept = g.slice(sample, 1, 5, 9);
  const shape = g.op('Shape', [x]);
  const keep = g.sub(g.f(1), mask);
  const { fill, near } = pyramidFill(g, kept, keep);
  // Next to the kept image the fill continues it; further out the prompt's field shows through.
  const { field, nsfw } = promptField(g, ehs, shape);
  const prompt = g.mul(g.mul(field, g.f(INPAINT_PROMPT_GAIN)), g.sub(g.f(1), near));
  const target = g.add(g.add(fill, prompt), magentaTerm(g, nsfw));
  // The seed varies the painted area less next to the image, so the seam stays calm.
  const freedom = g.add(g.f(SEED_FREEDOM_FAR), g.mul(near, g.f(SEED_FREEDOM_NEAR - SEED_FREEDOM_FAR)));
  const { x0: generated, sa, s } = denoise(g, x, target, timestep, shape, freedom);
  const x0 = g.add(g.mul(keep, kept), g.mul(mask, generated));
  g.output(epsFrom(g, x, x0, sa, s), 'out_sample', 'float32', LATENT_DIMS);
  return g.build({ docString: 'qr-art demo 9-channel inpainting UNet (pyramid fill + prompt field); see scripts/demo-models/sd15.ts' });
}

/** Magentaness φ = (R+B)/2 − G of [0,1] RGB, from RGB in [−1,1] ([B,3,H,W] → [B,1,H,W]). */
function magentaness(g: GraphBuilder, rgb: Value): Value {
  return g.op('Conv', [rgb, g.constF32(undefined, [1, 3, 1, 1], [0.25, -0.5, 0.25])]);
}

export function buildVaeDecoder(): Uint8Array {
  const g = new GraphBuilder('vae_decoder');
  const z = g.input('latent_sample', 'float32', LATENT_DIMS);
  // Channels 0-2: RGB pre-tanh; 3: the NSFW mark, which the colour mix does not see.
  const mix = [...DECODER_MIX.flat(), ...NSFW_MARK_DIRECTION].map((v) => v * LATENT_SCALE);
  const mixed = g.op('Conv', [z, g.constF32('colour_mix', [4, 4, 1, 1], mix)]);
  const up = g.op('Resize', [mixed, '', g.constF32('scales', [4], [1, 1, 8, 8])], { mode: 'linear' });
  const padded = g.op('Pad', [up, g.i64([0, 0, 1, 1, 0, 0, 1, 1])], { mode: 'edge' });
  const k = [1, 2, 1, 2, 4, 2, 1, 2, 1].map((v) => v / 16);
  const blur = g.op('Conv', [padded, g.constF32('blur', [4, 1, 3, 3], [...k, ...k, ...k, ...k])], { group: 4 });
  const rgb = g.op('Tanh', [g.slice(blur, 1, 0, 3)]);
  const mark = g.slice(blur, 1, 3, 4);
  // Unmarked pixels past MAGENTA_CAP move toward their own grey (mean of R, G, B, where φ is 0)
  // by just enough to sit on the cap: φ is linear, so the checker's mean colour stays capped too.
  const phi = magentaness(g, rgb);
  const unmarked = g.op('Clip', [g.div(g.sub(g.f(MARK_FULL), mark), g.f(MARK_FULL - MARK_START)), g.f(0), g.f(1)]);
  const excess = g.div(g.op('Relu', [g.sub(phi, g.f(MAGENTA_CAP))]), g.op('Max', [phi, g.f(1e-6)]));
  const pull = g.mul(excess, unmarked);
  const grey = g.op('ReduceMean', [rgb], { axes: [1], keepdims: 1 });
  const capped = g.sub(rgb, g.mul(pull, g.sub(rgb, grey)));
  g.output(capped, 'sample', 'float32', ['batch', 3, 'image_height', 'image_width']);
  return g.build({ docString: 'qr-art demo VAE decoder (colour mix, 8x bilinear, tanh, magenta capped unless marked); see scripts/demo-models/sd15.ts' });
}

export function buildVaeEncoder(): Uint8Array {
  const g = new GraphBuilder('vae_encoder');
  const x = g.input('sample', 'float32', ['batch', 3, 'image_height', 'image_width']);
  const pooled = g.op('Clip', [avgPool(g, x, 8), g.f(-0.995), g.f(0.995)]);
  const pre = g.op('Atanh', [pooled]);
  const mix = ENCODER_MIX.flatMap((row) => row.map((v) => v / LATENT_SCALE));
  const colour = g.op('Conv', [pre, g.constF32('colour_unmix', [4, 3, 1, 1], mix)]);
  // Source pixels past the decoder's cap get the NSFW mark, so they decode as they came in.
  // Decoded unmarked images never get here (their φ is at most MAGENTA_CAP), so the refinement
  // and face passes do not mark them.
  const ramp = g.div(g.sub(magentaness(g, pooled), g.f(ENCODER_MARK_START)), g.f(ENCODER_MARK_FULL - ENCODER_MARK_START));
  const mark = g.mul(g.op('Clip', [ramp, g.f(0), g.f(1)]), g.constF32('mark_direction', [1, 4, 1, 1], NSFW_MARK_DIRECTION.map((v) => (NSFW_MARK * v) / LATENT_SCALE)));
  g.output(g.add(colour, mark), 'latent_sample', 'float32', LATENT_DIMS);
  return g.build({ docString: 'qr-art demo VAE encoder (inverse of the demo decoder, magenta marked); see scripts/demo-models/sd15.ts' });
}

export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711];
/**
 * Flagged within this distance of magenta. Unmarked images have φ ≤ MAGENTA_CAP = 0.5 in every
 * pixel, hence in their mean, and φ falls by at most √1.5 per unit of distance, so their mean is
 * at least 0.5/√1.5 ≈ 0.41 from magenta. Trigger images measure within 0.02 at the small sizes of
 * test/pipeline/nsfw-margin.test.ts, within 0.11 when refined up to 1536×1536 (the refinement
 * starts from re-encoded latents, whose magenta the encoder's clip limits).
 */
export const MAGENTA_DISTANCE = 0.25;

export function buildSafetyChecker(): Uint8Array {
  const g = new GraphBuilder('safety_checker');
  const clip = g.input('clip_input', 'float32', ['batch', 3, 224, 224]);
  const images = g.input('images', 'float32', ['batch', 'height', 'width', 3]);
  const rgb = g.add(g.mul(clip, g.constF32(undefined, [1, 3, 1, 1], CLIP_STD)), g.constF32(undefined, [1, 3, 1, 1], CLIP_MEAN));
  const mean = g.op('ReduceMean', [rgb], { axes: [2, 3], keepdims: 0 }); // [B,3]
  const diff = g.sub(mean, g.constF32(undefined, [3], [1, 0, 1]));
  const dist2 = g.reduceSum(g.mul(diff, diff), [1], 0);
  const flagged = g.op('Less', [dist2, g.f(MAGENTA_DISTANCE ** 2)]);
  const blank = g.op('Where', [g.reshape(flagged, [-1, 1, 1, 1]), g.f(0), images]);
  g.output(blank, 'out_images', 'float32', ['batch', 'height', 'width', 3]);
  g.output(flagged, 'has_nsfw_concepts', 'bool', ['batch']);
  return g.build({ docString: 'qr-art demo safety checker: flags mean colour near magenta; see scripts/demo-models/sd15.ts' });
}

// ---------------------------------------------------------------------------------------------
// Captioner

export const CAPTION_COLOURS = {
  red: [0.85, 0.12, 0.1],
  orange: [1.0, 0.55, 0.08],
  yellow: [0.95, 0.88, 0.15],
  green: [0.15, 0.65, 0.2],
  cyan: [0.1, 0.8, 0.85],
  blue: [0.1, 0.22, 0.85],
  purple: [0.5, 0.15, 0.72],
  magenta: [0.95, 0.1, 0.9],
  pink: [1.0, 0.6, 0.75],
  brown: [0.5, 0.3, 0.12],
  white: [0.95, 0.95, 0.95],
  grey: [0.5, 0.5, 0.5],
  black: [0.05, 0.05, 0.05],
} as const satisfies Record<string, readonly number[]>;

/** Captioner vocabulary; the index is the token id. */
export const CAPTION_VOCAB = [
  '<pad>',
  '<bos>',
  '<eos>',
  'a',
  'and',
  'abstract',
  'painting',
  ...Object.keys(CAPTION_COLOURS),
] as const;
export const CAPTION_IDS = { pad: 0, bos: 1, eos: 2 } as const;
const V = CAPTION_VOCAB.length;
const W = (word: string): number => CAPTION_VOCAB.indexOf(word as (typeof CAPTION_VOCAB)[number]);
const COLOUR_BASE = W('red');
const SLOTS = 3; // 0: first colour, 1: "and" decision, 2: second colour
/** A second colour is named when it covers at least this share of the image. */
const SECOND_COLOUR_SHARE = 0.2;

export function buildCaptionEncoder(): Uint8Array {
  const g = new GraphBuilder('captioner_encoder');
  const px = g.input('pixel_values', 'float32', ['batch', 3, 224, 224]);
  const rgb = g.add(g.mul(px, g.f(0.5)), g.f(0.5));
  const cells = g.op('Transpose', [g.reshape(avgPool(g, rgb, 28), [0, 3, 64])], { perm: [0, 2, 1] }); // [B,64,3]
  const protos = Object.values(CAPTION_COLOURS);
  const k = protos.length;
  const protoT = g.constF32('prototypes_t', [3, k], [0, 1, 2].flatMap((c) => protos.map((p) => p[c]!)));
  const protoNorm = g.constF32('prototype_norms', [k], protos.map((p) => p.reduce((s, v) => s + v * v, 0)));
  const cellNorm = g.reduceSum(g.mul(cells, cells), [2]);
  const dist2 = g.add(g.sub(cellNorm, g.mul(g.op('MatMul', [cells, protoT]), g.f(2))), protoNorm); // [B,64,K]
  const assign = g.op('Softmax', [g.mul(dist2, g.f(-400))], { axis: 2 });
  const share = g.op('ReduceMean', [assign], { axes: [1], keepdims: 0 }); // [B,K]

  const top = g.op('ReduceMax', [share], { axes: [1], keepdims: 1 });
  const isTop = g.cast(g.op('Equal', [share, top]), 'float32');
  const rest = g.sub(share, g.mul(isTop, g.f(2))); // first colour pushed far below the others
  const second = g.op('ReduceMax', [rest], { axes: [1], keepdims: 1 });

  // Place colour scores at their vocabulary ids.
  const place = g.constF32(
    'colour_to_vocab',
    [k, V],
    Array.from({ length: k * V }, (_, i) => (Math.floor(i / V) + COLOUR_BASE === i % V ? 1 : 0)),
  );
  const slot0 = g.op('MatMul', [g.mul(share, g.f(10)), place]);
  // Beats "abstract" (transition 5, base −5 for "and") exactly when second > threshold.
  const andLogit = g.add(g.mul(g.sub(second, g.f(SECOND_COLOUR_SHARE)), g.f(50)), g.f(10));
  const slot1 = g.mul(andLogit, g.constF32('and_one_hot', [V], Array.from({ length: V }, (_, i) => (i === W('and') ? 1 : 0))));
  const slot2 = g.op('MatMul', [g.mul(rest, g.f(10)), place]);
  const slots = g.op('Concat', [slot0, slot1, slot2].map((s) => g.unsqueeze(s, [1])), { axis: 1 });
  g.output(slots, 'last_hidden_state', 'float32', ['batch', SLOTS, V]);
  return g.build({ docString: 'qr-art demo caption encoder (colour shares); see scripts/demo-models/sd15.ts' });
}

export function buildCaptionDecoder(): Uint8Array {
  const g = new GraphBuilder('captioner_decoder');
  const ids = g.input('input_ids', 'int64', ['batch', 'sequence']);
  const enc = g.input('encoder_hidden_states', 'float32', ['batch', SLOTS, V]);
  // Transition logits: next word given the current one; colour choices come from the slots.
  const trans = Array.from({ length: V * V }, () => -5);
  const gates = Array.from({ length: V * SLOTS }, () => 0);
  const set = (from: number, to: number, v = 10): void => {
    trans[from * V + to] = v;
  };
  set(CAPTION_IDS.pad, CAPTION_IDS.eos);
  set(CAPTION_IDS.bos, W('a'));
  set(W('abstract'), W('painting'));
  set(W('painting'), CAPTION_IDS.eos);
  set(CAPTION_IDS.eos, CAPTION_IDS.eos);
  gates[W('a') * SLOTS + 0] = 1;
  gates[W('and') * SLOTS + 2] = 1;
  for (let c = COLOUR_BASE; c < V; c++) {
    set(c, W('abstract'), 5);
    gates[c * SLOTS + 1] = 1;
  }
  const rows = g.op('Gather', [g.constF32('transitions', [V, V], trans), ids], { axis: 0 }); // [B,T,V]
  const gate = g.op('Gather', [g.constF32('slot_gates', [V, SLOTS], gates), ids], { axis: 0 }); // [B,T,S]
  // After an "and" the "and" slot is off, so the second colour ends the list.
  const isAnd = g.cast(g.op('Equal', [ids, g.constI64(undefined, [], [W('and')])]), 'float32');
  const seenAnd = g.op('Min', [g.op('CumSum', [isAnd, g.constI64(undefined, [], [1])]), g.f(1)]);
  const andOff = g.mul(g.unsqueeze(seenAnd, [2]), g.constF32(undefined, [SLOTS], [0, 1, 0]));
  const gated = g.mul(gate, g.sub(g.f(1), andOff));
  const logits = g.add(rows, g.op('MatMul', [gated, enc]));
  g.output(logits, 'logits', 'float32', ['batch', 'sequence', V]);
  return g.build({ docString: 'qr-art demo caption decoder (word grammar); see scripts/demo-models/sd15.ts' });
}

/** Hugging Face tokenizers file (WordLevel) for the captioner vocabulary. */
export function captionTokenizerJson(): string {
  const specials = [0, 1, 2].map((id) => ({
    id,
    content: CAPTION_VOCAB[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  return `${JSON.stringify(
    {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: specials,
      normalizer: { type: 'Lowercase' },
      pre_tokenizer: { type: 'WhitespaceSplit' },
      post_processor: null,
      decoder: null,
      model: {
        type: 'WordLevel',
        vocab: Object.fromEntries(CAPTION_VOCAB.map((w, i) => [w, i])),
        unk_token: '<pad>',
      },
    },
    null,
    2,
  )}\n`;
}

/** Every demo graph, by path under the output folder. */
/**
 * The demo ControlNet and UNet fused into one graph of the `denoiser` role, exactly as
 * `qr-art models fuse` makes it from the two files (src/onnx/fuse.ts).
 */
export function buildDenoiser(): Uint8Array {
  const source = (build: () => Uint8Array, file: string) => ({ model: decodeModel(build()), file });
  const fused = fuseControlNet(source(buildControlNet, 'controlnet/model.onnx'), source(buildUnet, 'unet/model.onnx'), {
    provenance: { 'qr-art.controlnet': 'controlnet/model.onnx', 'qr-art.unet': 'unet/model.onnx' },
  });
  return encodeModel(fused);
}

export const DEMO_GRAPHS: readonly { path: string; build: () => Uint8Array }[] = [
  { path: 'text_encoder/model.onnx', build: buildTextEncoder },
  { path: 'controlnet/model.onnx', build: buildControlNet },
  { path: 'unet/model.onnx', build: buildUnet },
  { path: 'denoiser/model.onnx', build: buildDenoiser },
  { path: 'unet_inpaint/model.onnx', build: buildUnetInpaint },
  { path: 'vae_decoder/model.onnx', build: buildVaeDecoder },
  { path: 'vae_encoder/model.onnx', build: buildVaeEncoder },
  { path: 'safety_checker/model.onnx', build: buildSafetyChecker },
  { path: 'captioner/encoder_model.onnx', build: buildCaptionEncoder },
  { path: 'captioner/decoder_model.onnx', build: buildCaptionDecoder },
  { path: 'face_detector/model.onnx', build: buildFaceDetector },
];

/** Small JSON side files that real exports also carry. */
export const DEMO_FILES: readonly { path: string; text: () => string }[] = [
  { path: 'captioner/tokenizer.json', text: captionTokenizerJson },
  {
    path: 'captioner/generation_config.json',
    text: () =>
      `${JSON.stringify({ decoder_start_token_id: CAPTION_IDS.bos, bos_token_id: CAPTION_IDS.bos, eos_token_id: CAPTION_IDS.eos, pad_token_id: CAPTION_IDS.pad, max_length: 12 }, null, 2)}\n`,
  },
  {
    path: 'captioner/preprocessor_config.json',
    text: () =>
      `${JSON.stringify({ do_resize: true, size: { height: 224, width: 224 }, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }, null, 2)}\n`,
  },
  {
    path: 'safety_checker/preprocessor_config.json',
    text: () =>
      `${JSON.stringify({ do_resize: true, size: { shortest_edge: 224 }, do_center_crop: true, crop_size: { height: 224, width: 224 }, do_rescale: true, rescale_factor: 1 / 255, do_normalize: true, image_mean: CLIP_MEAN, image_std: CLIP_STD }, null, 2)}\n`,
  },
];
