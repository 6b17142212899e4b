/**
 * `models fuse` on the demo pair and on rewrites of it shaped like other exporters' graphs:
 * the fused graph must give the pair's numbers (one call, CFG inside), bridge fp16/fp32 at the
 * seam, scale a ControlNet that has no conditioning_scale input, survive external data, and
 * refuse, naming the file, what it cannot fuse.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildControlNet, buildDenoiser, buildUnet } from '../../scripts/demo-models/unet.ts';
import { FuseError, fuseControlNet } from '../../src/onnx/fuse.ts';
import { readModelFile, writeModelFile } from '../../src/onnx/model-file.ts';
import { encodeModel, node, type ModelProto } from '../../src/onnx/proto.ts';
import { create } from '@bufbuild/protobuf';
import { FunctionProtoSchema } from 'onnx-buf';
import { float32ToFloat16 } from '../../src/pipeline/tensors.ts';
import { copyModel, withExtraInput, withHalfBody, withHalfIo, withOpset, withoutScaleInput } from '../helpers/onnx-variants.ts';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '../../bin/qr-art.js');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'qrart-fuse-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const fuse = (cn: ModelProto, unet: ModelProto): ModelProto => fuseControlNet({ model: cn, file: 'cn.onnx' }, { model: unet, file: 'unet.onnx' });
const session = (bytes: Uint8Array | string) => ort.InferenceSession.create(bytes as Uint8Array, { logSeverityLevel: 3 });

// A small step: 2 images, 12×12 latents, [uncond, cond] text rows.
const B = 2;
const h = 12;
const w = 12;
const sample = Float32Array.from({ length: B * 4 * h * w }, (_, i) => Math.sin(i * 0.7));
const text = Float32Array.from({ length: 2 * 77 * 768 }, (_, i) => Math.cos(i * 0.37));
const control = Uint8Array.from({ length: 3 * 64 * h * w }, (_, i) => (i * 7) % 256);

/** The fused graph's guided prediction for the step above. */
async function fusedStep(model: Uint8Array | string, opts: { timestep?: ort.Tensor; rows?: 1 | 2; guidance?: number; scale?: number } = {}): Promise<Float32Array> {
  const s = await session(model);
  const rows = opts.rows ?? 2;
  const out = await s.run({
    sample: new ort.Tensor('float32', sample, [B, 4, h, w]),
    timestep: opts.timestep ?? new ort.Tensor('float32', [500], [1]),
    encoder_hidden_states: new ort.Tensor('float32', text.subarray(text.length - rows * 77 * 768), [rows, 77, 768]),
    controlnet_cond: new ort.Tensor('uint8', control, [1, 3, 8 * h, 8 * w]),
    conditioning_scale: new ort.Tensor('float32', [opts.scale ?? 1.3], []),
    guidance_scale: new ort.Tensor('float32', [opts.guidance ?? 7.5], []),
  });
  await s.release();
  return out.noise_pred!.data as Float32Array;
}

