import { describe, expect, it } from 'vitest';
import { threadStageSeconds } from '../../src/worker/job-stages.ts';

describe('the inference thread timings as job stages', () => {
  it('sums every pass into its stage, in seconds, and leaves out the small steps and the totals', () => {
    const stages = threadStageSeconds({
      text_encoder: 100,
      control_planes: 5,
      denoiser: 2000,
      scheduler: 50,
      vae_decode: 300,
      upscale: 40,
      refine_vae_encode: 200,
      refine_denoiser: 1000,
      refine_scheduler: 25,
      refine_vae_decode: 400,
      face_vae_encode: 100,
      face_denoiser: 500,
      face: 700,
      resize: 10,
      nsfw: 75,
      total: 5000,
    });
    expect(stages.text_encoder).toBeCloseTo(0.1);
    expect(stages.denoise).toBeCloseTo(2 + 0.05 + 1 + 0.025 + 0.5);
    expect(stages.vae).toBeCloseTo(0.3 + 0.2 + 0.4 + 0.1);
    expect(stages.nsfw).toBeCloseTo(0.075);
    expect(Object.keys(stages).sort()).toEqual(['denoise', 'nsfw', 'text_encoder', 'vae']);
  });

  it('reads outpainting and the separate ControlNet + UNet pair too', () => {
    expect(threadStageSeconds({ caption: 900, tokenize_text_encoder: 80, vae_encode: 60, unet: 1200, scheduler: 20, vae_decode: 70, composite: 5, nsfw: 30 })).toEqual({
      text_encoder: 0.08,
      vae: 0.13,
      denoise: 1.22,
      nsfw: 0.03,
    });
    expect(threadStageSeconds({ controlnet: 400, unet: 600 })).toEqual({ denoise: 1 });
  });
});
