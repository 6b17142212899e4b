/**
 * Latent Consistency Models, the two ways they reach us (docs/models.md §2.7):
 *
 *   full LCM checkpoint   (e.g. SimianLuo/LCM_Dreamshaper_v7) its UNet takes a `timestep_cond`
 *                         [batch, time_cond_proj_dim] (256 there): the guidance-scale embedding of
 *                         (cfg − 1), pipeline/lcm-guidance.ts. Served as the ControlNet-ready UNet
 *                         of a separate pair, or fused by `qr-art models fuse` (which carries the
 *                         input through). One row per image: never CFG.
 *   LCM-LoRA              the LoRA fused into an SD1.5 fine-tune's weights: the graph is a plain
 *                         ControlNet-ready UNet (nothing in the file says LCM), run with the `lcm`
 *                         scheduler; cfg ≤ 1 runs one row, cfg > 1 is ordinary CFG (two rows).
 *
 * The input's name and shape: diffusers' UNet2DConditionModel.forward(timestep_cond=...) and
 * optimum's DummyTimestepInputGenerator ("timestep_cond": [batch_size, time_cond_proj_dim],
 * huggingface/optimum optimum/utils/input_generators.py at 83c88b8). A full LCM UNet exported by
 * optimum has no ControlNet residual inputs and is refused like any optimum UNet (optimum.ts).
 */
import { CONTROL_RESIDUALS } from '../../onnx/control-residuals.ts';
import type { ExportContract, ExportFacts, IoFacts } from './contract.ts';
import { FLOAT, isGraph } from './match.ts';

const RESIDUALS = CONTROL_RESIDUALS.map((r) => r.role);

/** A float [batch, D] timestep_cond with D fixed (the UNet's time_cond_proj_dim). */
const isTimestepCond = (io: IoFacts | undefined): boolean =>
  io !== undefined && (FLOAT as readonly string[]).includes(io.type) && io.dims.length === 2 && typeof io.dims[1] === 'number';

/** Exactly `names` (plus timestep_cond when `cond`) as inputs, and `output` among the outputs. */
function inputsAre(f: ExportFacts, names: readonly string[], cond: boolean, output: string): boolean {
  if (!isGraph(f)) return false;
  const byName = new Map(f.inputs.map((i) => [i.name, i]));
  if (!names.every((n) => byName.has(n)) || !f.outputs.some((o) => o.name === output)) return false;
  if (cond !== isTimestepCond(byName.get('timestep_cond'))) return false;
  return f.inputs.every((i) => names.includes(i.name) || (cond && i.name === 'timestep_cond'));
}

const UNET_INPUTS = ['sample', 'timestep', 'encoder_hidden_states', ...RESIDUALS];
const FUSED_INPUTS = ['sample', 'timestep', 'encoder_hidden_states', 'controlnet_cond', 'conditioning_scale', 'guidance_scale'];

export const ROWS: ExportContract[] = [
  {
    id: 'lcm-full-unet',
    exporter: 'diffusers (docs/models.md §2.2 export of a full LCM checkpoint)',
    graph: 'unet/model.onnx: ControlNet-ready UNet with timestep_cond [batch, 256]',
    role: 'unet',
    verdict: 'serves',
    how: "timestep_cond gets diffusers' guidance-scale embedding of (cfg − 1), as wide as the graph's fixed second axis; one text row and one UNet row per image (no CFG); run with the lcm scheduler",
    matches: (f) => inputsAre(f, UNET_INPUTS, true, 'out_sample'),
  },
  {
    id: 'lcm-full-fused',
    exporter: 'qr-art models fuse (ControlNet + full LCM UNet)',
    graph: 'denoiser/model.onnx with timestep_cond [batch, 256]',
    role: 'denoiser',
    verdict: 'serves',
    how: 'fuse carries timestep_cond through as a fused input (spread over the text rows); the worker feeds the embedding of (cfg − 1) and one text row, so the folded guidance is the identity and nothing is doubled',
    matches: (f) => inputsAre(f, FUSED_INPUTS, true, 'noise_pred'),
  },
  {
    id: 'lcm-lora-unet',
    exporter: 'diffusers + LCM-LoRA fused into the weights (docs/models.md §2.2)',
    graph: 'unet/model.onnx: plain ControlNet-ready UNet',
    role: 'unet',
    verdict: 'serves',
    how: 'as any ControlNet-ready UNet, with the lcm scheduler (the graph cannot tell a fused LCM-LoRA); cfg ≤ 1 runs one row per image, cfg > 1 is classifier-free guidance and doubles the batch (v5s defaults to cfg 1)',
    matches: (f) => inputsAre(f, UNET_INPUTS, false, 'out_sample'),
  },
];
