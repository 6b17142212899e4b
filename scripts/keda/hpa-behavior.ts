/**
 * The HPA's rate rules when the ScaledObject sets advanced.horizontalPodAutoscalerConfig.behavior
 * (KEDA copies it into its HPA: controllers/keda/hpa.go:79-84). Then the HPA reconciles through
 * normalizeDesiredReplicasWithBehaviors instead of the legacy rules in replicas.ts (H5):
 *
 *   B1 pkg/apis/autoscaling/v2/defaults.go: a behavior's missing parts are defaulted. scaleUp:
 *      no stabilization, selectPolicy Max, policies 4 Pods / 15 s and 100 Percent / 15 s; scaleDown:
 *      selectPolicy Max, 100 Percent / 15 s, and its window left unset
 *   B2 horizontal.go maybeInitScaleDownStabilizationWindow: an unset scaleDown window is the
 *      controller's --horizontal-pod-autoscaler-downscale-stabilization (5 min)
 *   B3 horizontal.go stabilizeRecommendationWithBehaviors: the current count is raised to the lowest
 *      recommendation of the scale-up window and lowered to the highest of the scale-down window
 *   B4 horizontal.go calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors:
 *      each policy bounds the change from the count at the start of its period (changes made
 *      within the period are undone first); Max picks the policy allowing the biggest change, Min
 *      the smallest, Disabled allows none
 *   B5 horizontal.go convertDesiredReplicasWithBehaviorRate: the stabilized count is bounded by those
 *      limits and by min/max replicas
 *   B6 horizontal.go storeScaleEvent: each rescale is remembered per direction (an event older than
 *      the direction's longest policy period is reused for the next one)
 */

export interface HpaScalingPolicy {
  readonly type: 'Pods' | 'Percent';
  readonly value: number;
  readonly periodSeconds: number;
}

export interface HpaScalingRules {
  readonly stabilizationWindowSeconds?: number;
  readonly selectPolicy?: 'Max' | 'Min' | 'Disabled';
  readonly policies?: readonly HpaScalingPolicy[];
}

/** spec.behavior of an autoscaling/v2 HorizontalPodAutoscaler. */
export interface HpaBehavior {
  readonly scaleUp?: HpaScalingRules;
  readonly scaleDown?: HpaScalingRules;
}

export type ResolvedScalingRules = Required<HpaScalingRules>;

export interface ResolvedBehavior {
  readonly scaleUp: ResolvedScalingRules;
  readonly scaleDown: ResolvedScalingRules;
}

/** B1, B2. */
export function resolveBehavior(behavior: HpaBehavior, downscaleStabilizationMs: number): ResolvedBehavior {
  const up = behavior.scaleUp ?? {};
  const down = behavior.scaleDown ?? {};
  return {
    scaleUp: {
      stabilizationWindowSeconds: up.stabilizationWindowSeconds ?? 0,
      selectPolicy: up.selectPolicy ?? 'Max',
      policies: up.policies ?? [
        { type: 'Pods', value: 4, periodSeconds: 15 },
        { type: 'Percent', value: 100, periodSeconds: 15 },
      ],
    },
    scaleDown: {
      stabilizationWindowSeconds: down.stabilizationWindowSeconds ?? Math.floor(downscaleStabilizationMs / 1000),
      selectPolicy: down.selectPolicy ?? 'Max',
      policies: down.policies ?? [{ type: 'Percent', value: 100, periodSeconds: 15 }],
    },
  };
}

export interface TimedRecommendation {
  replicas: number;
  atMs: number;
}

/** B3; records `desired` among the recommendations (replacing one older than both windows). */
export function stabilizeWithBehaviors(
  recommendations: TimedRecommendation[],
  desired: number,
  current: number,
  behavior: ResolvedBehavior,
  nowMs: number,
): number {
  const upCutoff = nowMs - behavior.scaleUp.stabilizationWindowSeconds * 1000;
  const downCutoff = nowMs - behavior.scaleDown.stabilizationWindowSeconds * 1000;
  let upRecommendation = desired;
  let downRecommendation = desired;
  let expired = -1;
  recommendations.forEach((recommendation, index) => {
    if (recommendation.atMs > upCutoff) upRecommendation = Math.min(recommendation.replicas, upRecommendation);
    if (recommendation.atMs > downCutoff) downRecommendation = Math.max(recommendation.replicas, downRecommendation);
    if (recommendation.atMs < upCutoff && recommendation.atMs < downCutoff) expired = index;
  });
  const sample = { replicas: desired, atMs: nowMs };
  if (expired >= 0) recommendations[expired] = sample;
  else recommendations.push(sample);
  return Math.min(Math.max(current, upRecommendation), downRecommendation);
}

