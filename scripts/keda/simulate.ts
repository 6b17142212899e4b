/**
 * KEDA's decision for the worker Deployment, simulated on the real metric: the lag read from a
 * nats-server's monitoring port exactly as KEDA's nats-jetstream scaler reads it
 * (jetstream-lag.ts), the replica arithmetic of KEDA and the HPA (replicas.ts), and their clocks
 * (autoscaler.ts). runAutoscaler drives it on the wall clock against a scale target of your own.
 */
import { CONSUMERS, STREAMS } from '../../src/queue/subjects.ts';
import type { Autoscaler, TickResult } from './autoscaler.ts';
import type { JetStreamTarget } from './jetstream-lag.ts';

export { Autoscaler, type AutoscalerOptions, type ScaleChange, type TickResult } from './autoscaler.ts';
export { resolveBehavior, type HpaBehavior, type HpaScalingPolicy, type HpaScalingRules } from './hpa-behavior.ts';
export { JetStreamLagReader, kedaJszUrl, queryJetStreamLag, type JetStreamLag, type JetStreamTarget } from './jetstream-lag.ts';
export {
  boundByHpaRules,
  externalMetricReplicas,
  HPA_DEFAULTS,
  hpaMinReplicas,
  hpaScaleUpLimit,
  isTriggerActive,
  KEDA_DEFAULTS,
  kedaDesiredReplicas,
  type HpaSettings,
  type ReplicaDecision,
  type ReplicaDecisionInput,
  type ScaledObjectSpec,
} from './replicas.ts';

/** Our workers' consumer as a ScaledObject trigger names it (no NATS accounts configured: the global account). */
export const WORKERS_TRIGGER: JetStreamTarget = { account: '$G', stream: STREAMS.jobs, consumer: CONSUMERS.workers };

export interface AutoscalerLoopOptions {
  readonly autoscaler: Autoscaler;
  /** The trigger's metric (JetStreamLagReader.read().lag, usually). */
  readonly readLag: () => Promise<number>;
  /** Applies a new replica count (the Deployment's spec.replicas); awaited before the next tick. */
  readonly scaleTo: (replicas: number, tick: TickResult) => void | Promise<void>;
  readonly onTick?: (tick: TickResult) => void;
  /** A failed read: KEDA reports a scaler error and scales nothing on that poll. */
  readonly onError?: (error: unknown) => void;
  readonly now?: () => number;
}

export interface AutoscalerLoop {
  readonly ticks: readonly TickResult[];
  stop(): Promise<void>;
}

/** Polls when a loop is due, ticks the autoscaler, applies its changes; until stop(). */
export function runAutoscaler(options: AutoscalerLoopOptions): AutoscalerLoop {
  const now = options.now ?? Date.now;
  const ticks: TickResult[] = [];
  let stopped = false;
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, ms));
      wake = () => (clearTimeout(timer), resolve());
    });

  const loop = (async () => {
    const { autoscaler } = options;
    while (!stopped) {
      await sleep(autoscaler.nextDueAtMs() - now());
      if (stopped) break;
      let lag: number;
      try {
        lag = await options.readLag();
      } catch (error) {
        options.onError?.(error);
        await sleep(Math.min(autoscaler.spec.pollingIntervalMs, autoscaler.hpa.syncPeriodMs));
        continue;
      }
      const tick = autoscaler.tick(lag, now());
      ticks.push(tick);
      options.onTick?.(tick);
      // Both loops may have written on one tick (the HPA, then KEDA): the target sees the last word.
      if (tick.changes.length > 0) await options.scaleTo(tick.replicas, tick);
    }
  })();

  return {
    ticks,
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
