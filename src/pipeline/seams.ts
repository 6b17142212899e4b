/**
 * Start-up checks of a separate ControlNet + ControlNet-ready UNet pair (SeparateDenoiser), the
 * seam where the 13 residuals leave one graph and enter the other.
 *
 * Two things are never done in JavaScript, per step, so a pair that would need them is refused
 * here, at start, with the fix named:
 *
 *   scale      a ControlNet with no conditioning_scale input (OnnxStack's runtime still runs such
 *              4-input ControlNets; its current converter keeps the input, a float64 scalar)
 *              would make qrStrength do nothing. `qr-art models scale-controlnet`
 *              gives it one (the residuals multiplied inside the graph, src/onnx/scale-wrap.ts);
 *              `qr-art models fuse` does the same while fusing the model's own pair.
 *   precision  a ControlNet and a UNet that disagree on a float dtype they share (OnnxStack's
 *              float32-IO conversion of fp16 graphs beside an fp16-IO export) would send ~30 M
 *              residual values a step through JavaScript fp16 conversion. `qr-art models fuse`
 *              bridges them with Cast nodes inside the one graph it writes.
 */
import { CONTROL_RESIDUALS } from '../onnx/control-residuals.ts';
import { GraphSessionError, type GraphSession } from './graph-session.ts';

/** Where a pair disagrees on precision: [what, ControlNet dtype, UNet dtype]. */
export function seamMismatches(unet: GraphSession, controlnet: GraphSession): [string, string, string][] {
  const out: [string, string, string][] = [];
  for (const role of ['sample', 'encoder_hidden_states'] as const) {
    const a = controlnet.input(role).type;
    const b = unet.input(role).type;
    if (a !== b) out.push([`input ${role}`, a, b]);
  }
  for (const r of CONTROL_RESIDUALS) {
    const a = controlnet.output(r.role).type;
    const b = unet.input(r.role).type;
    if (a !== b) out.push([r.role, a, b]);
  }
  return out;
}

/** Throws GraphSessionError naming the fix when the pair cannot run as is (see the top of this file). */
export function checkSeparatePair(unet: GraphSession, controlnet: GraphSession): void {
  if (!controlnet.hasInput('conditioning_scale')) {
    throw new GraphSessionError(
      `${controlnet.path}: the ControlNet has no conditioning_scale input, so qrStrength could not scale its residuals (they are never scaled in JavaScript). ` +
        `Give it one: \`qr-art models scale-controlnet --in ${controlnet.path} --out <dir>/model.onnx\` (multiplies every residual by a new conditioning_scale input inside the graph), ` +
        `or fuse it with the UNet: \`qr-art models fuse --controlnet ${controlnet.path} --unet ${unet.path} --out <dir>/model.onnx\` and name the result as the model's graphs.denoiser`,
    );
  }
  const mismatches = seamMismatches(unet, controlnet);
  if (mismatches.length > 0) {
    const [what, a, b] = mismatches[0]!;
    const more = mismatches.length > 1 ? ` (and ${mismatches.length - 1} more)` : '';
    throw new GraphSessionError(
      `${controlnet.path} and ${unet.path}: the ControlNet and the UNet differ in precision at the seam: ${what} is ${a} in the ControlNet and ${b} in the UNet${more}; ` +
        `residuals are never converted per step in JavaScript. Fuse the pair: \`qr-art models fuse --controlnet ${controlnet.path} --unet ${unet.path} --out <dir>/model.onnx\` ` +
        `(Cast nodes bridge the dtypes inside the graph) and name the result as the model's graphs.denoiser, or export both with the same input/output precision`,
    );
  }
}
