/**
 * The replica arithmetic KEDA and the Kubernetes HPA apply to our worker Deployment when it is
 * scaled by a `nats-jetstream` trigger on QRART_JOBS / workers. Nothing here talks to a cluster:
 * these are the rules, written down from the sources, so that tests and the `scale` bench can
 * run the same decisions on the real metric.
 *
 * Sources read (line numbers are at these revisions):
 *   KEDA  kedacore/keda @ 8b4f083ca8c8 (main, 2026-08-20)
 *     K1 pkg/scalers/nats_jetstream_scaler.go:42-43   lagThreshold default 10, activationLagThreshold default 0
 *     K2 pkg/scalers/nats_jetstream_scaler.go:433-446 the HPA metric: External, target = lagThreshold
 *     K3 pkg/scalers/scaler.go:101-111                no metricType given => AverageValue
 *     K4 pkg/scalers/nats_jetstream_scaler.go:466     active <=> totalLag > activationLagThreshold
 *     K5 pkg/scaling/executor/scale_scaledobjects.go:57-61   minReplicaCount unset => 0
 *     K6 pkg/scaling/executor/scale_scaledobjects.go:70-73, 247-252  active at 0 replicas => max(minReplicaCount, 1)
 *     K7 pkg/scaling/executor/scale_scaledobjects.go:78-80   active => lastActiveTime = now
 *     K8 pkg/scaling/executor/scale_scaledobjects.go:98-101, 189-237  inactive, minReplicaCount 0, replicas > 0
 *        => 0 once lastActiveTime + cooldownPeriod is past (creation + initialCooldownPeriod if never active)
 *     K9 pkg/scaling/executor/scale_scaledobjects.go:102-108 inactive and below minReplicaCount => minReplicaCount
 *     K10 pkg/scaling/executor/scale_executor.go:36-37      cooldownPeriod default 300 s, initialCooldownPeriod 0
 *     K11 apis/keda/v1alpha1/withtriggers_types.go:51        pollingInterval default 30 s
 *     K12 apis/keda/v1alpha1/scaledobject_types.go:96-97, 303-317  HPA minReplicas = max(minReplicaCount, 1),
 *         maxReplicas = maxReplicaCount (default 100)
 *     K13 controllers/keda/hpa.go:79-84  no advanced.horizontalPodAutoscalerConfig.behavior => HPA behavior nil
 *   Kubernetes HPA controller (kubernetes/kubernetes, pkg/controller/podautoscaler)
 *     H1 replica_calculator.go GetExternalPerPodMetricReplicas: usageRatio = usage / (target * statusReplicas);
 *        outside the tolerance => ceil(usage / target), else statusReplicas
 *     H2 replica_calculator.go Tolerances.isWithin: 1 - tol <= ratio <= 1 + tol
 *     H3 horizontal.go reconcileAutoscaler: replicas 0 and minReplicas != 0 => scaling disabled (KEDA owns 0 <-> 1);
 *        above max => max; below min => min; else the metric, then normalizeDesiredReplicas (behavior nil)
 *     H4 horizontal.go stabilizeRecommendation: the highest recommendation of the last
 *        downscaleStabilisationWindow wins (scale-down stabilization; scale-up is not delayed)
 *     H5 horizontal.go convertDesiredReplicasWithRules + calculateScaleUpLimit: bounded by min, by max, and
 *        by max(2 * current, 4) per reconcile (scaleUpLimitFactor 2, scaleUpLimitMinimum 4)
 *     H6 config/v1alpha1/defaults.go RecommendedDefaultHPAControllerConfiguration: sync period 15 s,
 *        downscale stabilization window 5 min, tolerance 0.1
 */

/** The ScaledObject and trigger fields that decide the replica count (KEDA's defaults in KEDA_DEFAULTS). */
export interface ScaledObjectSpec {
  /** Trigger metadata lagThreshold: the lag one replica is expected to carry (the AverageValue target). */
  readonly lagThreshold: number;
  /** Trigger metadata activationLagThreshold: at or below it the trigger is inactive (0 <-> 1 only). */
  readonly activationLagThreshold: number;
  readonly minReplicaCount: number;
  readonly maxReplicaCount: number;
  /** How often KEDA runs the trigger for activation (the HPA has its own period, HpaSettings.syncPeriodMs). */
  readonly pollingIntervalMs: number;
  /** How long after the trigger was last active KEDA scales to zero (minReplicaCount 0 only). */
  readonly cooldownPeriodMs: number;
  /** The same, counted from creation, for a ScaledObject that has never been active. */
  readonly initialCooldownPeriodMs: number;
}

export const KEDA_DEFAULTS: ScaledObjectSpec = {
  lagThreshold: 10, // K1
  activationLagThreshold: 0, // K1
  minReplicaCount: 0, // K5
  maxReplicaCount: 100, // K12
  pollingIntervalMs: 30_000, // K11
  cooldownPeriodMs: 300_000, // K10
  initialCooldownPeriodMs: 0, // K10
};

/** kube-controller-manager's HPA settings (flags --horizontal-pod-autoscaler-*), and the HPA's behavior. */
export interface HpaSettings {
  readonly syncPeriodMs: number;
  readonly tolerance: number;
  /** --horizontal-pod-autoscaler-downscale-stabilization: the window when no behavior sets one. */
  readonly downscaleStabilizationMs: number;
  /**
   * The ScaledObject's advanced.horizontalPodAutoscalerConfig.behavior. Unset (KEDA's default, K13):
   * the legacy rules of H4/H5. Set: the behavior rules of hpa-behavior.ts.
   */
  readonly behavior?: HpaBehavior;
}

export const HPA_DEFAULTS: HpaSettings = { syncPeriodMs: 15_000, tolerance: 0.1, downscaleStabilizationMs: 300_000 }; // H6