/** The same step through the separate pair, CFG in float32 arithmetic as the graph does it. */
async function pairStep(cnBytes: Uint8Array, unetBytes: Uint8Array, opts: { half?: boolean; rows?: 1 | 2; guidance?: number } = {}): Promise<Float32Array> {
  const [cn, unet] = [await session(cnBytes), await session(unetBytes)];
  const rows = opts.rows ?? 2;
  const N = rows * B;
  const sN = new Float32Array(N * 4 * h * w);
  for (let r = 0; r < rows; r++) sN.set(sample, r * B * 4 * h * w);
  const eN = new Float32Array(N * 77 * 768);
  const rowText = text.subarray(text.length - rows * 77 * 768);
  for (let r = 0; r < N; r++) eN.set(rowText.subarray(Math.floor(r / B) * 77 * 768, (Math.floor(r / B) + 1) * 77 * 768), r * 77 * 768);
  const cF = new Float32Array(N * control.length);
  for (let r = 0; r < N; r++) for (let i = 0; i < control.length; i++) cF[r * control.length + i] = control[i]! / 255;
  const f32 = (data: Float32Array, dims: number[]) => new ort.Tensor('float32', data, dims);
  const ts = f32(new Float32Array(N).fill(500), [N]);
  const res = await cn.run({ sample: f32(sN, [N, 4, h, w]), timestep: ts, encoder_hidden_states: f32(eN, [N, 77, 768]), controlnet_cond: f32(cF, [N, 3, 8 * h, 8 * w]), conditioning_scale: new ort.Tensor('float64', [1.3], []) });
  const half = (t: ort.Tensor) => new ort.Tensor('float16', float32ToFloat16(t.data as Float32Array), t.dims);
  const feeds: Record<string, ort.Tensor> = { sample: f32(sN, [N, 4, h, w]), timestep: ts, encoder_hidden_states: f32(eN, [N, 77, 768]), ...res };
  if (opts.half) for (const k of Object.keys(feeds)) feeds[k] = half(feeds[k]!);
  const out = (await unet.run(feeds)).out_sample!;
  await cn.release();
  await unet.release();
  const pred = out.type === 'float16' ? Float32Array.from(out.data as Uint16Array, (b) => halfToFloat(b)) : (out.data as Float32Array);
  if (rows === 1) return pred;
  const f = Math.fround;
  const g = f(opts.guidance ?? 7.5);
  const n = B * 4 * h * w;
  return Float32Array.from({ length: n }, (_, k) => f(pred[k]! + f(g * f(pred[n + k]! - pred[k]!))));
}

function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  return e === 0 ? sign * m * 2 ** -24 : e === 31 ? (m ? NaN : sign * Infinity) : sign * (1 + m / 1024) * 2 ** (e - 15);
}

const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

