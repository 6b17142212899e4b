/**
 * Execution providers: which device the ONNX sessions run on, the session options for it, and
 * what a failed run says about the device.
 *
 * The rule is to fail loudly: a worker asked for CUDA or WebGPU that cannot create a session on
 * it for every graph does not start (the message names the graph and the cause). Falling back to
 * the CPU happens only when the operator asked for it (`cuda,cpu`, `webgpu,cpu`), and then for the
 * whole worker, with a warning.
 */
import type ort from 'onnxruntime-node';

export type DeviceName = 'cpu' | 'cuda' | 'webgpu';

export type ExecutionProvider =
  | { readonly provider: 'cpu' }
  | { readonly provider: 'cuda'; readonly deviceId?: number; readonly cpuFallback?: boolean }
  | { readonly provider: 'webgpu'; readonly cpuFallback?: boolean };

export const EXECUTION_PROVIDER_VALUES = ['cpu', 'cuda', 'cuda,cpu', 'webgpu', 'webgpu,cpu'] as const;
export type ExecutionProviderValue = (typeof EXECUTION_PROVIDER_VALUES)[number];

/** EXECUTION_PROVIDER's value (validated by the config schema) as a provider. */
export function parseExecutionProvider(value: ExecutionProviderValue, cudaDeviceId = 0): ExecutionProvider {
  const [device, fallback] = value.split(',') as [DeviceName, string | undefined];
  const cpuFallback = fallback === 'cpu';
  if (device === 'cuda') return { provider: 'cuda', deviceId: cudaDeviceId, cpuFallback };
  if (device === 'webgpu') return { provider: 'webgpu', cpuFallback };
  return { provider: 'cpu' };
}

/** True for the providers whose outputs can stay on the device between runs (ORT's gpu-buffer location). */
export const keepsTensorsOnDevice = (p: ExecutionProvider): boolean => p.provider === 'webgpu';

/** How a provider is named in ONNX Runtime's session options. */
export function providerOptions(p: ExecutionProvider): ort.InferenceSession.ExecutionProviderConfig[] {
  switch (p.provider) {
    case 'cuda':
      return [{ name: 'cuda', deviceId: p.deviceId ?? 0 }];
    case 'webgpu':
      return [{ name: 'webgpu' }];
    case 'cpu':
      return ['cpu'];
  }
}

/** A run failure that is not about the job: the device is gone, or the job does not fit in its memory. */
export type RunFault = 'device' | 'out_of_memory';

// ONNX Runtime's own wording: BFCArena ("Failed to allocate memory for requested buffer of size
// N"), the CPU allocator (bad_alloc), CUDA ("CUDA failure 2: out of memory"), cuDNN/cuBLAS
// allocation statuses, WebGPU buffer creation.
const OUT_OF_MEMORY = /out of memory|failed to allocate memory|bad_alloc|CUDNN_STATUS_ALLOC_FAILED|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|OutOfMemory/i;
// A device that stopped working: CUDA/cuDNN/cuBLAS failures ("CUDA failure 700: an illegal memory
// access was encountered ; GPU=0 ; ..."), a lost WebGPU/Vulkan device.
const DEVICE = /CUDA failure|CUDA error|cudaError|CUDNN failure|CUDNN_STATUS|CUBLAS failure|CUBLAS_STATUS|CUFFT|device-side assert|illegal memory access|unspecified launch failure|uncorrectable ECC|device (was )?lost|DeviceLost|VK_ERROR_DEVICE_LOST/i;

/** What a session.run error message says about the device, if anything. */
export function classifyRunError(message: string): RunFault | undefined {
  if (OUT_OF_MEMORY.test(message)) return 'out_of_memory';
  if (DEVICE.test(message)) return 'device';
  return undefined;
}
