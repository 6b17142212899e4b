/**
 * Create bodies per workflow, as TypeScript types.
 *
 * Why not `z.input<typeof requestSchemas[name]>`: the server builds its schemas per family in
 * a loop and keeps them as plain `z.ZodObject` (src/workflows/schemas.ts), so their static
 * type has no fields to derive from. The enum-valued fields below use the catalogue's own
 * constants (type-only imports: nothing of the server is loaded at run time), and
 * test/client/bodies.test.ts holds every body's field list to the zod schema of its workflow
 * (same fields, same required ones) and to these types at compile time, so neither can drift
 * without a failing test. Ranges are the server's to check: a body out of range is a 400
 * naming the field (QrArtApiError.details).
 */
import type { EnhanceValue, OutpaintingType, QrCodePattern, QrRepairMode, V5Model } from '../workflows/catalogue.ts';
import type { WorkflowName } from '../workflows/names.ts';
import type { PresetName } from '../workflows/presets.ts';
import type { AspectRatio, Resolution } from '../workflows/sizes.ts';

export type { WorkflowName };

/** v1 to v3b: the client supplies a QR image URL. */
export type QrImageWorkflow = 'generate_qr_art' | 'generate_qr_art_v1.1' | 'generate_qr_art_v2' | 'generate_qr_art_v3a' | 'generate_qr_art_v3b';
/** v4 takes no steps. */
export type V4Workflow = 'generate_qr_art_v4';
/** The v4 variants that take qrSteps. */
export type V4StepsWorkflow = 'generate_qr_art_v4s' | 'generate_qr_art_v4real' | 'generate_qr_art_v4niji' | 'generate_qr_art_v4dream';
export type V5Workflow = 'generate_qr_art_v5' | 'generate_qr_art_v5s';
export type OutpaintingWorkflow = 'outpainting';

/** Fields every workflow takes. */
interface Common {
  /** 0 to 2^53-1; random when absent (the chosen seed comes back in the record's input). */
  seed?: number;
  negativePrompt?: string;
  /** HTTPS URL called on each status change with the get-prediction body (verify with verifyWebhook). */
  webhook?: string;
}

export interface QrImageBody<W extends QrImageWorkflow = QrImageWorkflow> extends Common {
  workflow: W;
  qrText: string;
  qrImage: string;
  qrStrength?: number;
  /** An integer; a string of digits is accepted as earlier releases sent it. */
  qrSteps?: number | string;
  qrRepair?: QrRepairMode;
}

export interface V4Body extends Common {
  workflow: V4Workflow;
  qrText: string;
  qrContent: string;
  qrStrength?: number;
  batchSize?: number;
  qrRepair?: QrRepairMode;
}

export interface V4StepsBody<W extends V4StepsWorkflow = V4StepsWorkflow> extends Omit<V4Body, 'workflow'> {
  workflow: W;
  qrSteps?: number | string;
}

export interface V5Body<W extends V5Workflow = V5Workflow> extends Common {
  workflow: W;
  prompt: string;
  qrContent: string;
  steps?: number;
  qrStrength?: number;
  cfg?: number;
  model?: V5Model;
  batchSize?: number;
  enhance?: EnhanceValue;
  aspectRatio?: AspectRatio;
  resolution?: Resolution;
  /** Spelled as in the spec. */
  qrCodePartern?: QrCodePattern;
  qrX?: number;
  qrY?: number;
  qrRatio?: number;
  preset?: PresetName;
  qrRepair?: QrRepairMode;
}

export interface OutpaintingBody extends Common {
  workflow: OutpaintingWorkflow;
  image: string;
  /** Absent: the service captions the image and uses the caption. */
  prompt?: string;
  image_width: number;
  image_height: number;
  padding_left: number;
  padding_bottom: number;
  padding_top: number;
  padding_right: number;
  type: OutpaintingType;
}

/** The body of each workflow; a workflow the map misses is a compile error in the body test. */
export type CreateBodies = {
  [W in WorkflowName]: W extends QrImageWorkflow
    ? QrImageBody<W>
    : W extends V4Workflow
      ? V4Body
      : W extends V4StepsWorkflow
        ? V4StepsBody<W>
        : W extends V5Workflow
          ? V5Body<W>
          : W extends OutpaintingWorkflow
            ? OutpaintingBody
            : never;
};

/** Any create body, discriminated by `workflow`. */
export type CreateBody = CreateBodies[WorkflowName];