describe('models fuse', () => {
  it('the shipped demo denoiser is the demo pair fused (rebuilds byte-identical)', async () => {
    const shipped = await readFile(join(import.meta.dirname, '../../models/demo/denoiser/model.onnx'));
    expect(Buffer.compare(shipped, Buffer.from(buildDenoiser()))).toBe(0);
  });

  it('one call gives the pair’s guided prediction bit for bit, with guidance and without (one text row)', async () => {
    const fused = encodeModel(fuse(copyModel(buildControlNet()), copyModel(buildUnet())));
    expect(await fusedStep(fused)).toEqual(await pairStep(buildControlNet(), buildUnet()));
    expect(await fusedStep(fused, { rows: 1 })).toEqual(await pairStep(buildControlNet(), buildUnet(), { rows: 1 }));
    // Scale 0 is "no control": the same as the UNet with zero residuals, i.e. a different prediction.
    expect(maxDiff(await fusedStep(fused, { scale: 0 }), await fusedStep(fused))).toBeGreaterThan(1e-3);
  });

  it('reads and writes external data: a pair stored that way fuses, and a result forced to external data runs the same', async () => {
    for (const [name, build] of [['cn', buildControlNet], ['unet', buildUnet]] as const) {
      const written = await writeModelFile(copyModel(build()), join(dir, `${name}.onnx`), 'always');
      expect(written.dataFile).toBe(join(dir, `${name}.onnx_data`));
    }
    const fused = fuseControlNet({ model: await readModelFile(join(dir, 'cn.onnx')), file: 'cn.onnx' }, { model: await readModelFile(join(dir, 'unet.onnx')), file: 'unet.onnx' });
    const out = join(dir, 'fused', 'model.onnx');
    await mkdir(join(dir, 'fused'));
    const written = await writeModelFile(fused, out, 'always');
    expect((await stat(written.dataFile!)).size).toBeGreaterThan(written.bytes);
    // Offsets are 4 KiB aligned so ONNX Runtime can map the weights.
    const offsets = fused.graph!.initializer.flatMap((t) => t.externalData.filter((e) => e.key === 'offset').map((e) => Number(e.value)));
    expect(offsets.length).toBeGreaterThan(10);
    expect(offsets.every((o) => o % 4096 === 0)).toBe(true);
    expect(await fusedStep(out)).toEqual(await pairStep(buildControlNet(), buildUnet()));
  });

  it('bridges fp16 and fp32 at the seam with Cast nodes inside the graph, and scales a ControlNet that has no conditioning_scale', async () => {
    // OnnxStack-style ControlNet (fp32 IO, no scale input) with an fp16-IO UNet (diffusers/optimum --fp16).
    const halfUnet = encodeModel(withHalfIo(copyModel(buildUnet())));
    const fused = fuse(withoutScaleInput(copyModel(buildControlNet())), copyModel(halfUnet));
    const seamCasts = fused.graph!.node.filter((n) => n.opType === 'Cast' && n.name.startsWith('fuse/seam/') && n.input[0]!.startsWith('fuse/seam/scaled'));
    expect(seamCasts).toHaveLength(13);
    const scaled = fused.graph!.node.filter((n) => n.opType === 'Mul' && n.input[1] === 'conditioning_scale');
    expect(scaled).toHaveLength(13);
    // The fused input takes the UNet's timestep dtype.
    const bytes = encodeModel(fused);
    const s = await session(bytes);
    expect(s.inputMetadata.find((m) => m.name === 'timestep')).toMatchObject({ type: 'float16' });
    await s.release();
    const timestep = new ort.Tensor('float16', float32ToFloat16(Float32Array.of(500)), [1]);
    const got = await fusedStep(bytes, { timestep });
    // The pair with the same fp16 UNet: residuals rounded to fp16 in JavaScript instead of by a Cast.
    const want = await pairStep(buildControlNet(), halfUnet, { half: true });
    expect(maxDiff(got, want)).toBeLessThan(2e-3);
  });

  it('a float32-IO ControlNet and an fp16-IO UNet (refused as a pair at start) fuse into a graph close to the all-fp32 pair', async () => {
    const fused = fuse(withHalfBody(copyModel(buildControlNet())), withHalfIo(copyModel(buildUnet())));
    // The seam: 13 Casts (float32 residuals → the UNet's float16), inside the graph.
    const seamCasts = fused.graph!.node.filter((n) => n.opType === 'Cast' && n.name.startsWith('fuse/seam/'));
    expect(seamCasts).toHaveLength(13);
    const bytes = encodeModel(fused);
    const timestep = new ort.Tensor('float16', float32ToFloat16(Float32Array.of(500)), [1]);
    const scale = (await pairStep(buildControlNet(), buildUnet())).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    // One text row: each value within fp16's rounding of the UNet's inputs and output (~0.3 % of the range here).
    expect(maxDiff(await fusedStep(bytes, { timestep, rows: 1 }), await pairStep(buildControlNet(), buildUnet(), { rows: 1 }))).toBeLessThan(5e-3 * scale);
    // With guidance 7.5 that difference is multiplied by at most the guidance.
    expect(maxDiff(await fusedStep(bytes, { timestep }), await pairStep(buildControlNet(), buildUnet()))).toBeLessThan(7.5 * 5e-3 * scale);
  });

  it('refuses what it cannot fuse, naming the file and the problem', () => {
    expect(() => fuse(copyModel(buildControlNet()), withExtraInput(copyModel(buildUnet()), 'text_embeds'))).toThrow(/unet\.onnx: input 'text_embeds' of the UNet would not be fed/);
    expect(() => fuse(copyModel(buildUnet()), copyModel(buildUnet()))).toThrow(FuseError);
    expect(() => fuse(copyModel(buildUnet()), copyModel(buildUnet()))).toThrow(/cn\.onnx: the ControlNet needs an input 'controlnet_cond'/);
    expect(() => fuse(withOpset(copyModel(buildControlNet()), 16), copyModel(buildUnet()))).toThrow(/different versions of opset 'ai\.onnx': 16 in cn\.onnx, 17 in unet\.onnx/);
    expect(() => fuse(withOpset(copyModel(buildControlNet()), 13), withOpset(copyModel(buildUnet()), 13))).toThrow(/cn\.onnx and unet\.onnx use opset 13 of 'ai\.onnx'; fusing needs 14 or later/);
    expect(() => fuse(withOpset(copyModel(buildControlNet()), 14), withOpset(copyModel(buildUnet()), 14))).not.toThrow();
    // A model-local function both exports carry (torch writes the same helper into each) is kept
    // once; one name defined two ways is refused.
    const gelu = (op: string) => create(FunctionProtoSchema, { name: 'Gelu', domain: 'pkg.torch', input: ['x'], output: ['y'], node: [node(op, ['x'], ['y'])] });
    const withFunction = (model: ModelProto, op: string) => (model.functions.push(gelu(op)), model);
    expect(fuse(withFunction(copyModel(buildControlNet()), 'Identity'), withFunction(copyModel(buildUnet()), 'Identity')).functions).toHaveLength(1);
    expect(() => fuse(withFunction(copyModel(buildControlNet()), 'Identity'), withFunction(copyModel(buildUnet()), 'Neg'))).toThrow(
      /both graphs define the function pkg\.torch\.Gelu, differently/,
    );
    expect(() =>
      fuseControlNet({ model: copyModel(buildControlNet()), file: 'cn.onnx', names: { inputs: { controlnet_cond: 'image' } } }, { model: copyModel(buildUnet()), file: 'unet.onnx' }),
    ).toThrow(/cn\.onnx: the ControlNet needs an input 'image' \(role controlnet_cond\)/);
  });

  it('qr-art models fuse writes, checks and explains; bad arguments exit 2, a bad pair exits 1', async () => {
    const out = join(dir, 'cli', 'denoiser', 'model.onnx');
    const ok = await run(process.execPath, [BIN, 'models', 'fuse', '--controlnet', 'models/demo/controlnet/model.onnx', '--unet', 'models/demo/unet/model.onnx', '--out', out, '--external-data', 'always']);
    expect(ok.stdout).toContain(`wrote ${out}`);
    expect(ok.stdout).toContain('model.onnx_data');
    expect(ok.stdout).toContain('checked: ONNX Runtime opens it and it fits the denoiser role');
    expect(await fusedStep(out)).toEqual(await pairStep(buildControlNet(), buildUnet()));
    const usage = await run(process.execPath, [BIN, 'models', 'fuse', '--out', out, '--external-data', 'sometimes']).catch((e: { code: number; stderr: string }) => e);
    expect(usage).toMatchObject({ code: 2 });
    expect((usage as { stderr: string }).stderr).toContain("--external-data must be auto, always or never, got 'sometimes'");
    expect((usage as { stderr: string }).stderr).toContain('give --controlnet and --unet, or --manifest and --model');
    const bad = await run(process.execPath, [BIN, 'models', 'fuse', '--controlnet', 'models/demo/unet/model.onnx', '--unet', 'models/demo/unet/model.onnx', '--out', out]).catch((e: { code: number; stderr: string }) => e);
    expect(bad).toMatchObject({ code: 1 });
    expect((bad as { stderr: string }).stderr).toMatch(/models\/demo\/unet\/model\.onnx: the ControlNet needs an input 'controlnet_cond'/);
  }, 60_000);

  it('a checking folder left on this host by a killed run (its pid gone) is removed by the next; a live run\'s, or another host\'s, is left alone', async () => {
    const swept = join(dir, 'swept');
    await mkdir(swept, { recursive: true });
    const gone = spawnSync('true').pid; // exited and reaped: no process has this pid now
    const host = hostname().replace(/[^A-Za-z0-9.]/g, '_');
    const abandoned = `.model.onnx.checking-${host}-${gone}-Ab12Cd`;
    const live = `.model.onnx.checking-${host}-${process.pid}-Ef34Gh`;
    // A container sharing the volume: its pids are not this host's to judge.
    const elsewhere = `.model.onnx.checking-another_container-${gone}-Ij56Kl`;
    for (const folder of [abandoned, live, elsewhere]) {
      await mkdir(join(swept, folder));
      await writeFile(join(swept, folder, 'model.onnx_data.partial'), 'half a model');
    }
    await run(process.execPath, [BIN, 'models', 'fuse', '--controlnet', 'models/demo/controlnet/model.onnx', '--unet', 'models/demo/unet/model.onnx', '--out', join(swept, 'model.onnx')]);
    expect((await readdir(swept)).sort()).toEqual([elsewhere, live, 'model.onnx'].sort());
  }, 60_000);

  it('a write the system cuts short (a full disk; here a file-size limit) is one line, and leaves nothing beside --out', async () => {
    const out = join(dir, 'too-big', 'model.onnx');
    // ulimit -f 64 (KiB) with SIGXFSZ caught: the write fails with EFBIG, as one on a full disk fails with ENOSPC.
    const command = `ulimit -f 64; exec "${process.execPath}" --import 'data:text/javascript,process.on("SIGXFSZ",()=>{})' "${BIN}" models fuse --controlnet models/demo/controlnet/model.onnx --unet models/demo/unet/model.onnx --out "${out}"`;
    const cut = await run('bash', ['-c', command]).catch((e: { code: number; stderr: string }) => e);
    expect(cut).toMatchObject({ code: 1 });
    expect((cut as { stderr: string }).stderr.trim()).toBe('cannot write: the file grew past what this system allows (EFBIG)');
    expect(await readdir(join(dir, 'too-big'))).toEqual([]);
  }, 60_000);

  it('Ctrl-C while the result is written or checked removes its checking folder, and ends as the signal does', async () => {
    const out = join(dir, 'interrupted', 'model.onnx');
    // The check never ends: the process is interrupted inside it, as a long check of a real UNet would be.
    const script = join(dir, 'interrupt.mts');
    await writeFile(
      script,
      `import { writeCheckedModel } from ${JSON.stringify(join(import.meta.dirname, '../../src/cli/checked-model-write.ts'))};
import { readModelFile } from ${JSON.stringify(join(import.meta.dirname, '../../src/onnx/model-file.ts'))};
const model = await readModelFile('models/demo/controlnet/model.onnx');
await writeCheckedModel(model, ${JSON.stringify(out)}, 'always', () => { console.log('checking'); return new Promise(() => setInterval(() => undefined, 1000)); });
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => String(chunk).includes('checking') && resolve());
      child.once('exit', (code) => reject(new Error(`the script ended (${code}) before its check`)));
    });
    expect((await readdir(join(dir, 'interrupted'))).filter((name) => name.startsWith('.model.onnx.checking-'))).toHaveLength(1);
    child.kill('SIGINT');
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
    expect([code, signal]).toEqual([null, 'SIGINT']);
    expect(await readdir(join(dir, 'interrupted'))).toEqual([]);
  }, 60_000);

  it('qr-art models fuse leaves the model at --out as it was when ONNX Runtime cannot open the result, and refuses a directory', async () => {
    const out = join(dir, 'kept', 'model.onnx');
    await run(process.execPath, [BIN, 'models', 'fuse', '--controlnet', 'models/demo/controlnet/model.onnx', '--unet', 'models/demo/unet/model.onnx', '--out', out, '--external-data', 'always']);
    const before = { model: await readFile(out), data: await readFile(`${out}_data`) };
    // A pair that fuses (opset 14 or later on both) into a graph this ONNX Runtime refuses to load.
    const unreleased = join(dir, 'opset-99');
    await mkdir(unreleased, { recursive: true });
    await writeModelFile(withOpset(copyModel(buildControlNet()), 99), join(unreleased, 'cn.onnx'), 'never');
    await writeModelFile(withOpset(copyModel(buildUnet()), 99), join(unreleased, 'unet.onnx'), 'never');
    const refused = await run(process.execPath, [BIN, 'models', 'fuse', '--controlnet', join(unreleased, 'cn.onnx'), '--unet', join(unreleased, 'unet.onnx'), '--out', out, '--external-data', 'always']).catch(
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    expect(refused).toMatchObject({ code: 1 });
    const { stdout, stderr } = refused as { stdout: string; stderr: string };
    expect(stderr).toContain(`${out}: ONNX Runtime cannot open the result`);
    expect(stderr).toContain(`(nothing was written: ${out} is as it was)`);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stdout).not.toContain('wrote');
    expect((await readFile(out)).equals(before.model)).toBe(true);
    expect((await readFile(`${out}_data`)).equals(before.data)).toBe(true);
    expect(await readdir(join(dir, 'kept'))).toEqual(['model.onnx', 'model.onnx_data']);

    const folder = await run(process.execPath, [BIN, 'models', 'fuse', '--controlnet', 'models/demo/controlnet/model.onnx', '--unet', 'models/demo/unet/model.onnx', '--out', join(dir, 'kept')]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(folder).toMatchObject({ code: 1 });
    expect((folder as { stderr: string }).stderr.trim()).toBe(`--out ${join(dir, 'kept')} is a directory: give the model file's path (e.g. ${join(dir, 'kept', 'model.onnx')})`);
  }, 60_000);
});