const SCALE_UP_LIMIT_FACTOR = 2; // H5
const SCALE_UP_LIMIT_MINIMUM = 4; // H5

import type { HpaBehavior } from './hpa-behavior.ts';

/** K4: the trigger is active strictly above the activation threshold. */
export function isTriggerActive(lag: number, activationLagThreshold: number): boolean {
  return lag > activationLagThreshold;
}

/** K12: the HPA KEDA creates never goes below one replica; zero is KEDA's own business. */
export function hpaMinReplicas(minReplicaCount: number): number {
  return Math.max(minReplicaCount, 1);
}

/**
 * H1/H2 with K2/K3: the HPA's proposal for an External metric with an AverageValue target. The
 * current replica count only decides whether the change is big enough (the tolerance); the
 * proposal itself is ceil(lag / lagThreshold).
 */
export function externalMetricReplicas(lag: number, lagThreshold: number, statusReplicas: number, tolerance: number = HPA_DEFAULTS.tolerance): number {
  const usageRatio = lag / (lagThreshold * statusReplicas);
  const withinTolerance = 1 - tolerance <= usageRatio && usageRatio <= 1 + tolerance;
  return withinTolerance ? statusReplicas : Math.ceil(lag / lagThreshold);
}

/** H5: one reconcile moves within [min, max] and adds at most max(2 x current, 4) replicas' worth. */
export function hpaScaleUpLimit(currentReplicas: number): number {
  return Math.max(SCALE_UP_LIMIT_FACTOR * currentReplicas, SCALE_UP_LIMIT_MINIMUM);
}

export function boundByHpaRules(currentReplicas: number, desiredReplicas: number, minReplicas: number, maxReplicas: number): number {
  const ceiling = Math.min(maxReplicas, hpaScaleUpLimit(currentReplicas));
  if (desiredReplicas < minReplicas) return minReplicas;
  if (desiredReplicas > ceiling) return ceiling;
  return desiredReplicas;
}

export interface ReplicaDecisionInput {
  /** num_pending + num_ack_pending of the consumer (what the scaler reports). */
  readonly lag: number;
  readonly currentReplicas: number;
  readonly lagThreshold: number;
  readonly activationLagThreshold?: number;
  readonly minReplicaCount?: number;
  readonly maxReplicaCount?: number;
  readonly tolerance?: number;
}

export type DecidedBy =
  /** KEDA took the Deployment from 0 to max(minReplicaCount, 1) (K6). */
  | 'keda-activation'
  /** KEDA took it to 0: inactive with minReplicaCount 0, after the cooldown (K8). */
  | 'keda-deactivation'
  /** KEDA raised it to minReplicaCount while inactive (K9). */
  | 'keda-min-replicas'
  /** The HPA's metric proposal, bounded (H1-H5). */
  | 'hpa'
  /** Nobody acts: 0 replicas and inactive, or the HPA keeps the count. */
  | 'unchanged';

export interface ReplicaDecision {
  readonly active: boolean;
  /** The HPA's unbounded proposal (H1), when the HPA is the one deciding. */
  readonly metricReplicas?: number;
  readonly replicas: number;
  readonly decidedBy: DecidedBy;
}

/**
 * What KEDA and the HPA set on their next pass, from the current count alone: no history, so as if
 * the cooldown (K8) had passed and no stabilization window (H4) held a higher recommendation.
 * Autoscaler adds the time-dependent parts.
 */
export function kedaDesiredReplicas(input: ReplicaDecisionInput): ReplicaDecision {
  const activation = input.activationLagThreshold ?? KEDA_DEFAULTS.activationLagThreshold;
  const min = input.minReplicaCount ?? KEDA_DEFAULTS.minReplicaCount;
  const max = input.maxReplicaCount ?? KEDA_DEFAULTS.maxReplicaCount;
  const current = input.currentReplicas;
  const active = isTriggerActive(input.lag, activation);

  if (current === 0) {
    // H3: the HPA is disabled at zero; only KEDA moves the Deployment off it (K6), or to a minimum (K9).
    if (active) return { active, replicas: hpaMinReplicas(min), decidedBy: 'keda-activation' };
    if (min > 0) return { active, replicas: min, decidedBy: 'keda-min-replicas' };
    return { active, replicas: 0, decidedBy: 'unchanged' };
  }
  if (!active && min === 0) return { active, replicas: 0, decidedBy: 'keda-deactivation' };
  const proposal = hpaProposal(input.lag, input.lagThreshold, current, min, max, input.tolerance ?? HPA_DEFAULTS.tolerance);
  // An out-of-range count is set straight to the bound (H3); only a metric proposal is normalized (H5).
  const replicas = proposal.metricReplicas === undefined ? proposal.replicas : boundByHpaRules(current, proposal.metricReplicas, hpaMinReplicas(min), max);
  return { active, ...proposal, replicas, decidedBy: replicas === current ? 'unchanged' : 'hpa' };
}

/**
 * H3: the HPA's reconcile before normalization: out-of-range counts are brought back first, and only
 * an in-range count consults the metric.
 */
export function hpaProposal(
  lag: number,
  lagThreshold: number,
  currentReplicas: number,
  minReplicaCount: number,
  maxReplicaCount: number,
  tolerance: number,
): { replicas: number; metricReplicas?: number } {
  if (currentReplicas > maxReplicaCount) return { replicas: maxReplicaCount };
  const min = hpaMinReplicas(minReplicaCount);
  if (currentReplicas < min) return { replicas: min };
  const metricReplicas = externalMetricReplicas(lag, lagThreshold, currentReplicas, tolerance);
  return { replicas: metricReplicas, metricReplicas };
}
