import { writeOutputFile } from './write-output.ts';
import { parseArgs } from 'node:util';
import { encodePng } from '../image/decode.ts';
import { bodyFromFlags, flagMessages, type BodyFlag } from './body-flags.ts';
import { renderControlImage } from '../qr/control-image.ts';
import { ensureScannable } from '../qr/guarantee.ts';
import { scanSummary } from './scan-summary.ts';
import { QR_CODE_PATTERNS, V5_MODELS } from '../workflows/catalogue.ts';
import { controlPlanFor } from '../workflows/control.ts';
import { ASPECT_RATIOS, RESOLUTIONS } from '../workflows/sizes.ts';
import { parseCreateBody } from '../workflows/validate.ts';

const USAGE = `qr-art qr render --content TEXT [options]

Writes the control image a v5 generation would be conditioned on: the code for TEXT in the
pattern, size and place given, so a layout can be previewed before paying for a generation.
The options are the v5 body's fields and are checked by the same rules as the API. It says
whether the plain code passes the verdict a job gives its images (isScanables: the scan check
and the family of simulated phone captures); exit 3 when it does not, for then no art on it can.

  --content TEXT         qrContent (a link, text, tel:..., mailto:...)          required
  --pattern NAME         qrCodePartern: ${QR_CODE_PATTERNS.join(' ')}
  --aspect-ratio R       ${ASPECT_RATIOS.join(' ')}
  --resolution R         ${RESOLUTIONS.join(' ')}
  --qr-ratio N           side of the code's square (quiet zone included) / short side
  --qr-x N, --qr-y N     top-left corner of that square, in output pixels (centred when absent)
  --model NAME           ${V5_MODELS.join(' ')} (decides the background: gray or white)
  --out FILE             PNG to write (default qr.png)
  --json                 print the layout as JSON`;

const FLAGS: readonly BodyFlag[] = [
  { field: 'qrContent', flag: '--content', kind: 'text' },
  { field: 'qrCodePartern', flag: '--pattern', kind: 'text' },
  { field: 'aspectRatio', flag: '--aspect-ratio', kind: 'text' },
  { field: 'resolution', flag: '--resolution', kind: 'text' },
  { field: 'qrRatio', flag: '--qr-ratio', kind: 'number' },
  { field: 'qrX', flag: '--qr-x', kind: 'number' },
  { field: 'qrY', flag: '--qr-y', kind: 'number' },
  { field: 'model', flag: '--model', kind: 'text' },
];

/** `qr-art qr render`: returns the exit code; messages name the offending option. */
export async function qrCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'render') {
    const help = action === '--help' || action === '-h' || action === 'help';
    if (help) console.log(USAGE);
    else console.error(`${action === undefined ? 'qr-art qr needs an action: render' : `unknown action '${action}': qr-art qr has render`}\n\n${USAGE}`);
    return help ? 0 : 1;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      content: { type: 'string' },
      pattern: { type: 'string' },
      'aspect-ratio': { type: 'string' },
      resolution: { type: 'string' },
      'qr-ratio': { type: 'string' },
      'qr-x': { type: 'string' },
      'qr-y': { type: 'string' },
      model: { type: 'string' },
      out: { type: 'string', default: 'qr.png' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const body = { workflow: 'generate_qr_art_v5', prompt: 'preview', ...bodyFromFlags(FLAGS, values) };
  const parsed = parseCreateBody(body, { allowPrivateUrls: false, randomSeed: () => 0 });
  if (!parsed.ok) {
    for (const message of flagMessages(parsed.issues, FLAGS)) console.error(message);
    return 2;
  }
  const plan = controlPlanFor(parsed.value.workflow, parsed.value.input);
  if (plan.kind !== 'content') throw new Error('a v5 body always has a content plan');
  const control = renderControlImage(plan);
  try {
    await writeOutputFile(values.out, await encodePng(control.image));
  } catch (error) {
    console.error(`--out: cannot write ${values.out}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    return 2;
  }
  // The verdict a job gives its images (isScanables): the scan check and the capture family.
  const geometry = { matrix: control.matrix, layout: control.layout, control: control.image };
  const verdict = await ensureScannable(control.image, plan.content, geometry, 'off', { codeSide: control.layout.codePixels });
  const summary = {
    out: values.out,
    width: plan.canvas.width,
    height: plan.canvas.height,
    pattern: plan.pattern,
    background: plan.background,
    version: control.matrix.version,
    modules: control.matrix.size,
    moduleSize: control.layout.moduleSize,
    square: control.layout.placement,
    scannable: verdict.scannable,
    scanRobustness: verdict.robustness,
  };
  if (values.json) console.log(JSON.stringify(summary));
  else {
    console.log(
      `${summary.out}: ${summary.width}x${summary.height}, pattern ${summary.pattern} on ${summary.background}, version ${summary.version} ` +
        `(${summary.modules} modules of ${summary.moduleSize} px) in the ${summary.square.side} px square at (${summary.square.x}, ${summary.square.y}); ` +
        scanSummary(summary.scannable, summary.scanRobustness),
    );
  }
  return summary.scannable ? 0 : 3;
}
