/**
 * The API process's Prometheus metrics (docs/metrics.md is the contract: names, types, labels).
 * One instance per API service, with a registry of its own rather than prom-client's global
 * one: under `start` the worker has its own registry in the same process, and tests start
 * several services in one process; each endpoint then shows its own series, default process
 * metrics included, without duplicate-registration errors.
 *
 * The pieces that record (routes, the submitter, the event applier, the webhook dispatcher) get
 * this object from the service starter; the gauges that need I/O are read at scrape time
 * (metrics-probes.ts).
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { PredictionStatus } from '../store/prediction-record.ts';
import { isWorkflowName, WORKFLOWS } from '../workflows/names.ts';

/** Label value of a request no route matched (404s for unknown paths): one value, never the raw URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** The status label of a request whose client left before its answer was written. */
export const ABORTED_STATUS = 'aborted';

/** What one webhook delivery attempt came to; `deferred`: not attempted, its destination was at its limit. */
export const WEBHOOK_OUTCOMES = ['delivered', 'retry', 'given_up', 'deferred'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

const EVENT_STATUSES: readonly PredictionStatus[] = ['executing', 'executed', 'failed'];

/** Seconds: 5 ms (a cached read) to 10 s (a create waiting out a stalled database). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds: milliseconds normally; minutes while the API or the database was away. */
const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Seconds: one attempt is bounded by WEBHOOK_TIMEOUT_MS (10 s by default). */
const WEBHOOK_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A workflow label: one of the 13 names, so a stray value cannot add series. */
export function workflowLabel(workflow: string): string {
  return isWorkflowName(workflow) ? workflow : 'unknown';
}

export class ApiMetrics {
  readonly registry = new Registry();

  private readonly httpRequests = new Counter({
    name: 'qrart_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'qrart_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route pattern',
    labelNames: ['method', 'route'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });
  private readonly created = new Counter({
    name: 'qrart_predictions_created_total',
    help: 'Predictions accepted (a replayed Idempotency-Key is not counted)',
    labelNames: ['workflow'] as const,
    registers: [this.registry],
  });
  private readonly charged = new Counter({
    name: 'qrart_credits_charged_total',
    help: 'Credits charged at create',
    labelNames: ['workflow'] as const,
    registers: [this.registry],
  });
  private readonly refunded = new Counter({
    name: 'qrart_credits_refunded_total',
    help: 'Credits refunded on failure',
    labelNames: ['workflow'] as const,
    registers: [this.registry],
  });
  private readonly applyLag = new Histogram({
    name: 'qrart_event_apply_lag_seconds',
    help: "A worker event's time (at) to the record's update, by the event's status",
    labelNames: ['status'] as const,
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });
  private readonly webhookDeliveries = new Counter({
    name: 'qrart_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome (deferred: not attempted, the destination was at its limit)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly webhookDuration = new Histogram({
    name: 'qrart_webhook_delivery_duration_seconds',
    help: 'One webhook delivery attempt, request to answer, by outcome',
    labelNames: ['outcome'] as const,
    buckets: WEBHOOK_BUCKETS,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // Every known label value starts at 0, so a rate() over a series that has not moved yet is 0, not absent.
    for (const workflow of WORKFLOWS) {
      for (const counter of [this.created, this.charged, this.refunded]) counter.inc({ workflow }, 0);
    }
    for (const status of EVENT_STATUSES) this.applyLag.zero({ status });
    for (const outcome of WEBHOOK_OUTCOMES) {
      this.webhookDeliveries.inc({ outcome }, 0);
      if (outcome !== 'deferred') this.webhookDuration.zero({ outcome });
    }
  }

  /**
   * One answered request; `route` is the route's pattern (`/v1/predictions/:id`) or
   * UNMATCHED_ROUTE. `seconds` null: not a latency (an event stream, open as long as followed).
   */
  httpAnswered(method: string, route: string, status: number, seconds: number | null): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    if (seconds !== null) this.httpDuration.observe({ method, route }, seconds);
  }

  /** A request whose client closed the connection before the answer was written (status `aborted`). */
  httpAbandoned(method: string, route: string): void {
    this.httpRequests.inc({ method, route, status: ABORTED_STATUS });
  }

  /** A prediction accepted and charged (its transaction committed). */
  predictionCreated(workflow: string, credits: number): void {
    const labels = { workflow: workflowLabel(workflow) };
    this.created.inc(labels);
    this.charged.inc(labels, credits);
  }

  /** Credits given back on a failure (its transaction committed). */
  creditsRefunded(workflow: string, credits: number): void {
    this.refunded.inc({ workflow: workflowLabel(workflow) }, credits);
  }

  /** A worker event applied to its record: `at` is the worker's time; a clock ahead of ours counts as no lag. */
  eventApplied(status: PredictionStatus, at: string): void {
    this.applyLag.observe({ status }, Math.max(0, (Date.now() - Date.parse(at)) / 1000));
  }

  /** One delivery attempt and how long it took. */
  webhookAttempted(outcome: Exclude<WebhookOutcome, 'deferred'>, seconds: number): void {
    this.webhookDeliveries.inc({ outcome });
    this.webhookDuration.observe({ outcome }, seconds);
  }

  /** A delivery handed back for later because its destination had its attempts in flight already. */
  webhookDeferred(): void {
    this.webhookDeliveries.inc({ outcome: 'deferred' });
  }
}
