/**
 * Non-finite values (NaN, ±Inf) where a graph should give numbers. An fp16 VAE decoder can
 * overflow on bright, high-contrast latents (fp16 ends at 65504); its NaN would otherwise turn
 * into a black image that is delivered as if it were a result. The pipeline checks the decoder's
 * output (diffusion-parts.ts), decodes again with the manifest's vae_decoder_fp32 when it has
 * one, and otherwise fails the job with this error, which the worker reports as a failure of the
 * job (refunded), not of the worker.
 */

export class NonFiniteOutputError extends Error {
  override readonly name = 'NonFiniteOutputError';
}

/** True when every value is a finite number (x − x is 0 for those, NaN for NaN and ±Inf). */
export function allFinite(data: ArrayLike<number>): boolean {
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (v - v !== 0) return false;
  }
  return true;
}
