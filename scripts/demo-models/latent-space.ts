/**
 * The demo's latent colour space, shared by the text encoder, the UNets and the VAE: a latent z
 * decodes to tanh(DECODER_MIX · z) (before the VAE's 8× upsampling and blur), and the one
 * direction DECODER_MIX cannot see carries the NSFW mark (MAGENTA_CAP says why). Build-time
 * numbers only: no graph is made here.
 */

export const LATENT_SCALE = 0.18215;
/** A latent batch [B,4,h,w], as every graph names its dims. */
export const LATENT_DIMS = ['batch', 4, 'height', 'width'] as const;

/**
 * VAE decoder colour mix: RGB pre-tanh = DECODER_MIX · z for a diffusion-space latent z
 * (rows R,G,B; columns latent channels). Rank 3: one latent direction is invisible, as in SD.
 */
export const DECODER_MIX = [
  [0.6, 0.7, -0.35, -0.2],
  [0.6, -0.1, 0.7, 0.1],
  [0.6, -0.6, -0.35, 0.4],
] as const;

/** Pseudo-inverse (4×3) of DECODER_MIX: Aᵀ(AAᵀ)⁻¹. */
export const ENCODER_MIX: number[][] = pseudoInverse(DECODER_MIX.map((r) => [...r]));

/**
 * The unit latent direction DECODER_MIX maps to nothing (its null space), from I − pinv(A)·A.
 * Sign fixed so its largest component is positive, so rebuilds agree.
 */
export const NSFW_MARK_DIRECTION: number[] = nullDirection(DECODER_MIX.map((r) => [...r]), ENCODER_MIX);

/** Latent for an RGB pre-tanh vector. */
export function latentFor(pre: readonly number[]): number[] {
  return ENCODER_MIX.map((row) => row.reduce((s, v, j) => s + v * pre[j]!, 0));
}

const atanh = (x: number): number => 0.5 * Math.log((1 + x) / (1 - x));
/** Diffusion-space latent that decodes to `rgb` (in [0,1]) on its own. */
export function latentForRgb(rgb: readonly number[]): number[] {
  return latentFor(rgb.map((c) => atanh(Math.max(-0.96, Math.min(0.96, 2 * c - 1)))));
}

/**
 * Magenta is the demo safety checker's colour, so only the trigger may paint it. The UNet cannot
 * promise that for the prompts: classifier-free guidance combines its two branches as
 * g·cond − (g−1)·uncond outside the graph, so any colour a prompt or a negative prompt moves,
 * guidance (up to 20) pushes to saturation (a negative "green" alone becomes magenta; "purple"
 * at a high cfg saturates to it). The decoder, which sees the combined latents, guarantees it
 * instead: it caps each pixel's magentaness, φ = (R+B)/2 − G in [0,1] RGB (1 for magenta, 0.5
 * for pure red or blue, 0 for any grey), at MAGENTA_CAP by desaturating toward the pixel's grey,
 * unless the latent carries the NSFW mark along the decoder's otherwise invisible direction.
 * Only the trigger token writes the mark (the UNet keeps the seed out of that direction), and the
 * encoder writes it for source pixels already past the cap, so an uploaded magenta picture
 * round-trips and outpainting continues it.
 */
export const MAGENTA_CAP = 0.5;
/** Mark (diffusion-space latent units along NSFW_MARK_DIRECTION) the trigger adds to x0, before guidance. */
export const NSFW_MARK = 4;

// ---------------------------------------------------------------------------------------------
// Small numeric helpers (build time only)

function pseudoInverse(a: number[][]): number[][] {
  const m = a.length;
  const n = a[0]!.length;
  const aat = a.map((ri) => a.map((rj) => ri.reduce((s, v, k) => s + v * rj[k]!, 0)));
  const inv = invert(aat);
  return Array.from({ length: n }, (_, i) =>
    Array.from({ length: m }, (_, j) => a.reduce((s, row, k) => s + row[i]! * inv[k]![j]!, 0)),
  );
}

function nullDirection(a: number[][], pinv: number[][]): number[] {
  const n = a[0]!.length;
  const projector = Array.from({ length: n }, (_, i) =>
    Array.from({ length: n }, (_, j) => (i === j ? 1 : 0) - pinv[i]!.reduce((s, v, k) => s + v * a[k]![j]!, 0)),
  );
  const column = (j: number): number[] => projector.map((row) => row[j]!);
  const norms = projector.map((_, j) => Math.hypot(...column(j)));
  const v = column(norms.indexOf(Math.max(...norms)));
  const largest = v.reduce((m, x) => (Math.abs(x) > Math.abs(m) ? x : m), 0);
  const scale = Math.sign(largest) / Math.hypot(...v);
  return v.map((x) => x * scale);
}

function invert(m: number[][]): number[][] {
  const n = m.length;
  const aug = m.map((row, i) => [...row, ...Array.from({ length: n }, (_, j) => (i === j ? 1 : 0))]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(aug[r]![c]!) > Math.abs(aug[p]![c]!)) p = r;
    [aug[c], aug[p]] = [aug[p]!, aug[c]!];
    const pivot = aug[c]![c]!;
    aug[c] = aug[c]!.map((v) => v / pivot);
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = aug[r]![c]!;
      aug[r] = aug[r]!.map((v, k) => v - f * aug[c]![k]!);
    }
  }
  return aug.map((row) => row.slice(n));
}