export interface ScaleEvent {
  /** Replicas added (scale-up list) or removed (scale-down list). */
  readonly change: number;
  readonly atMs: number;
}

export interface ScaleEvents {
  readonly up: ScaleEvent[];
  readonly down: ScaleEvent[];
}

/** getReplicasChangePerPeriod: the change within the last periodSeconds. */
function changeInPeriod(events: readonly ScaleEvent[], periodSeconds: number, nowMs: number): number {
  const cutoff = nowMs - periodSeconds * 1000;
  return events.filter((event) => event.atMs > cutoff).reduce((sum, event) => sum + event.change, 0);
}

function periodStartReplicas(current: number, events: ScaleEvents, periodSeconds: number, nowMs: number): number {
  return current - changeInPeriod(events.up, periodSeconds, nowMs) + changeInPeriod(events.down, periodSeconds, nowMs);
}

/** B4, scaling up: the most replicas the policies allow now. */
export function scaleUpLimit(current: number, events: ScaleEvents, rules: ResolvedScalingRules, nowMs: number): number {
  if (rules.selectPolicy === 'Disabled') return current;
  const proposals = rules.policies.map((policy) => {
    const start = periodStartReplicas(current, events, policy.periodSeconds, nowMs);
    // Rounded up, or a small Percent policy could never add a pod.
    return policy.type === 'Pods' ? start + policy.value : Math.ceil(start * (1 + policy.value / 100));
  });
  return rules.selectPolicy === 'Min' ? Math.min(...proposals) : Math.max(...proposals);
}

/** B4, scaling down: the fewest replicas the policies allow now. */
export function scaleDownLimit(current: number, events: ScaleEvents, rules: ResolvedScalingRules, nowMs: number): number {
  if (rules.selectPolicy === 'Disabled') return current;
  const proposals = rules.policies.map((policy) => {
    const start = periodStartReplicas(current, events, policy.periodSeconds, nowMs);
    return policy.type === 'Pods' ? start - policy.value : Math.trunc(start * (1 - policy.value / 100));
  });
  // Min is the smallest change, so the highest count; Max the biggest change, the lowest count.
  return rules.selectPolicy === 'Min' ? Math.max(...proposals) : Math.min(...proposals);
}

/** B5. */
export function boundByBehaviorRate(
  current: number,
  desired: number,
  minReplicas: number,
  maxReplicas: number,
  events: ScaleEvents,
  behavior: ResolvedBehavior,
  nowMs: number,
): number {
  if (desired > current) {
    const limit = Math.max(scaleUpLimit(current, events, behavior.scaleUp, nowMs), current);
    return Math.min(desired, maxReplicas, limit);
  }
  if (desired < current) {
    const limit = Math.min(scaleDownLimit(current, events, behavior.scaleDown, nowMs), current);
    return Math.max(desired, minReplicas, limit);
  }
  return desired;
}

/** B6. */
export function storeScaleEvent(events: ScaleEvents, behavior: ResolvedBehavior, from: number, to: number, nowMs: number): void {
  const up = to > from;
  const list = up ? events.up : events.down;
  const rules = up ? behavior.scaleUp : behavior.scaleDown;
  const longestPeriodMs = Math.max(0, ...rules.policies.map((policy) => policy.periodSeconds)) * 1000;
  const event = { change: Math.abs(to - from), atMs: nowMs };
  let outdated = -1;
  list.forEach((existing, index) => {
    if (existing.atMs < nowMs - longestPeriodMs) outdated = index;
  });
  if (outdated >= 0) list[outdated] = event;
  else list.push(event);
}
