/**
 * The client's create-body types cannot drift from the server's zod schemas: each workflow's
 * field list below is checked against its TypeScript type at compile time (tsc --noEmit: the
 * list must name every key of the type and only those, and its required part exactly the
 * required keys) and against requestSchemas at run time (same fields, same required ones).
 * The record types are held to the server's own at compile time too.
 */
import { describe, expect, it } from 'vitest';
import type { CreateBodies, CreateBody, ListedPrediction, PredictionRecord } from '../../src/client/index.ts';
import type { ListedPrediction as ServerListed, PredictionRecord as ServerRecord } from '../../src/store/prediction-record.ts';
import { requestSchemas } from '../../src/workflows/schemas.ts';
import { WORKFLOWS, type WorkflowName } from '../../src/workflows/names.ts';

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** true when A and B are the same union, else false. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** A field list that the compiler holds to T: all keys, no others; required = T's required keys. */
function fieldsOf<T>() {
  return <const All extends readonly (keyof T)[], const Req extends readonly RequiredKeys<T>[]>(
    all: All & (Same<All[number], keyof T> extends true ? unknown : never),
    required: Req & (Same<Req[number], RequiredKeys<T>> extends true ? unknown : never),
  ) => ({ all: [...all] as string[], required: [...required] as string[] });
}

const common = ['seed', 'negativePrompt', 'webhook'] as const;
const qrImageFields = fieldsOf<CreateBodies['generate_qr_art']>()(
  ['workflow', 'qrText', 'qrImage', 'qrStrength', 'qrSteps', 'qrRepair', ...common],
  ['workflow', 'qrText', 'qrImage'],
);
const v4Fields = fieldsOf<CreateBodies['generate_qr_art_v4']>()(
  ['workflow', 'qrText', 'qrContent', 'qrStrength', 'batchSize', 'qrRepair', ...common],
  ['workflow', 'qrText', 'qrContent'],
);
const v4StepsFields = fieldsOf<CreateBodies['generate_qr_art_v4s']>()(
  ['workflow', 'qrText', 'qrContent', 'qrStrength', 'qrSteps', 'batchSize', 'qrRepair', ...common],
  ['workflow', 'qrText', 'qrContent'],
);
const v5Fields = fieldsOf<CreateBodies['generate_qr_art_v5']>()(
  [
    'workflow', 'prompt', 'qrContent', 'steps', 'qrStrength', 'cfg', 'model', 'batchSize', 'enhance', 'aspectRatio',
    'resolution', 'qrCodePartern', 'qrX', 'qrY', 'qrRatio', 'preset', 'qrRepair', ...common,
  ],
  ['workflow', 'prompt', 'qrContent'],
);
const outpaintingFields = fieldsOf<CreateBodies['outpainting']>()(
  ['workflow', 'image', 'prompt', 'image_width', 'image_height', 'padding_left', 'padding_bottom', 'padding_top', 'padding_right', 'type', ...common],
  ['workflow', 'image', 'image_width', 'image_height', 'padding_left', 'padding_bottom', 'padding_top', 'padding_right', 'type'],
);
/**
 * Every workflow name has its list (a new workflow without one does not compile), and the
 * workflows that share a list share a body type.
 */
const FIELDS: Record<WorkflowName, { all: string[]; required: string[] }> = {
  generate_qr_art: qrImageFields,
  'generate_qr_art_v1.1': qrImageFields,
  generate_qr_art_v2: qrImageFields,
  generate_qr_art_v3a: qrImageFields,
  generate_qr_art_v3b: qrImageFields,
  generate_qr_art_v4: v4Fields,
  generate_qr_art_v4s: v4StepsFields,
  generate_qr_art_v4real: v4StepsFields,
  generate_qr_art_v4niji: v4StepsFields,
  generate_qr_art_v4dream: v4StepsFields,
  generate_qr_art_v5: v5Fields,
  generate_qr_art_v5s: v5Fields,
  outpainting: outpaintingFields,
};

// Compile-time: no workflow maps to `never`, and each shares the shape of the list it was given.
type Unmapped = { [W in WorkflowName]: [CreateBodies[W]] extends [never] ? W : never }[WorkflowName];
const everyWorkflowHasABody: Same<Unmapped, never> = true;
type SameKeys<A, B> = [Same<keyof A, keyof B>, Same<RequiredKeys<A>, RequiredKeys<B>>] extends [true, true] ? true : false;
const sharedShapes: [
  SameKeys<CreateBodies['generate_qr_art_v1.1'], CreateBodies['generate_qr_art']>,
  SameKeys<CreateBodies['generate_qr_art_v2'], CreateBodies['generate_qr_art']>,
  SameKeys<CreateBodies['generate_qr_art_v3a'], CreateBodies['generate_qr_art']>,
  SameKeys<CreateBodies['generate_qr_art_v3b'], CreateBodies['generate_qr_art']>,
  SameKeys<CreateBodies['generate_qr_art_v4real'], CreateBodies['generate_qr_art_v4s']>,
  SameKeys<CreateBodies['generate_qr_art_v4niji'], CreateBodies['generate_qr_art_v4s']>,
  SameKeys<CreateBodies['generate_qr_art_v4dream'], CreateBodies['generate_qr_art_v4s']>,
  SameKeys<CreateBodies['generate_qr_art_v5s'], CreateBodies['generate_qr_art_v5']>,
] = [true, true, true, true, true, true, true, true];

// Compile-time: what the server returns fits the client's types.
const serverRecordFits = (record: ServerRecord): PredictionRecord => record;
const serverListedFits = (record: ServerListed): ListedPrediction => record;

describe('create body types', () => {
  it.each(WORKFLOWS)('%s: the same fields, and the same required ones, as the server schema', (workflow) => {
    const shape = requestSchemas[workflow].shape as Record<string, { isOptional(): boolean }>;
    expect(Object.keys(shape).sort()).toEqual([...FIELDS[workflow].all].sort());
    const required = Object.entries(shape).filter(([, field]) => !field.isOptional()).map(([name]) => name);
    expect(required.sort()).toEqual([...FIELDS[workflow].required].sort());
  });

  it('a body is typed by its workflow (wrong fields do not compile)', () => {
    const v5: CreateBody = { workflow: 'generate_qr_art_v5s', prompt: 'koi', qrContent: 'https://example.com', aspectRatio: '16:9', qrCodePartern: 'rd2' };
    // @ts-expect-error v4 takes qrText, not prompt
    const v4: CreateBody = { workflow: 'generate_qr_art_v4', prompt: 'koi', qrContent: 'x' };
    // @ts-expect-error not an aspect ratio of the catalogue
    const badEnum: CreateBody = { workflow: 'generate_qr_art_v5', prompt: 'koi', qrContent: 'x', aspectRatio: '2:1' };
    // @ts-expect-error v4 takes no steps
    const noSteps: CreateBody = { workflow: 'generate_qr_art_v4', qrText: 'koi', qrContent: 'x', qrSteps: 20 };
    expect([v5, v4, badEnum, noSteps, everyWorkflowHasABody, sharedShapes, serverRecordFits, serverListedFits]).toHaveLength(8);
  });
});
