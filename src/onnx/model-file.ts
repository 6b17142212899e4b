/**
 * ONNX model files on disk, with external data.
 *
 * A protobuf message cannot exceed 2 GiB, so exports larger than that (an fp32 SD1.5 UNet is
 * 3.4 GB) keep the graph in model.onnx and the weights in other files, each initializer saying
 * where its bytes are (external_data: location relative to the model's folder, offset, length).
 * Exporters name those files differently (weights.pb, model.onnx_data, a uuid), so we only ever
 * follow `location`.
 *
 * Reading leaves the weights where they are: external locations are made absolute in memory
 * so a model can be rewritten into another folder. Writing either inlines every tensor or moves
 * the initializers into one data file beside the model (`<name>_data`, offsets aligned to 4 KiB
 * so ONNX Runtime can map them), copying bytes in bounded chunks.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { finished } from 'node:stream/promises';
import { create } from '@bufbuild/protobuf';
import { StringStringEntryProtoSchema, TensorProto_DataLocation } from 'onnx-buf';
import { decodeModel, encodeModel, type AttributeProto, type GraphProto, type ModelProto, type TensorProto } from './proto.ts';

export class ModelFileError extends Error {
  override readonly name = 'ModelFileError';
}

/** Largest serialized model we inline (protobuf's 2 GiB, less room for the graph itself). */
export const INLINE_LIMIT_BYTES = 2 ** 31 - 64 * 2 ** 20;
/** Initializers smaller than this stay inline even when the rest goes to the data file. */
const EXTERNAL_MIN_BYTES = 1024;
const ALIGN = 4096;
const COPY_CHUNK = 64 * 2 ** 20;

export interface ExternalRef {
  readonly file: string;
  readonly offset: number;
  readonly length: number | undefined;
}

/** Reads a model; external data locations become absolute paths (nothing else is read). */
export async function readModelFile(file: string): Promise<ModelProto> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new ModelFileError(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let model: ModelProto;
  try {
    model = decodeModel(bytes);
  } catch (err) {
    throw new ModelFileError(`${file}: not an ONNX model (${(err as Error).message})`);
  }
  if (!model.graph) throw new ModelFileError(`${file}: the model has no graph`);
  const dir = dirname(resolve(file));
  for (const t of modelTensors(model)) {
    const ref = externalRef(t);
    if (!ref) continue;
    const location = t.externalData.find((e) => e.key === 'location')!;
    if (!isAbsolute(location.value)) location.value = join(dir, location.value);
  }
  return model;
}

/** Where an external tensor's bytes are (its location as stored: absolute after readModelFile). */
export function externalRef(t: TensorProto): ExternalRef | undefined {
  if (t.dataLocation !== TensorProto_DataLocation.EXTERNAL) return undefined;
  const get = (key: string): string | undefined => t.externalData.find((e) => e.key === key)?.value;
  const file = get('location');
  if (!file) throw new ModelFileError(`tensor '${t.name}' is external but names no location`);
  const count = (key: string): number | undefined => {
    const value = get(key);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 0) throw new ModelFileError(`tensor '${t.name}': its external data's ${key} '${value}' is not a byte count`);
    return n;
  };
  return { file, offset: count('offset') ?? 0, length: count('length') };
}

/** Every tensor stored in a model: initializers and tensor attributes, subgraphs and functions included. */
export function* modelTensors(model: ModelProto): Generator<TensorProto> {
  if (model.graph) yield* graphTensors(model.graph);
  for (const f of model.functions) for (const n of f.node) yield* attributeTensors(n.attribute);
}

function* graphTensors(g: GraphProto): Generator<TensorProto> {
  yield* g.initializer;
  for (const n of g.node) yield* attributeTensors(n.attribute);
}

function* attributeTensors(attrs: readonly AttributeProto[]): Generator<TensorProto> {
  for (const a of attrs) {
    if (a.t) yield a.t;
    yield* a.tensors;
    if (a.g) yield* graphTensors(a.g);
    for (const g of a.graphs) yield* graphTensors(g);
  }
}

/** Bytes a tensor takes where it is stored now (raw or external; typed fields counted roughly). */
export function storedBytes(t: TensorProto): number {
  const ref = externalRef(t);
  if (ref) return ref.length ?? 0;
  return t.rawData.length + 4 * (t.floatData.length + t.int32Data.length) + 8 * (t.int64Data.length + t.doubleData.length + t.uint64Data.length);
}

