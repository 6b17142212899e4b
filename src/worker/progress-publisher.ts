import type { NatsConnection } from '@nats-io/transport-node';
import type { ProgressEvent } from '../messages/schemas.ts';
import { subjects } from '../queue/subjects.ts';

/** At most this often per job: a progress bar needs a few updates a second, not one per step of every image. */
export const PROGRESS_INTERVAL_MS = 250;

/**
 * A job's step callback that publishes its progress on core NATS (fire and forget: nobody may
 * be listening, and a lost update is superseded by the next). The first and the last step
 * always go out; those between at most every intervalMs.
 */
export function progressPublisher(nc: NatsConnection, predictionId: string, intervalMs = PROGRESS_INTERVAL_MS): (step: number, total: number) => void {
  const subject = subjects.progress(predictionId);
  let lastAt = -Infinity;
  return (step, total) => {
    const now = performance.now();
    if (step !== total && step > 1 && now - lastAt < intervalMs) return;
    lastAt = now;
    const event: ProgressEvent = { predictionId, step, total };
    try {
      nc.publish(subject, JSON.stringify(event));
    } catch {
      // Closed or draining connection: progress is best effort; the job's result is what counts.
    }
  };
}
