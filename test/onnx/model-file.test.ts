/**
 * External data that does not hold what a model says it does: rewriting such a model stops with
 * a ModelFileError naming the tensor, the file and what is wrong, and leaves nothing behind.
 */
import { mkdir, mkdtemp, readdir, rm, stat, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildControlNet } from '../../scripts/demo-models/unet.ts';
import { ModelFileError, readModelFile, writeModelFile } from '../../src/onnx/model-file.ts';
import type { ModelProto, TensorProto } from '../../src/onnx/proto.ts';
import { copyModel } from '../helpers/onnx-variants.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-model-file-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The demo ControlNet written with external data into its own folder; `cut` shortens the data file. */
async function stored(name: string, cut?: (lastOffset: number) => number): Promise<{ model: ModelProto; last: TensorProto; dataFile: string; out: string }> {
  const folder = join(dir, name);
  await mkdir(folder);
  const written = await writeModelFile(copyModel(buildControlNet()), join(folder, 'model.onnx'), 'always');
  const model = await readModelFile(join(folder, 'model.onnx'));
  const last = model.graph!.initializer.reduce((a, b) => (offsetOf(b) > offsetOf(a) ? b : a));
  if (cut) await truncate(written.dataFile!, cut(offsetOf(last)));
  return { model, last, dataFile: written.dataFile!, out: join(folder, 'rewritten.onnx') };
}

const offsetOf = (t: TensorProto): number => Number(t.externalData.find((e) => e.key === 'offset')?.value ?? -1);
const entry = (t: TensorProto, key: string) => t.externalData.find((e) => e.key === key)!;
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('model files with external data', () => {
  it('a tensor whose offset is past the end of its data file (no length given) is named with the file and its size', async () => {
    const { model, last, dataFile, out } = await stored('past-end');
    const size = (await stat(dataFile)).size;
    entry(last, 'offset').value = String(size + 4096);
    last.externalData = last.externalData.filter((e) => e.key !== 'length');
    const error = await writeModelFile(model, out, 'always').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelFileError);
    expect((error as Error).message).toBe(`tensor '${last.name}': its external data starts at offset ${size + 4096}, but ${dataFile} has ${size} bytes`);
    // Nothing half-written is left beside the source.
    expect((await readdir(join(dir, 'past-end'))).sort()).toEqual(['model.onnx', 'model.onnx_data']);
  });

  it('a tensor whose length runs past the end of its data file is named with the file', async () => {
    const { model, last, dataFile, out } = await stored('short', (lastOffset) => lastOffset + 10);
    await expect(writeModelFile(model, out, 'always')).rejects.toThrow(new RegExp(`^tensor '${last.name}': ${escaped(dataFile)} ends before offset ${offsetOf(last)} \\+ \\d+$`));
  });

  it('an offset or length that is not a byte count is refused naming the tensor and the value', async () => {
    const { model, last, out } = await stored('bad-count');
    entry(last, 'offset').value = '-4096';
    await expect(writeModelFile(model, out, 'always')).rejects.toThrow(`tensor '${last.name}': its external data's offset '-4096' is not a byte count`);
    entry(last, 'offset').value = '0';
    entry(last, 'length').value = '12.5';
    await expect(writeModelFile(model, out, 'always')).rejects.toThrow(`tensor '${last.name}': its external data's length '12.5' is not a byte count`);
  });
});
