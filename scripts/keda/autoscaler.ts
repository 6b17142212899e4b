/**
 * KEDA's scale loop and the HPA's reconcile for one ScaledObject, with their clocks: the polling
 * interval (KEDA) and sync period (HPA), the cooldown before scaling to zero, the HPA's scale-down
 * stabilization window and, when the ScaledObject sets an HPA behavior, its rate policies. Time is
 * passed in, so a test can run minutes of policy in milliseconds and the bench can run it on the
 * wall clock. Rule references: K* and H* in replicas.ts, B* in hpa-behavior.ts.
 */
import {
  boundByHpaRules,
  externalMetricReplicas,
  HPA_DEFAULTS,
  hpaMinReplicas,
  isTriggerActive,
  KEDA_DEFAULTS,
  type HpaSettings,
  type ScaledObjectSpec,
} from './replicas.ts';
import { boundByBehaviorRate, resolveBehavior, stabilizeWithBehaviors, storeScaleEvent, type ResolvedBehavior, type ScaleEvents, type TimedRecommendation } from './hpa-behavior.ts';

export interface AutoscalerOptions {
  readonly scaledObject: Partial<ScaledObjectSpec> & Pick<ScaledObjectSpec, 'lagThreshold'>;
  readonly hpa?: Partial<HpaSettings>;
  /** The Deployment's replicas when the ScaledObject is created. */
  readonly initialReplicas?: number;
  /** Creation time: the first poll and sync are due then, and initialCooldownPeriod counts from it. */
  readonly createdAtMs: number;
}

export interface ScaleChange {
  readonly atMs: number;
  readonly from: number;
  readonly to: number;
  /** Who wrote the Deployment's replicas: KEDA (0 <-> 1, minimum) or the HPA (1 <-> N). */
  readonly by: 'keda' | 'hpa';
  readonly reason: string;
}

export interface TickResult {
  readonly atMs: number;
  readonly lag: number;
  /** The trigger's activity, when KEDA polled on this tick. */
  readonly active?: boolean;
  readonly replicas: number;
  readonly polled: { readonly keda: boolean; readonly hpa: boolean };
  readonly changes: readonly ScaleChange[];
}

export class Autoscaler {
  readonly spec: ScaledObjectSpec;
  readonly hpa: HpaSettings;
  private current: number;
  private lastActiveAtMs: number | undefined;
  private nextKedaPollAtMs: number;
  private nextHpaSyncAtMs: number;
  /** The HPA's unstabilized recommendations, kept for the stabilization windows (H4, B3). */
  private readonly recommendations: TimedRecommendation[] = [];
  /** The HPA's rescales, for the behavior's rate policies (B4, B6). */
  private readonly scaleEvents: ScaleEvents = { up: [], down: [] };
  private readonly behavior: ResolvedBehavior | undefined;
  private readonly createdAtMs: number;

  constructor(options: AutoscalerOptions) {
    this.spec = { ...KEDA_DEFAULTS, ...options.scaledObject };
    this.hpa = { ...HPA_DEFAULTS, ...options.hpa };
    if (!(this.spec.lagThreshold > 0)) throw new RangeError('lagThreshold must be positive');
    if (this.spec.maxReplicaCount < hpaMinReplicas(this.spec.minReplicaCount)) throw new RangeError('maxReplicaCount is below the HPA minimum');
    this.behavior = this.hpa.behavior ? resolveBehavior(this.hpa.behavior, this.hpa.downscaleStabilizationMs) : undefined;
    this.current = options.initialReplicas ?? 0;
    this.createdAtMs = options.createdAtMs;
    this.nextKedaPollAtMs = options.createdAtMs;
    this.nextHpaSyncAtMs = options.createdAtMs;
  }

  /** The Deployment's spec.replicas as KEDA and the HPA last wrote it. */
  get replicas(): number {
    return this.current;
  }

  /** When the next KEDA poll or HPA sync is due: the caller reads the lag then and calls tick(). */
  nextDueAtMs(): number {
    return Math.min(this.nextKedaPollAtMs, this.nextHpaSyncAtMs);
  }

