import { z } from 'zod';
import { storableText } from '../util/storable-text.ts';

/**
 * The messages that cross NATS. The API and the workers import this one module, so a
 * change to a payload is a change to one schema, checked on both sides.
 */

export const WORKFLOW_NAME = z.string().min(1);

/** Published by the API (through the outbox) to `qrart.jobs.<workflow token>`; Nats-Msg-Id = id. */
export const JobMessage = z.object({
  id: z.string().min(1),
  userId: z.string().min(1),
  workflow: WORKFLOW_NAME,
  /** The normalized, defaulted input (seed resolved), exactly as echoed to the client. */
  input: z.record(z.string(), z.unknown()),
  imageCount: z.number().int().min(1),
  createdAt: z.iso.datetime(),
});
export type JobMessage = z.infer<typeof JobMessage>;

/**
 * Worker-written text, made storable: an event the database refuses would be redelivered
 * forever (the applier's consumer has no delivery limit) and its prediction never finish.
 */
const workerText = () => z.string().min(1).transform(storableText);

export const PredictionError = z.object({
  code: workerText(),
  message: workerText(),
});
export type PredictionError = z.infer<typeof PredictionError>;

/** Text the spec puts in `output` when the result is rejected for NSFW content. */
export const NSFW_OUTPUT = 'NSFW contents detected!';
export const NSFW_ERROR: PredictionError = {
  code: 'nsfw_content',
  message: 'NSFW content detected. Try running it again, or try a different prompt. Credits are still deducted because GPU compute was used.',
};

/** The output object of a successful prediction: image URLs in request order. */
/** Longest caption an outpainting worker may report (the captioner's own cap is lower). */
export const MAX_CAPTION_LENGTH = 1000;

export const PredictionOutput = z.object({
  images: z.array(z.string().min(1)).min(1),
  /** Outpainting without a prompt: the captioner's description of the image, used as the prompt. */
  caption: z.string().max(MAX_CAPTION_LENGTH).optional(),
  /**
   * QR workflows: per image, in the order of `images`, the share (0..1) of the scan check's
   * simulated phone captures that read the code (docs/scan-repair.md).
   */
  scanRobustness: z.array(z.number().min(0).max(1)).optional(),
});
export type PredictionOutput = z.infer<typeof PredictionOutput>;

const eventBase = {
  predictionId: z.string().min(1),
  /** When the worker observed the transition (ISO 8601 UTC). */
  at: z.iso.datetime(),
  workerId: workerText(),
};

/**
 * On a terminal event: when the worker published `executing` for this attempt. The events
 * of one prediction may be applied out of order (API replicas share the applier consumer),
 * so the terminal event carries the start as well and the record's history does not depend
 * on which arrives first.
 */
const startedAt = z.iso.datetime().optional();

/** Published by workers to `qrart.events.<predictionId>`. */
export const StatusEvent = z.discriminatedUnion('status', [
  z.object({ ...eventBase, status: z.literal('executing') }),
  z.object({
    ...eventBase,
    status: z.literal('executed'),
    startedAt,
    /** Object-store names of the output images, in request order; the API turns them into URLs. */
    images: z.array(z.string().regex(/^[A-Za-z0-9_-]{16,64}\.(png|jpg|webp)$/)).min(1),
    isScanables: z.array(z.boolean()),
    /** Per image, the share of simulated phone captures that read it (QR workflows; absent from older workers). */
    scanRobustness: z.array(z.number().min(0).max(1)).optional(),
    /** Outpainting without a prompt: the caption that was used as the prompt. */
    caption: z.string().max(MAX_CAPTION_LENGTH).transform(storableText).optional(),
  }),
  z.object({
    ...eventBase,
    status: z.literal('failed'),
    startedAt,
    error: PredictionError,
    /** NSFW rejections are not refunded (spec 7); every other failure is. */
    nsfw: z.boolean().default(false),
  }),
]);
export type StatusEvent = z.infer<typeof StatusEvent>;
export type StatusEventInput = z.input<typeof StatusEvent>;

/** Published by the worker on `qrart.progress.<predictionId>` (core NATS) as denoising goes. */
export const ProgressEvent = z.object({
  predictionId: z.string().min(1),
  /** Denoising steps done of all the job's steps (a batch is denoised together; a refinement or face pass adds steps). */
  step: z.number().int().min(0),
  total: z.number().int().min(1),
});
export type ProgressEvent = z.infer<typeof ProgressEvent>;

/** One webhook delivery, queued on `qrart.webhooks.<predictionId>.<status>` with Nats-Msg-Id = deliveryId. */
export const WebhookDelivery = z.object({
  deliveryId: z.string().min(1),
  predictionId: z.string().min(1),
  status: z.enum(['executing', 'executed', 'failed']),
  url: z.string().min(1),
  /** The get-prediction response body at the moment of the transition, serialized once. */
  body: z.string(),
  /**
   * Which attempt this message is for; absent on the first. A retry is queued as a copy with
   * the next number (the dispatcher's redelivery count cannot say it: a delivery that waited
   * for a busy destination is redelivered without having been attempted).
   */
  attempt: z.number().int().min(1).optional(),
  /** A retry is not attempted before this time (the retry schedule's delay). */
  notBefore: z.iso.datetime().optional(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;
