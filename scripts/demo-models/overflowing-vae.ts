/**
 * A VAE decoder that overflows the way an fp16 export can: the demo decoder (vae.ts), plus a
 * term that is 0 while every latent times OVERFLOW_GAIN fits in float16 and NaN as soon as one
 * does not (the product is cast to float16 and back, where it became Inf, and Inf − Inf is NaN).
 * The NaN spreads to every pixel, as a real overflow inside the decoder's convolutions would.
 * Zero latents (the warm-up's) decode cleanly; any generated image overflows.
 *
 * Contract: the demo decoder's (latent_sample float32 [B,4,h,w] → sample float32 [B,3,8h,8w]).
 */
import { DataType, decodeModel, encodeModel, node, tensor } from '../../src/onnx/proto.ts';
import { buildVaeDecoder } from './vae.ts';

/** Latents above 65504 / OVERFLOW_GAIN ≈ 0.066 in magnitude overflow. */
export const OVERFLOW_GAIN = 1e6;

export function buildOverflowingVaeDecoder(): Uint8Array {
  const model = decodeModel(buildVaeDecoder());
  const g = model.graph!;
  const producer = g.node.find((n) => n.output.includes('sample'));
  if (!producer) throw new Error('the demo VAE decoder has no node writing sample');
  producer.output = producer.output.map((o) => (o === 'sample' ? 'sample/clean' : o));
  g.initializer.push(tensor('overflow/gain', 'float32', [], [OVERFLOW_GAIN]));
  g.node.push(
    node('Mul', ['latent_sample', 'overflow/gain'], ['overflow/scaled'], {}, 'overflow/scale'),
    node('Cast', ['overflow/scaled'], ['overflow/half'], { to: DataType.FLOAT16 }, 'overflow/to_half'),
    node('Cast', ['overflow/half'], ['overflow/back'], { to: DataType.FLOAT }, 'overflow/to_float'),
    node('Sub', ['overflow/back', 'overflow/back'], ['overflow/zero_or_nan'], {}, 'overflow/difference'),
    node('ReduceSum', ['overflow/zero_or_nan'], ['overflow/any'], { keepdims: 1 }, 'overflow/spread'),
    node('Add', ['sample/clean', 'overflow/any'], ['sample'], {}, 'overflow/poison'),
  );
  model.docString = 'qr-art fixture: the demo VAE decoder, overflowing to NaN as an fp16 export can; see scripts/demo-models/overflowing-vae.ts';
  return encodeModel(model);
}
