/**
 * `qr-art models scale-controlnet` and `qr-art models vae-mean`: one-graph rewrites that make an
 * export the worker refuses at start servable, without touching its weights (external data is
 * followed and written again by model-file.ts). Each result is opened in ONNX Runtime and
 * checked against its role before the command reports success.
 *
 *   scale-controlnet   a ControlNet without a conditioning_scale input gets one, multiplying every
 *                      residual inside the graph (src/onnx/scale-wrap.ts)
 *   vae-mean           a VAE encoder that samples inside its graph outputs the mean instead
 *                      (src/onnx/vae-mean.ts)
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import { ModelFileError, readModelFile, type ExternalDataMode } from '../onnx/model-file.ts';
import { addScaleInput, ScaleWrapError } from '../onnx/scale-wrap.ts';
import { replaceNormalDraws, VaeMeanError } from '../onnx/vae-mean.ts';
import { GraphSession, GraphSessionError } from '../pipeline/graph-session.ts';
import type { GraphRole } from '../pipeline/manifest.ts';
import { randomOpsInFile } from '../pipeline/vae-encoder-check.ts';
import { writeCheckedModel } from './checked-model-write.ts';

export const REWRITE_USAGE = `qr-art models scale-controlnet --in FILE --out FILE [--names role=name,...] [--external-data MODE]
qr-art models vae-mean --in FILE --out FILE [--external-data MODE]

  scale-controlnet   gives a ControlNet without a conditioning_scale input one (a float32
                     scalar that multiplies every residual inside the graph), so qrStrength works
                     and it can run as a separate pair or as one of the manifest's controlnets
  vae-mean           makes a VAE encoder that samples inside its graph (latent_dist.sample()
                     traced in) output the distribution's mean, so the same seed reproduces
  --names MAP        role=name,... where the ControlNet's residual outputs are named differently
  --external-data    auto (over 2 GiB), always, never (default auto); weights go to FILE_data`;

export async function rewriteCommand(action: 'scale-controlnet' | 'vae-mean', argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      in: { type: 'string' },
      out: { type: 'string' },
      names: { type: 'string' },
      'external-data': { type: 'string', default: 'auto' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(REWRITE_USAGE);
    return 0;
  }
  const mode = values['external-data'] as ExternalDataMode;
  const problems = [
    ...(!values.in || !values.out ? ['--in and --out are required'] : []),
    ...(!['auto', 'always', 'never'].includes(mode) ? [`--external-data must be auto, always or never, got '${mode}'`] : []),
  ];
  const names = Object.fromEntries((values.names ?? '').split(',').filter(Boolean).map((p) => p.split('=')));
  if (Object.entries(names).some(([k, v]) => !k || !v)) problems.push(`--names: '${values.names}' is not role=name,...`);
  if (problems.length > 0) {
    for (const p of problems) console.error(p);
    console.error(`\n${REWRITE_USAGE}`);
    return 2;
  }
  const input = resolve(values.in!);
  const out = resolve(values.out!);
  try {
    const model = await readModelFile(input);
    let role: GraphRole;
    if (action === 'scale-controlnet') {
      addScaleInput(model, input, names as Record<string, string>);
      role = 'controlnet';
    } else {
      const n = replaceNormalDraws(model, input);
      console.log(`replaced ${n} random draw${n === 1 ? '' : 's'} by zeros: the encoder outputs the mean`);
      role = 'vae_encoder';
    }
    const written = await writeCheckedModel(model, out, mode, async (candidate) => {
      const session = await ort.InferenceSession.create(candidate, { logSeverityLevel: 3 });
      try {
        const spec = role === 'controlnet' && Object.keys(names).length > 0 ? { outputs: names as Record<string, string> } : {};
        const g = GraphSession.bind(role, out, session, spec);
        if (role === 'controlnet' && !g.hasInput('conditioning_scale')) throw new GraphSessionError(`${out}: the result has no conditioning_scale input`);
      } finally {
        await session.release();
      }
      if (role === 'vae_encoder' && (await randomOpsInFile(candidate)).length > 0) throw new GraphSessionError(`${out}: the result still draws random numbers`);
    });
    console.log(`checked: ONNX Runtime opens it and it fits the ${role} role`);
    console.log(`wrote ${out}${written.dataFile ? ` and ${written.dataFile}` : ''}`);
    return 0;
  } catch (err) {
    if (err instanceof ScaleWrapError || err instanceof VaeMeanError || err instanceof ModelFileError || err instanceof GraphSessionError) {
      console.error(err.message);
      return 1;
    }
    throw err;
  }
}
