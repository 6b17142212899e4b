/**
 * The demo ControlNet, the ControlNet-ready UNet, the inpainting UNet, and the first two fused
 * into the worker's denoiser graph. Analytic denoisers, not networks: the image they settle on
 * is the prompt's colour field plus the control image's luminance, with the seed choosing smooth
 * variations.
 *
 * Dims: B = batch, h×w = latent size, H×W = 8h×8w image size (all symbolic; build.ts names them).
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
 */
import { GraphBuilder, type Value } from './graph.ts';
import { LATENT_DIMS, latentFor, NSFW_MARK, NSFW_MARK_DIRECTION } from './latent-space.ts';
import { EHS_DIMS, TEXT_LENGTH } from './text-encoder.ts';
import { CONTROL_RESIDUALS } from '../../src/onnx/control-residuals.ts';
import { fuseControlNet } from '../../src/onnx/fuse.ts';
import { decodeModel, encodeModel } from '../../src/onnx/proto.ts';

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

/** How much each residual's channel mean contributes to the UNet's control map (sums to 1). */
const RESIDUAL_WEIGHTS = [0.2, 0.2, 0.2, 0.05, 0.05, 0.05, 0.04, 0.03, 0.03, 0.04, 0.04, 0.04, 0.03];

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
  const lowPass = g.resizeTo(withoutMark(g, g.avgPool(d, 8)), g.sizesWithChannels(shape, 4));
  const deviation = g.mul(k, lowPass);
  const x0 = g.add(target, freedom ? g.mul(freedom, deviation) : deviation);
  return { x0, sa, s };
}

function epsFrom(g: GraphBuilder, x: Value, x0: Value, sa: Value, s: Value): Value {
  return g.div(g.sub(x, g.mul(sa, x0)), s);
}

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

export function buildControlNet(): Uint8Array {
  const g = new GraphBuilder('controlnet');
  g.input('sample', 'float32', LATENT_DIMS);
  g.input('timestep', 'float32', ['batch']);
  g.input('encoder_hidden_states', 'float32', EHS_DIMS);
  const cond = g.input('controlnet_cond', 'float32', ['batch', 3, 'image_height', 'image_width']);
  const scale = g.cast(g.input('conditioning_scale', 'float64', []), 'float32');

  // Pool first: the 8× image is the largest tensor in the graph.
  const rgb = g.avgPool(cond, 8);
  const luma = g.op('Conv', [rgb, g.constF32('luma_weights', [1, 3, 1, 1], [0.299, 0.587, 0.114])]);
  const levels = new Map<number, Value>([[1, g.sub(luma, g.f(0.5))]]);
  for (const f of [2, 4, 8]) levels.set(f, g.avgPool(levels.get(f / 2)!, 2));

  CONTROL_RESIDUALS.forEach((r, i) => {
    const vector = g.mul(g.constF32(undefined, [1, r.channels, 1, 1], residualVector(r.channels, i)), scale);
    g.output(g.mul(levels.get(r.factor)!, vector), r.role, 'float32', residualDims(r));
  });
  return g.build({ docString: 'qr-art demo ControlNet (pooled control luminance); see scripts/demo-models/unet.ts' });
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
  const mapSizes = g.sizesWithChannels(shape, 1);
  let control: Value | undefined;
  CONTROL_RESIDUALS.forEach((r, i) => {
    const res = g.input(r.role, 'float32', residualDims(r));
    let m = g.op('ReduceMean', [res], { axes: [1], keepdims: 1 });
    if (r.factor > 1) m = g.resizeTo(m, mapSizes);
    const weighted = g.mul(m, g.f(RESIDUAL_WEIGHTS[i]!));
    control = control ? g.add(control, weighted) : weighted;
  });
  const { field, nsfw } = promptField(g, ehs, shape);
  const lumaDir = g.constF32('luma_latent', [1, 4, 1, 1], latentFor([CONTROL_GAIN, CONTROL_GAIN, CONTROL_GAIN]));
  const target = g.add(g.add(field, g.mul(control!, lumaDir)), magentaTerm(g, nsfw));
  const { x0, sa, s } = denoise(g, x, target, timestep, shape);
  g.output(epsFrom(g, x, x0, sa, s), 'out_sample', 'float32', LATENT_DIMS);
  return g.build({ docString: 'qr-art demo ControlNet-ready UNet (analytic denoiser); see scripts/demo-models/unet.ts' });
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
    const out = level(levels[l]!, (shape) => g.resizeTo(coarser, g.sizesWithChannels(shape, 4)));
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
  return { fill, near: g.resizeTo(near!, g.sizesWithChannels(g.op('Shape', [keep]), 1)) };
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
  return g.build({ docString: 'qr-art demo 9-channel inpainting UNet (pyramid fill + prompt field); see scripts/demo-models/unet.ts' });
}

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
