/**
 * The claim fields a resize writes, as the external-resizer writes them for a CSI driver that
 * expands in the controller alone (Kubernetes 1.34, RecoverVolumeExpansionFailure GA): JSON merge
 * patches for the claim and its `status` subresource. Pure.
 *
 * Started: annotation `volume.kubernetes.io/storage-resizer` (kube-controller-manager's expand
 * controller hands a claim to an external resizer with it), condition `Resizing`,
 * `allocatedResources.storage` = the request, `allocatedResourceStatuses.storage` =
 * `ControllerResizeInProgress`. Finished: `capacity.storage` = the new size, every resize
 * condition and `allocatedResourceStatuses.storage` gone, `allocatedResources` kept, annotation
 * `volume.kubernetes.io/node-expansion-not-required: "true"` (no kubelet step follows). Failed:
 * condition `ControllerResizeError` with the reason, the rest as it was, so the next try resumes.
 */
import type { PersistentVolumeClaim, PersistentVolumeClaimCondition } from 'kubernetes-types/core/v1.js';
import { RESIZE_CONDITIONS } from './expansion-plan.js';

/** Names the resizer of a claim (a CSI driver's name; here the provisioner's). */
export const STORAGE_RESIZER_ANNOTATION = 'volume.kubernetes.io/storage-resizer';
/** Set by the external-resizer when the controller's expansion finished the resize. */
export const NODE_EXPANSION_NOT_REQUIRED_ANNOTATION = 'volume.kubernetes.io/node-expansion-not-required';
const IN_PROGRESS = 'ControllerResizeInProgress';

/** The claim's conditions without resize ones, plus `added` (the external-resizer's merge). */
function withResizeConditions(
  claim: PersistentVolumeClaim,
  added: readonly PersistentVolumeClaimCondition[],
  keepOld: boolean,
): PersistentVolumeClaimCondition[] {
  const replaced = new Set(added.map((c) => c.type));
  const kept = (claim.status?.conditions ?? []).filter(
    (c) => !RESIZE_CONDITIONS.includes(c.type) || (keepOld && !replaced.has(c.type)),
  );
  return [...kept, ...added];
}

/** True when a resize to `request` was already marked started (a retry need not mark it again). */
export function resizeStarted(claim: PersistentVolumeClaim, request: string): boolean {
  return (
    claim.status?.allocatedResourceStatuses?.storage === IN_PROGRESS &&
    claim.status?.allocatedResources?.storage === request &&
    claim.metadata?.annotations?.[STORAGE_RESIZER_ANNOTATION] !== undefined
  );
}

/**
 * The claim's metadata when a resize starts: its resizer named, and the finished mark of an
 * earlier resize removed.
 *
 * @example
 * ```ts
 * resizeStartedAnnotations('kanri.dev/process-node');
 * // { metadata: { annotations: { 'volume.kubernetes.io/storage-resizer': 'kanri.dev/process-node', 'volume.kubernetes.io/node-expansion-not-required': null } } }
 * ```
 */
export function resizeStartedAnnotations(resizer: string): Record<string, unknown> {
  return {
    metadata: {
      annotations: { [STORAGE_RESIZER_ANNOTATION]: resizer, [NODE_EXPANSION_NOT_REQUIRED_ANNOTATION]: null },
    },
  };
}

/** The claim's metadata once a resize finished: no kubelet step follows. */
export function resizeFinishedAnnotations(): Record<string, unknown> {
  return { metadata: { annotations: { [NODE_EXPANSION_NOT_REQUIRED_ANNOTATION]: 'true' } } };
}

/**
 * The `status` patch when a resize to `request` starts, guarded by the claim's resourceVersion.
 *
 * @example
 * ```ts
 * resizeStartedStatus(claim, '2Gi', '2026-12-07T10:00:00Z').status;
 * // { conditions: [{ type: 'Resizing', status: 'True', … }], allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } }
 * ```
 */
export function resizeStartedStatus(
  claim: PersistentVolumeClaim,
  request: string,
  now: string,
): Record<string, unknown> {
  return {
    metadata: { resourceVersion: claim.metadata?.resourceVersion },
    status: {
      conditions: withResizeConditions(claim, [{ type: 'Resizing', status: 'True', lastTransitionTime: now }], false),
      allocatedResources: { storage: request },
      allocatedResourceStatuses: { storage: IN_PROGRESS },
    },
  };
}

/** The `status` patch once the volume holds `capacity`: the resize is over. */
export function resizeFinishedStatus(claim: PersistentVolumeClaim, capacity: string): Record<string, unknown> {
  return {
    metadata: { resourceVersion: claim.metadata?.resourceVersion },
    status: {
      capacity: { storage: capacity },
      conditions: withResizeConditions(claim, [], false),
      allocatedResourceStatuses: { storage: null },
    },
  };
}

/**
 * The `status` patch after a failed try: `ControllerResizeError` says why; what was started stays,
 * so the next sync tries again. Not guarded: the reason must land even on a claim changed meanwhile.
 */
export function resizeFailedStatus(
  claim: PersistentVolumeClaim,
  message: string,
  now: string,
): Record<string, unknown> {
  const previous = claim.status?.conditions?.find((c) => c.type === 'ControllerResizeError');
  const text = `failed to expand pvc with ${message}`;
  const condition: PersistentVolumeClaimCondition = {
    type: 'ControllerResizeError',
    status: 'True',
    // The same failure again is no transition.
    lastTransitionTime: previous?.message === text ? (previous.lastTransitionTime ?? now) : now,
    message: text,
  };
  return { status: { conditions: withResizeConditions(claim, [condition], true) } };
}
