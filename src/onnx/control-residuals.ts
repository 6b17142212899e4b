/**
 * The residuals an SD1.5 ControlNet hands its UNet: a contract of the exports themselves, so the
 * graph rewrites here (fuse.ts, scale-wrap.ts) and the pipeline's role checks (pipeline/roles.ts)
 * read the same list.
 */

/** SD1.5's 13 ControlNet residuals, in UNet input order: [name, channels, downsampling]. */
export const CONTROL_RESIDUALS: readonly { readonly role: string; readonly channels: number; readonly factor: number }[] = [
  ...(
    [
      [320, 1], [320, 1], [320, 1], [320, 2], [640, 2], [640, 2],
      [640, 4], [1280, 4], [1280, 4], [1280, 8], [1280, 8], [1280, 8],
    ] as const
  ).map(([channels, factor], i) => ({ role: `down_block_${i}_additional_residual`, channels, factor })),
  { role: 'mid_block_additional_residual', channels: 1280, factor: 8 },
];