/** An external tensor's bytes, read from its file. */
async function readExternal(ref: ExternalRef, name: string): Promise<Uint8Array> {
  const fh = await open(ref.file, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new ModelFileError(`tensor '${name}': cannot open its external data ${ref.file} (${err.code ?? err.message})`);
  });
  try {
    const size = (await fh.stat()).size;
    // Without a length the tensor runs to the end of the file, which must not end before it starts.
    if (ref.offset > size) {
      throw new ModelFileError(`tensor '${name}': its external data starts at offset ${ref.offset}, but ${ref.file} has ${size} bytes`);
    }
    const length = ref.length ?? size - ref.offset;
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(out, done, Math.min(COPY_CHUNK, length - done), ref.offset + done);
      if (bytesRead === 0) throw new ModelFileError(`tensor '${name}': ${ref.file} ends before offset ${ref.offset} + ${length}`);
      done += bytesRead;
    }
    return out;
  } finally {
    await fh.close();
  }
}

export type ExternalDataMode = 'auto' | 'always' | 'never';

export interface WrittenModel {
  readonly file: string;
  readonly bytes: number;
  /** The data file, when initializers went to one. */
  readonly dataFile?: string;
  readonly dataBytes: number;
}

/**
 * Writes `model` to `file`. Its tensors may be inline or external (absolute locations); `mode`
 * says where they go: 'never' inlines all (refused over 2 GiB), 'always' moves every initializer
 * of 1 KiB or more to `<file>_data`, 'auto' does that only when inlining would pass 2 GiB.
 * The model object is changed in place to what was written.
 */
export async function writeModelFile(model: ModelProto, file: string, mode: ExternalDataMode = 'auto'): Promise<WrittenModel> {
  const total = [...modelTensors(model)].reduce((s, t) => s + storedBytes(t), 0);
  const external = mode === 'always' || (mode === 'auto' && total > INLINE_LIMIT_BYTES);
  if (!external && total > INLINE_LIMIT_BYTES) {
    throw new ModelFileError(`${file}: ${(total / 2 ** 30).toFixed(2)} GiB of weights cannot be stored inline (protobuf's limit is 2 GiB); use external data`);
  }
  const initializers = new Set(allInitializers(model));
  let dataFile: string | undefined;
  let dataBytes = 0;
  // Both files are written beside their names and renamed at the end: the model's tensors may be
  // read from the very files being replaced (rewriting an export in place), and a failed write
  // leaves what was there.
  const partial = (name: string): string => `${name}.partial`;
  try {
    if (external) {
      dataFile = `${resolve(file)}_data`;
      const out = createWriteStream(partial(dataFile));
      const write = async (chunk: Uint8Array): Promise<void> => {
        if (!out.write(chunk)) await once(out, 'drain');
      };
      try {
        for (const t of initializers) {
          const ref = externalRef(t);
          const size = ref ? (ref.length ?? -1) : t.rawData.length;
          if (!ref && (t.rawData.length < EXTERNAL_MIN_BYTES || t.rawData.length === 0)) continue;
          const pad = (ALIGN - (dataBytes % ALIGN)) % ALIGN;
          if (pad) await write(new Uint8Array(pad));
          dataBytes += pad;
          const offset = dataBytes;
          const bytes = ref ? await readExternal(ref, t.name) : t.rawData;
          if (size >= 0 && bytes.length !== size) throw new ModelFileError(`tensor '${t.name}': read ${bytes.length} bytes, expected ${size}`);
          for (let at = 0; at < bytes.length; at += COPY_CHUNK) await write(bytes.subarray(at, Math.min(bytes.length, at + COPY_CHUNK)));
          dataBytes += bytes.length;
          const entry = (key: string, value: string) => create(StringStringEntryProtoSchema, { key, value });
          t.externalData = [entry('location', basename(dataFile)), entry('offset', String(offset)), entry('length', String(bytes.length))];
          t.dataLocation = TensorProto_DataLocation.EXTERNAL;
          t.rawData = new Uint8Array(0);
        }
      } finally {
        out.end();
        await finished(out);
      }
    }
    // Whatever is still external (attribute tensors; everything in 'never' mode) comes inline.
    for (const t of modelTensors(model)) {
      if (external && initializers.has(t)) continue;
      const ref = externalRef(t);
      if (!ref) continue;
      t.rawData = (await readExternal(ref, t.name)) as Uint8Array<ArrayBuffer>;
      t.externalData = [];
      t.dataLocation = TensorProto_DataLocation.DEFAULT;
    }
    const bytes = encodeModel(model);
    await writeFile(partial(file), bytes);
    if (dataFile) await rename(partial(dataFile), dataFile);
    await rename(partial(file), file);
    return { file, bytes: bytes.length, ...(dataFile ? { dataFile } : {}), dataBytes };
  } catch (error) {
    await rm(partial(file), { force: true });
    if (dataFile) await rm(partial(dataFile), { force: true });
    throw error;
  }
}

function* allInitializers(model: ModelProto): Generator<TensorProto> {
  if (model.graph) yield* model.graph.initializer;
}
