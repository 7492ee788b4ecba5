/**
 * Which instance-Pod updates wake the PostgresCluster controller. Agents rewrite their report
 * annotation about every 10 s; most rewrites only move `updatedAt` (and LSNs the operator never
 * reads), and a full reconcile for each would be ten of them a minute per instance for nothing.
 * Pure.
 *
 * An update passes when anything the reconcile reads changed: labels (role, instance, set),
 * owner, phase, the Pod IP, deletion, the Ready and PodScheduled conditions, whether a container waits on
 * an image it cannot get, presence of the report, one of
 * `REPORT_FIELDS_READ`, or the report's freshness (a report that had gone stale and is refreshed
 * makes the instance count again). Adds and deletes always pass. A report that goes stale without
 * any update is caught by the controller's periodic requeue, not by an event.
 */
import type { KubeObject } from '@kanri/client';
import type { Predicate } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ANNOTATION_PGBACKREST_KEY } from '../../contract/index.js';
import {
  isReportFresh,
  podReady,
  REPORT_FIELDS_READ,
  REPORT_STALE_AFTER_MS,
  readReport,
  reportObjectsKey,
} from '../cluster-status.js';
import { imageFailures } from './image-availability.js';

export interface InstancePodPredicateOptions {
  /** The clock, in epoch milliseconds. Default `Date.now`. */
  readonly now?: () => number;
  readonly staleAfterMs?: number;
}

const sameRecord = (a: Readonly<Record<string, string>> = {}, b: Readonly<Record<string, string>> = {}) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v);

const owners = (pod: Pod) => (pod.metadata?.ownerReferences ?? []).map((r) => `${r.uid}:${r.controller}`).join(',');

const scheduling = (pod: Pod) => {
  const condition = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  return condition ? `${condition.status}:${condition.reason ?? ''}` : '';
};

/** True when the operator would see a difference between `old` and `pod`. */
export function instancePodChanged(old: Pod, pod: Pod, nowMs: number, staleAfterMs = REPORT_STALE_AFTER_MS): boolean {
  if (!sameRecord(old.metadata?.labels, pod.metadata?.labels)) return true;
  if (owners(old) !== owners(pod)) return true;
  if (old.status?.phase !== pod.status?.phase) return true;
  // A Pod's first IP lets the operator issue its pgBackRest certificate (backups/tls-plan.ts).
  if (old.status?.podIP !== pod.status?.podIP) return true;
  // So does the pgBackRest key its agent publishes (the repo host's too, which has no report).
  if (old.metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY] !== pod.metadata?.annotations?.[ANNOTATION_PGBACKREST_KEY])
    return true;
  if (Boolean(old.metadata?.deletionTimestamp) !== Boolean(pod.metadata?.deletionTimestamp)) return true;
  if (podReady(old) !== podReady(pod)) return true;
  // An unschedulable Pod may be one the scheduler left behind (stuck-pods.ts): look when it becomes one.
  if (scheduling(old) !== scheduling(pod)) return true;
  // The cluster's conditions name an image the node cannot get (image-availability-actions.ts).
  if (imageFailures([old]).length > 0 !== imageFailures([pod]).length > 0) return true;
  const before = readReport(old);
  const after = readReport(pod);
  if (!before || !after) return before !== after;
  const scalarChanged = REPORT_FIELDS_READ.some(
    (field) => typeof after[field] !== 'object' && before[field] !== after[field],
  );
  if (scalarChanged || reportObjectsKey(before) !== reportObjectsKey(after)) return true;
  return isReportFresh(before, nowMs, staleAfterMs) !== isReportFresh(after, nowMs, staleAfterMs);
}

/**
 * The predicate for `.owns('v1', 'Pod', …)`.
 *
 * @example
 * ```ts
 * controller<PostgresCluster>(API_VERSION, KIND).owns('v1', 'Pod', instancePodPredicate());
 * ```
 */
export function instancePodPredicate(options: InstancePodPredicateOptions = {}): Predicate {
  const now = options.now ?? Date.now;
  return (delta) =>
    delta.type !== 'updated' || instancePodChanged(asPod(delta.old), asPod(delta.object), now(), options.staleAfterMs);
}

/** Owned objects of the Pod source are Pods. */
function asPod(object: KubeObject): Pod {
  return object as Pod;
}
