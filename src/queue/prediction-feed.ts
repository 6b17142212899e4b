import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { ProgressEvent, StatusEvent } from '../messages/schemas.ts';
import { subjects } from './subjects.ts';

/** What one prediction's watchers hear: a worker published a status, or denoising went on. */
export type FeedUpdate = { kind: 'status'; status: StatusEvent['status'] } | { kind: 'progress'; step: number; total: number };

export interface PredictionFeed {
  /**
   * Calls listener with every status event and progress update published for the prediction
   * from now on, until the returned function is called. Status events are the workers' own
   * (the record may not show them yet: one API replica applies each event, and not at once).
   */
  watch(predictionId: string, listener: (update: FeedUpdate) => void): () => void;
}

/**
 * Live updates straight off the subjects, with plain core subscriptions: every API replica
 * hears every event published for a prediction it streams, whichever replica applies it.
 */
export function createPredictionFeed(nc: NatsConnection): PredictionFeed {
  return {
    watch(predictionId, listener) {
      const decode = (data: Uint8Array): unknown => {
        try {
          return JSON.parse(new TextDecoder().decode(data));
        } catch {
          return undefined;
        }
      };
      const subscriptions: Subscription[] = [
        nc.subscribe(subjects.event(predictionId), {
          callback: (error, msg) => {
            const event = error ? undefined : StatusEvent.safeParse(decode(msg.data));
            if (event?.success) listener({ kind: 'status', status: event.data.status });
          },
        }),
        nc.subscribe(subjects.progress(predictionId), {
          callback: (error, msg) => {
            const event = error ? undefined : ProgressEvent.safeParse(decode(msg.data));
            if (event?.success) listener({ kind: 'progress', step: event.data.step, total: event.data.total });
          },
        }),
      ];
      return () => {
        for (const subscription of subscriptions) subscription.unsubscribe();
      };
    },
  };
}
