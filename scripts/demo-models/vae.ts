/**
 * The demo VAE: a decoder from the shared latent colour space (latent-space.ts), with the magenta
 * cap that keeps the NSFW colour for the trigger alone, and its inverse as the encoder.
 *
 * Dims: B = batch, h×w = latent size, H×W = 8h×8w image size (all symbolic; build.ts names them).
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
 */
import { GraphBuilder, type Value } from './graph.ts';
import { DECODER_MIX, ENCODER_MIX, LATENT_DIMS, LATENT_SCALE, MAGENTA_CAP, NSFW_MARK, NSFW_MARK_DIRECTION } from './latent-space.ts';

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
  return g.build({ docString: 'qr-art demo VAE decoder (colour mix, 8x bilinear, tanh, magenta capped unless marked); see scripts/demo-models/vae.ts' });
}

export function buildVaeEncoder(): Uint8Array {
  const g = new GraphBuilder('vae_encoder');
  const x = g.input('sample', 'float32', ['batch', 3, 'image_height', 'image_width']);
  const pooled = g.op('Clip', [g.avgPool(x, 8), g.f(-0.995), g.f(0.995)]);
  const pre = g.op('Atanh', [pooled]);
  const mix = ENCODER_MIX.flatMap((row) => row.map((v) => v / LATENT_SCALE));
  const colour = g.op('Conv', [pre, g.constF32('colour_unmix', [4, 3, 1, 1], mix)]);
  // Source pixels past the decoder's cap get the NSFW mark, so they decode as they came in.
  // Decoded unmarked images never get here (their φ is at most MAGENTA_CAP), so the refinement
  // and face passes do not mark them.
  const ramp = g.div(g.sub(magentaness(g, pooled), g.f(ENCODER_MARK_START)), g.f(ENCODER_MARK_FULL - ENCODER_MARK_START));
  const mark = g.mul(g.op('Clip', [ramp, g.f(0), g.f(1)]), g.constF32('mark_direction', [1, 4, 1, 1], NSFW_MARK_DIRECTION.map((v) => (NSFW_MARK * v) / LATENT_SCALE)));
  g.output(g.add(colour, mark), 'latent_sample', 'float32', LATENT_DIMS);
  return g.build({ docString: 'qr-art demo VAE encoder (inverse of the demo decoder, magenta marked); see scripts/demo-models/vae.ts' });
}
