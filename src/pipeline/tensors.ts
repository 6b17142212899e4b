/**
 * Small tensor helpers for the pipeline: fp16 <-> fp32 bits (Node 20 has no Float16Array, so
 * ONNX Runtime hands fp16 tensors over as Uint16Array bits), dtype-following tensor builders,
 * and RawImage <-> planar NCHW float conversions.
 */
import ort from 'onnxruntime-node';
import { rawImage, type RawImage } from '../image/raw.ts';

// ---------------------------------------------------------------------------------------------
// fp16

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** One float32 → IEEE 754 half bits, round to nearest even; overflow → ±Infinity, NaN kept. */
export function toHalf(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the mantissa with its implicit bit, rounding to even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (rest > mid || (rest === mid && (half & 1)) ? half + 1 : half);
  }
  const half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (up to Infinity).
  return sign | (rest > 0x1000 || (rest === 0x1000 && (half & 1)) ? half + 1 : half);
}

/** Half bits → number (exact). */
export function fromHalf(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? Number.NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export function float32ToFloat16(data: Float32Array): Uint16Array {
  const out = new Uint16Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = toHalf(data[i]!);
  return out;
}

export function float16ToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = fromHalf(bits[i]!);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tensors that follow the graph's dtype

export type FloatType = 'float32' | 'float16' | 'float64';

/** A float tensor of the graph's float type from float32 data (converted at the edge). */
export function floatTensor(type: FloatType, data: Float32Array, dims: readonly number[]): ort.Tensor {
  switch (type) {
    case 'float32':
      return new ort.Tensor('float32', data, dims);
    case 'float16':
      return new ort.Tensor('float16', float32ToFloat16(data), dims);
    case 'float64':
      return new ort.Tensor('float64', Float64Array.from(data), dims);
  }
}

/** Float32 data of any float output (fp16 bits and fp64 converted; float32 returned as is). */
export function toFloat32(tensor: ort.Tensor): Float32Array {
  const data = tensor.data;
  if (tensor.type === 'float32') return data as Float32Array;
  if (tensor.type === 'float16') {
    // Node builds without Float16Array give Uint16Array bits; newer ones may give Float16Array.
    return data instanceof Uint16Array ? float16ToFloat32(data) : Float32Array.from(data as ArrayLike<number>);
  }
  if (tensor.type === 'float64') return Float32Array.from(data as Float64Array);
  throw new TypeError(`expected a float tensor, got ${tensor.type}`);
}

/** A numeric tensor of a scalar-ish input (timestep, conditioning scale) in the graph's type. */
export function numberTensor(type: string, values: readonly number[], dims: readonly number[]): ort.Tensor {
  switch (type) {
    case 'float32':
      return new ort.Tensor('float32', Float32Array.from(values), dims);
    case 'float64':
      return new ort.Tensor('float64', Float64Array.from(values), dims);
    case 'float16':
      return new ort.Tensor('float16', Uint16Array.from(values, toHalf), dims);
    case 'int64':
      return new ort.Tensor('int64', BigInt64Array.from(values, (v) => BigInt(Math.round(v))), dims);
    case 'int32':
      return new ort.Tensor('int32', Int32Array.from(values, Math.round), dims);
    default:
      throw new TypeError(`unsupported tensor type ${type}`);
  }
}

/** input_ids in the graph's integer type (int32 in optimum exports, int64 in some others). */
export function idsTensor(type: string, ids: Int32Array, dims: readonly number[]): ort.Tensor {
  if (type === 'int32') return new ort.Tensor('int32', ids, dims);
  if (type === 'int64') return new ort.Tensor('int64', BigInt64Array.from(ids, (v) => BigInt(v)), dims);
  throw new TypeError(`input_ids must be int32 or int64, the graph declares ${type}`);
}

export const product = (dims: readonly number[]): number => dims.reduce((a, b) => a * b, 1);

// ---------------------------------------------------------------------------------------------
// Images

/**
 * RawImage → planar RGB floats [3,H,W] at `offset` in `out`, each channel mapped by
 * value/255 * scale + bias (e.g. [0,1]: scale 1, bias 0; [-1,1]: scale 2, bias -1). A 1-channel
 * image fills all three planes; alpha is dropped.
 *
 * These run on every image of every job (megapixels each), so they use a 256-entry table and
 * one tight loop per layout instead of per-element arithmetic and branches.
 */
export function packRgbPlanar(image: RawImage, out: Float32Array, offset = 0, scale = 1, bias = 0): void {
  const { width, height, channels, data } = image;
  const plane = width * height;
  if (out.length < offset + 3 * plane) throw new RangeError('packRgbPlanar: output too small');
  const table = byteTable(scale, bias);
  if (channels === 1) {
    for (let p = 0; p < plane; p++) out[offset + p] = table[data[p]!]!;
    out.copyWithin(offset + plane, offset, offset + plane);
    out.copyWithin(offset + 2 * plane, offset, offset + plane);
    return;
  }
  const r = offset;
  const g = offset + plane;
  const b = offset + 2 * plane;
  for (let p = 0, s = 0; p < plane; p++, s += channels) {
    out[r + p] = table[data[s]!]!;
    out[g + p] = table[data[s + 1]!]!;
    out[b + p] = table[data[s + 2]!]!;
  }
}

/** RawImage → planar RGB bytes [3,H,W] at `offset` in `out` (a grey image fills all three planes). */
export function packRgbPlanarBytes(image: RawImage, out: Uint8Array, offset = 0): void {
  const { width, height, channels, data } = image;
  const plane = width * height;
  if (out.length < offset + 3 * plane) throw new RangeError('packRgbPlanarBytes: output too small');
  if (channels === 1) {
    for (let c = 0; c < 3; c++) out.set(data.subarray(0, plane), offset + c * plane);
    return;
  }
  for (let p = 0, s = 0; p < plane; p++, s += channels) {
    out[offset + p] = data[s]!;
    out[offset + plane + p] = data[s + 1]!;
    out[offset + 2 * plane + p] = data[s + 2]!;
  }
}

function byteTable(scale: number, bias: number): Float32Array {
  const table = new Float32Array(256);
  const k = scale / 255;
  for (let v = 0; v < 256; v++) table[v] = v * k + bias;
  return table;
}

/** Planar RGB floats [3,H,W] in [lo, hi] at `offset` → interleaved RGB uint8 (rounded, clamped; NaN → 0). */
export function unpackRgbPlanar(src: Float32Array, offset: number, width: number, height: number, lo = -1, hi = 1): RawImage {
  const plane = width * height;
  const buffer = new ArrayBuffer(plane * 3);
  // Uint8ClampedArray stores clamp and round (half to even) natively: no Math.round per value.
  const out = new Uint8ClampedArray(buffer);
  const k = 255 / (hi - lo);
  const c = -lo * k;
  const r = offset;
  const g = offset + plane;
  const b = offset + 2 * plane;
  for (let p = 0, o = 0; p < plane; p++, o += 3) {
    out[o] = src[r + p]! * k + c;
    out[o + 1] = src[g + p]! * k + c;
    out[o + 2] = src[b + p]! * k + c;
  }
  return rawImage(new Uint8Array(buffer), width, height, 3);
}

/** Interleaved RGB uint8 → NHWC floats in [0,1] at `offset` (the safety checker's `images`). */
export function packRgbInterleaved(image: RawImage, out: Float32Array, offset = 0): void {
  const { width, height, channels, data } = image;
  const table = byteTable(1, 0);
  const n = width * height;
  for (let p = 0, s = 0, o = offset; p < n; p++, s += channels, o += 3) {
    const gray = channels === 1;
    out[o] = table[data[s]!]!;
    out[o + 1] = table[data[gray ? s : s + 1]!]!;
    out[o + 2] = table[data[gray ? s : s + 2]!]!;
  }
}
