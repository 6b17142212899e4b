/**
 * The optimum rows name what older optimum releases wrote too (src/models/contracts/optimum.ts):
 * facts as those releases declare them, matched without running anything. The fixtures of the
 * export matrix carry today's names; these are the names that changed.
 */
import { describe, expect, it } from 'vitest';
import type { GraphFacts, IoFacts } from '../../src/models/contracts/contract.ts';
import { matchContracts } from '../../src/models/contracts/index.ts';

const io = (name: string, type: string, dims: IoFacts['dims']): IoFacts => ({ name, type, dims });
const ids = (facts: GraphFacts) => matchContracts(facts).map((c) => c.id);

/** An SD1.5 UNet as optimum writes it, with the timestep given. */
function unet(timestep: IoFacts, extra: IoFacts[] = []): GraphFacts {
  return {
    role: 'unet',
    inputs: [io('sample', 'float32', ['batch_size', 4, 'height', 'width']), timestep, io('encoder_hidden_states', 'float32', ['batch_size', 'sequence_length', 768]), ...extra],
    outputs: [io('out_sample', 'float32', ['batch_size', 4, 'height', 'width'])],
    ops: new Set(['Conv']),
  };
}

describe('optimum rows across releases', () => {
  it('the UNet: a float scalar timestep (1.24 on) and int64 [steps] (up to 1.23) are the same refused row', () => {
    expect(ids(unet(io('timestep', 'float32', [])))).toEqual(['optimum-fp32-unet']);
    expect(ids(unet(io('timestep', 'int64', ['steps'])))).toEqual(['optimum-fp32-unet']);
  });

  it("a full LCM checkpoint's UNet (timestep_cond besides) is the same refused row; another extra input is no row", () => {
    expect(ids(unet(io('timestep', 'float32', []), [io('timestep_cond', 'float32', ['batch_size', 256])]))).toEqual(['optimum-fp32-unet']);
    expect(ids(unet(io('timestep', 'float32', []), [io('text_embeds', 'float32', ['batch_size', 1280])]))).toEqual([]);
  });

  it('the VAE decoder: latent_height / latent_width (1.26 on) and height_latent / width_latent (up to 1.25)', () => {
    const decoder = (h: string, w: string): GraphFacts => ({
      role: 'vae_decoder',
      inputs: [io('latent_sample', 'float16', ['batch_size', 4, h, w])],
      outputs: [io('sample', 'float16', ['batch_size', 3, 'latent_height * 8', 'latent_width * 8'])],
      ops: new Set(['Conv']),
    });
    expect(ids(decoder('latent_height', 'latent_width'))).toContain('optimum-fp16-vae-decoder');
    expect(ids(decoder('height_latent', 'width_latent'))).toContain('optimum-fp16-vae-decoder');
    expect(ids(decoder('h', 'w'))).not.toContain('optimum-fp16-vae-decoder');
  });
});