  /**
   * Runs whichever of the two loops is due at `nowMs` on one lag reading. The HPA goes first so
   * that a Deployment KEDA has just woken from zero waits for the HPA's next sync before scaling
   * out, as it does in a cluster where the two loops are independent.
   */
  tick(lag: number, nowMs: number): TickResult {
    const changes: ScaleChange[] = [];
    const hpaDue = nowMs >= this.nextHpaSyncAtMs;
    const kedaDue = nowMs >= this.nextKedaPollAtMs;
    if (hpaDue) {
      this.nextHpaSyncAtMs = nowMs + this.hpa.syncPeriodMs;
      const change = this.reconcileHpa(lag, nowMs);
      if (change) changes.push(change), (this.current = change.to);
    }
    let active: boolean | undefined;
    if (kedaDue) {
      this.nextKedaPollAtMs = nowMs + this.spec.pollingIntervalMs;
      active = isTriggerActive(lag, this.spec.activationLagThreshold);
      const change = this.pollKeda(active, nowMs);
      if (change) changes.push(change), (this.current = change.to);
    }
    return { atMs: nowMs, lag, ...(active !== undefined ? { active } : {}), replicas: this.current, polled: { keda: kedaDue, hpa: hpaDue }, changes };
  }

  /** KEDA's RequestScale for one poll (K6-K9). */
  private pollKeda(active: boolean, nowMs: number): ScaleChange | undefined {
    const { minReplicaCount } = this.spec;
    const from = this.current;
    if (active) {
      this.lastActiveAtMs = nowMs; // K7
      if (from === 0) return { atMs: nowMs, from, to: hpaMinReplicas(minReplicaCount), by: 'keda', reason: 'trigger active: activation from zero' }; // K6
      return undefined;
    }
    if (from > 0 && minReplicaCount === 0) {
      // K8: "Before" in KEDA, so the cooldown must have fully passed.
      const cooledDown =
        this.lastActiveAtMs === undefined
          ? this.createdAtMs + this.spec.initialCooldownPeriodMs < nowMs
          : this.lastActiveAtMs + this.spec.cooldownPeriodMs < nowMs;
      return cooledDown ? { atMs: nowMs, from, to: 0, by: 'keda', reason: 'trigger inactive for the cooldown period: scale to zero' } : undefined;
    }
    if (from < minReplicaCount) return { atMs: nowMs, from, to: minReplicaCount, by: 'keda', reason: 'trigger inactive, below minReplicaCount' }; // K9
    return undefined;
  }

  /** The HPA's reconcileAutoscaler (H1-H5, or B1-B6 with a behavior). */
  private reconcileHpa(lag: number, nowMs: number): ScaleChange | undefined {
    const from = this.current;
    const min = hpaMinReplicas(this.spec.minReplicaCount);
    const max = this.spec.maxReplicaCount;
    if (from === 0) return undefined; // H3: scaling disabled at zero; KEDA activates
    if (this.recommendations.length === 0) this.recommendations.push({ replicas: from, atMs: nowMs }); // recordInitialRecommendation
    let to: number;
    let reason: string;
    if (from > max) (to = max), (reason = 'above maxReplicaCount');
    else if (from < min) (to = min), (reason = 'below minReplicaCount');
    else {
      const proposed = externalMetricReplicas(lag, this.spec.lagThreshold, from, this.hpa.tolerance);
      let stabilized: number;
      if (this.behavior) {
        stabilized = stabilizeWithBehaviors(this.recommendations, proposed, from, this.behavior, nowMs);
        to = boundByBehaviorRate(from, stabilized, min, max, this.scaleEvents, this.behavior, nowMs);
      } else {
        stabilized = this.stabilize(proposed, nowMs);
        to = boundByHpaRules(from, stabilized, min, max);
      }
      reason = proposed === from ? `lag ${lag} within tolerance of ${from} x ${this.spec.lagThreshold}` : `ceil(lag ${lag} / ${this.spec.lagThreshold}) = ${proposed}`;
      if (stabilized !== proposed) reason += `, held at ${stabilized} by the stabilization window`;
      if (to !== stabilized) reason += `, bounded to ${to}`;
    }
    if (to === from) return undefined;
    if (this.behavior) storeScaleEvent(this.scaleEvents, this.behavior, from, to, nowMs);
    return { atMs: nowMs, from, to, by: 'hpa', reason };
  }

  /** H4: the highest recommendation not older than the window; this one replaces an expired sample. */
  private stabilize(proposed: number, nowMs: number): number {
    const cutoff = nowMs - this.hpa.downscaleStabilizationMs;
    let highest = proposed;
    let expired = -1;
    this.recommendations.forEach((recommendation, index) => {
      if (recommendation.atMs < cutoff) expired = index;
      else highest = Math.max(highest, recommendation.replicas);
    });
    const sample = { replicas: proposed, atMs: nowMs };
    if (expired >= 0) this.recommendations[expired] = sample;
    else this.recommendations.push(sample);
    return highest;
  }
}
