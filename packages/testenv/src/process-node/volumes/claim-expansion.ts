/**
 * Expansion of bound claims by the local provisioner, as the external-resizer and the kubelet
 * would do it: a claim that asks for more than its volume holds (`planExpansion`) gets its volume
 * grown online (ext4: image, loop device, `resize2fs` on the mounted filesystem; tmpfs:
 * `mount -o remount,size=…`; a directory needs nothing), then the PersistentVolume's capacity and
 * the claim's status record it (see `resize-status.ts`). A failed expansion is reported on the
 * claim and tried again on a later sync, after a backoff.
 */
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { encode, kubeTime } from '../api.js';
import { type ExpansionStep, planExpansion } from './expansion-plan.js';
import { growLoopVolume, loopVolumePaths } from './host-mounts/loop-volume.js';
import { isWithin } from './host-mounts/mount-table.js';
import { growTmpfsVolume } from './host-mounts/tmpfs-volume.js';
import { PROVISIONED_BY, PROVISIONER_NAME } from './provisioner-name.js';
import { kindOfVolume } from './provisioner-objects.js';
import {
  resizeFailedStatus,
  resizeFinishedAnnotations,
  resizeFinishedStatus,
  resizeStarted,
  resizeStartedAnnotations,
  resizeStartedStatus,
} from './resize-status.js';
import { backendOfVolume, type VolumeKind } from './sized-class.js';
import { claimName, claimPath, messageOf, type ServedClass, type SyncContext } from './sync-context.js';

/**
 * Takes each claim bound to a volume of this provisioner one step towards the size it asks for.
 * A failure is logged and reported on the claim, never thrown: one claim's failure must not hold
 * up the others, nor the release of volumes after it.
 */
export async function expandClaims(
  context: SyncContext,
  claims: readonly PersistentVolumeClaim[],
  volumes: readonly PersistentVolume[],
  served: ReadonlyMap<string, ServedClass>,
): Promise<void> {
  const byUid = new Map(claims.map((c) => [c.metadata?.uid, c]));
  for (const volume of volumes) {
    if (context.signal.aborted) return;
    if (volume.metadata?.annotations?.[PROVISIONED_BY] !== PROVISIONER_NAME) continue;
    const claim = byUid.get(volume.spec?.claimRef?.uid);
    if (!claim) continue;
    const kind = kindOfVolume(volume);
    const sc = served.get(volume.spec?.storageClassName ?? '');
    const step = planExpansion({ claim, volume, kind, allowVolumeExpansion: sc?.allowVolumeExpansion === true });
    if (step.kind === 'none') continue;
    const key = `expand/${claim.metadata?.uid}`;
    if (context.backoff.waiting(key, Date.now())) continue;
    const started = Date.now();
    try {
      if (step.kind === 'expand') await grow(context, claim, volume, kind, step);
      else await finishResize(context, claim, step.capacity);
      context.backoff.succeeded(key);
    } catch (error) {
      const delay = context.retryLater(key);
      const what = step.kind === 'expand' ? `from ${step.from} to ${step.to}` : `(recording ${step.capacity})`;
      const message = messageOf(error);
      context.log(
        `expansion of ${claimName(claim)} (${volume.metadata?.name}) ${what} failed after ${Date.now() - started} ms: ${message}; retrying in ${delay / 1000} s`,
      );
      await reportResizeFailure(context, claim, message);
    }
  }
}

/** One expansion, as the external-resizer (and, for a sized volume, the kubelet's resize2fs) would do it. */
async function grow(
  context: SyncContext,
  claim: PersistentVolumeClaim,
  volume: PersistentVolume,
  kind: VolumeKind,
  step: Extract<ExpansionStep, { kind: 'expand' }>,
): Promise<void> {
  const { api, volumesDir } = context;
  const name = volume.metadata?.name ?? '';
  const started = Date.now();
  let current = claim;
  // A retry resumes a resize already marked started: marking it again would be a new Event each time.
  if (!resizeStarted(current, step.request)) {
    current = await api.patch<PersistentVolumeClaim>(claimPath(current), resizeStartedAnnotations(PROVISIONER_NAME));
    current = await api.patch<PersistentVolumeClaim>(
      `${claimPath(current)}/status`,
      resizeStartedStatus(current, step.request, kubeTime()),
    );
    await context.event(current, {
      type: 'Normal',
      reason: 'Resizing',
      message: `External resizer is resizing volume ${name}`,
    });
  }
  if (kind === 'loop') {
    const path = volume.spec?.hostPath?.path ?? '';
    // The PersistentVolume is the API's, not ours: never grow what lies outside our directory.
    if (!isWithin(path, volumesDir) || path === volumesDir)
      throw new Error(`${path} is not a volume of this provisioner`);
    if (backendOfVolume(volume.metadata?.annotations) === 'tmpfs') {
      await growTmpfsVolume(path, step.toBytes, context.mountNamespaces());
    } else {
      await growLoopVolume(loopVolumePaths(path), step.toBytes);
    }
  }
  await api.patch(`/api/v1/persistentvolumes/${encode(name)}`, { spec: { capacity: { storage: step.to } } });
  await finishResize(context, current, step.to);
  context.log(
    `expanded ${claimName(claim)} (${name}${kind === 'loop' ? `, ${backendOfVolume(volume.metadata?.annotations)}, online` : ''}) from ${step.from} to ${step.to} in ${Date.now() - started} ms`,
  );
}

/** Records on the claim that its volume now holds `capacity`: the resize is over. */
async function finishResize(context: SyncContext, claim: PersistentVolumeClaim, capacity: string): Promise<void> {
  const { api } = context;
  const done = await api.patch<PersistentVolumeClaim>(
    `${claimPath(claim)}/status`,
    resizeFinishedStatus(claim, capacity),
  );
  await api.patch(claimPath(done), resizeFinishedAnnotations());
  await context.event(done, { type: 'Normal', reason: 'VolumeResizeSuccessful', message: 'Resize volume succeeded' });
}

/** The claim says why its resize failed (`ControllerResizeError`), and an Event says it too. */
async function reportResizeFailure(context: SyncContext, claim: PersistentVolumeClaim, message: string): Promise<void> {
  const { api } = context;
  try {
    // The claim may have changed since the list (a step that failed halfway patched it).
    const latest = (await api.get<PersistentVolumeClaim>(claimPath(claim))) ?? claim;
    await api.patch(`${claimPath(latest)}/status`, resizeFailedStatus(latest, message, kubeTime()));
  } catch (error) {
    context.log(`provisioner: recording the failed expansion on ${claimName(claim)}: ${messageOf(error)}`);
  }
  await context.event(claim, { type: 'Warning', reason: 'VolumeResizeFailed', message });
}
