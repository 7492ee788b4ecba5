/** Events about a claim, as provisioners and resizers report to `kubectl describe pvc`. Pure. */
import type { Event, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { PROVISIONER_NAME } from './provisioner-name.js';

export interface ClaimEventInput {
  readonly type: 'Normal' | 'Warning';
  /** `ProvisioningFailed`, `Resizing`, `VolumeResizeSuccessful`, `VolumeResizeFailed`, … */
  readonly reason: string;
  readonly message: string;
}

/**
 * A core/v1 Event about `claim`, named `<claim>.<suffix>` (`suffix`: lowercase hex, unique per
 * event), reported by the provisioner.
 *
 * @example
 * ```ts
 * buildClaimEvent(claim, { type: 'Warning', reason: 'VolumeResizeFailed', message: 'resize2fs: …' }, new Date(), '18c2f0a1');
 * ```
 */
export function buildClaimEvent(
  claim: PersistentVolumeClaim,
  input: ClaimEventInput,
  now: Date,
  suffix: string,
): Event {
  const time = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${claim.metadata?.name}.${suffix}`, namespace: claim.metadata?.namespace },
    involvedObject: {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: claim.metadata?.namespace,
      name: claim.metadata?.name,
      uid: claim.metadata?.uid,
      resourceVersion: claim.metadata?.resourceVersion,
    },
    type: input.type,
    reason: input.reason,
    message: input.message,
    source: { component: PROVISIONER_NAME },
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}
