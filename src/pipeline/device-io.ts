/**
 * Keeping tensors on the device between runs, where the provider allows it (WebGPU: ONNX
 * Runtime can leave an output in a GPU buffer and take it as the next run's input; the CUDA
 * provider in Node always copies outputs to host memory).
 *
 * Three tiny graphs of our own, on the same device as the models (ONNX Runtime's WebGPU
 * sessions share one device):
 *   upload     Identity, output kept on the device: a host tensor goes up once (text rows and
 *              the control image, once per sampling loop)
 *   download   Identity, output in host memory: the only way to read a device tensor here (the
 *              Node binding's Tensor.getData() on a 'gpu-buffer' tensor aborts the process)
 *   step       the sampler step as a linear map (Scheduler.linearStep): the new latents, the x0
 *              a multistep solver keeps, and the next model input, all left on the device
 * so the denoising loop moves only a few scalars per step (plus the noise a stochastic sampler
 * injects, drawn from the job's seeded streams on the host).
 *
 * Rule: device tensors go only into sessions of the same device (a 'gpu-buffer' tensor fed to a
 * CPU session reads garbage or crashes).
 */
import ort from 'onnxruntime-node';
import { encodeModel, newModel, node, valueInfo, type ElementType } from '../onnx/proto.ts';
import { create } from '@bufbuild/protobuf';
import { GraphProtoSchema, OperatorSetIdProtoSchema } from 'onnx-buf';
import type { LinearStep } from './schedulers/index.ts';
import { toFloat32 } from './tensors.ts';
import { tensor as initializer } from '../onnx/proto.ts';

function model(name: string, nodes: ReturnType<typeof node>[], inputs: ReturnType<typeof valueInfo>[], outputs: ReturnType<typeof valueInfo>[], initializers: ReturnType<typeof initializer>[] = []): Uint8Array {
  const graph = create(GraphProtoSchema, { name, node: nodes, input: inputs, output: outputs, initializer: initializers });
  return encodeModel(newModel({ irVersion: 8n, producerName: 'qr-art device-io', graph, opsetImport: [create(OperatorSetIdProtoSchema, { domain: '', version: 17n })] }));
}

const identity = (type: ElementType): Uint8Array => model(`identity_${type}`, [node('Identity', ['x'], ['y'])], [valueInfo('x', type, undefined)], [valueInfo('y', type, undefined)]);

/**
 * x' = c0·x + c1·m + c2·p + c3·z;  p' = c4·x + c5·m;  model_in' = c6·x'
 * (p and z may be one-element tensors that broadcast: the first step has no kept x0, a
 * deterministic step no noise).
 */
function stepGraph(): Uint8Array {
  const at = (i: number) => `c${i}`;
  const nodes = [0, 1, 2, 3, 4, 5, 6].map((i) => node('Gather', ['c', `i${i}`], [at(i)], { axis: 0 }));
  const idx = [0, 1, 2, 3, 4, 5, 6].map((i) => initializer(`i${i}`, 'int64', [], [i]));
  const mul = (a: string, b: string, out: string) => node('Mul', [a, b], [out]);
  const add = (a: string, b: string, out: string) => node('Add', [a, b], [out]);
  nodes.push(
    mul('x', at(0), 'tx'),
    mul('m', at(1), 'tm'),
    mul('p', at(2), 'tp'),
    mul('z', at(3), 'tz'),
    add('tx', 'tm', 's1'),
    add('s1', 'tp', 's2'),
    add('s2', 'tz', 'x_next'),
    mul('x', at(4), 'kx'),
    mul('m', at(5), 'km'),
    add('kx', 'km', 'kept'),
    mul('x_next', at(6), 'model_in'),
  );
  const f = (n: string) => valueInfo(n, 'float32', undefined);
  return model('sampler_step', nodes, [f('x'), f('m'), f('p'), f('z'), valueInfo('c', 'float32', [8])], [f('x_next'), f('kept'), f('model_in')], idx);
}

export interface DeviceStep {
  readonly x: ort.Tensor;
  readonly kept: ort.Tensor;
  readonly modelIn: ort.Tensor;
}

export class DeviceIo {
  private constructor(
    private readonly up: Record<'float32' | 'uint8', ort.InferenceSession>,
    private readonly down: Record<'float32' | 'float16', ort.InferenceSession>,
    private readonly stepper: ort.InferenceSession,
    private readonly zero: ort.Tensor,
  ) {}

  /** The helper sessions on `providers` (the models' own device). */
  static async create(providers: ort.InferenceSession.ExecutionProviderConfig[]): Promise<DeviceIo> {
    const on = (bytes: Uint8Array, location: 'gpu-buffer' | 'cpu') =>
      ort.InferenceSession.create(bytes, { executionProviders: providers, preferredOutputLocation: location, logSeverityLevel: 3 });
    const up = { float32: await on(identity('float32'), 'gpu-buffer'), uint8: await on(identity('uint8'), 'gpu-buffer') };
    // An fp16 export's noise_pred is float16 on the device: read back as it is, widened on the host.
    const down = { float32: await on(identity('float32'), 'cpu'), float16: await on(identity('float16'), 'cpu') };
    const stepper = await on(stepGraph(), 'gpu-buffer');
    return new DeviceIo(up, down, stepper, new ort.Tensor('float32', new Float32Array(1), [1]));
  }

  /** A host tensor (float32 or uint8) copied to the device. */
  async upload(t: ort.Tensor): Promise<ort.Tensor> {
    if (t.type !== 'float32' && t.type !== 'uint8') throw new TypeError(`upload: ${t.type} tensors are not supported`);
    return (await this.up[t.type].run({ x: t })).y!;
  }

  /** A float32 or float16 device tensor read back into host memory, as float32. */
  async download(t: ort.Tensor): Promise<Float32Array> {
    if (t.location === 'cpu') return toFloat32(t);
    if (t.type !== 'float32' && t.type !== 'float16') throw new TypeError(`download: ${t.type} tensors are not supported`);
    return toFloat32((await this.down[t.type].run({ x: t })).y!);
  }

  /**
   * One sampler step on the device. `kept` is the previous step's kept x0 (undefined on a first
   * step), `noise` the host noise when the step injects any; `nextScale` scales the next model input.
   */
  async step(x: ort.Tensor, model: ort.Tensor, kept: ort.Tensor | undefined, noise: Float32Array | undefined, c: LinearStep, nextScale: number): Promise<DeviceStep> {
    const coef = new ort.Tensor('float32', Float32Array.of(c.x, c.model, c.prev, c.noise, c.keepX, c.keepModel, nextScale, 0), [8]);
    const out = await this.stepper.run({
      x,
      m: model,
      p: kept ?? this.zero,
      z: noise ? new ort.Tensor('float32', noise, [...x.dims]) : this.zero,
      c: coef,
    });
    return { x: out.x_next!, kept: out.kept!, modelIn: out.model_in! };
  }

  async release(): Promise<void> {
    for (const s of [this.up.float32, this.up.uint8, this.down.float32, this.down.float16, this.stepper]) await s.release();
  }
}
