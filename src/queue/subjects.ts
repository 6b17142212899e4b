/** Stream, subject and consumer names: the whole NATS topology in one place. */
export const STREAMS = {
  jobs: 'QRART_JOBS',
  events: 'QRART_EVENTS',
  webhooks: 'QRART_WEBHOOKS',
  jobAdvisories: 'QRART_JOB_ADVISORIES',
} as const;

export const CONSUMERS = {
  /** Shared by every worker; WorkQueue streams hand each job to one of them. */
  workers: 'workers',
  eventApplier: 'api-event-applier',
  webhookDispatcher: 'webhook-dispatcher',
  maxDeliveries: 'api-max-deliveries',
} as const;

export const OBJECT_BUCKET = 'qrart-images';

export const subjects = {
  jobsAll: 'qrart.jobs.>',
  job: (workflowToken: string) => `qrart.jobs.${workflowToken}`,
  eventsAll: 'qrart.events.>',
  event: (predictionId: string) => `qrart.events.${predictionId}`,
  /**
   * A job's denoising progress (core NATS, no stream: a lost one is superseded by the next),
   * published by the worker that runs it, read by the API's event streams.
   */
  progress: (predictionId: string) => `qrart.progress.${predictionId}`,
  webhooksAll: 'qrart.webhooks.>',
  /** One subject per prediction and status: the dispatcher keeps a prediction's webhooks in order by it (webhooks/prediction-order.ts). */
  webhook: (predictionId: string, status: string) => `qrart.webhooks.${predictionId}.${status}`,
  /** The server's advisory when a job has been delivered MaxDeliver times without an ack. */
  jobMaxDeliveries: `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.QRART_JOBS.${'workers'}`,
} as const;
