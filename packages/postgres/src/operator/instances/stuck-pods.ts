/**
 * Instance Pods the scheduler has left behind: marked unschedulable because a data volume claim
 * was not bound yet (the operator creates the claim and the Pod together; an Immediate class binds
 * it a moment later), and not retried once it was. The scheduler should requeue such a Pod when
 * the claim binds, but under load it sometimes does not, and then waits for its periodic flush of
 * unschedulable Pods (five minutes). CI saw a replica Pending that long with its claim bound. A
 * Pod that never ran is cheap to replace, and a new one is scheduled at once. Pure.
 */
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';

/** Longer than the scheduler's longest backoff (10 s), so a Pod it is about to retry is left alone. */
export const STUCK_AFTER_MS = 20_000;

export interface StuckPods {
  /** Pods to delete (and create again), each with why. */
  readonly stuck: readonly { readonly pod: Pod; readonly why: string }[];
  /** When to look again for a Pod that may become stuck; undefined when none may. */
  readonly recheckInMs?: number;
}

/**
 * @example
 * ```ts
 * const { stuck, recheckInMs } = podsStuckOnBoundClaims(pods, claims, Date.now());
 * ```
 */
export function podsStuckOnBoundClaims(
  pods: readonly Pod[],
  claims: readonly PersistentVolumeClaim[],
  nowMs: number,
  afterMs = STUCK_AFTER_MS,
): StuckPods {
  const bound = new Set(claims.filter((c) => c.status?.phase === 'Bound').map((c) => c.metadata?.name));
  const stuck: { pod: Pod; why: string }[] = [];
  let recheckInMs: number | undefined;
  for (const pod of pods) {
    if (pod.spec?.nodeName || pod.metadata?.deletionTimestamp) continue;
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status !== 'False' || scheduled.reason !== 'Unschedulable') continue;
    if (!/PersistentVolumeClaim/i.test(scheduled.message ?? '')) continue;
    const wanted = (pod.spec?.volumes ?? []).flatMap((v) => v.persistentVolumeClaim?.claimName ?? []);
    if (wanted.length === 0 || !wanted.every((name) => bound.has(name))) continue;
    const since = Date.parse(scheduled.lastTransitionTime ?? '');
    const waited = Number.isNaN(since) ? afterMs : nowMs - since;
    if (waited >= afterMs) {
      const seconds = Math.round(waited / 1000);
      stuck.push({
        pod,
        why: `${pod.metadata?.name} has been unschedulable for ${seconds} s on "${scheduled.message}", but its claims (${wanted.join(', ')}) are bound now`,
      });
    } else {
      recheckInMs = Math.min(recheckInMs ?? Number.POSITIVE_INFINITY, afterMs - waited);
    }
  }
  return recheckInMs === undefined ? { stuck } : { stuck, recheckInMs };
}
