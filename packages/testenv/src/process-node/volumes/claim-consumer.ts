/**
 * The Pod a WaitForFirstConsumer claim is provisioned for, and handing its new directory to that
 * Pod's user: real nodes' kubelets apply no fsGroup to hostPath volumes, so the directory must be
 * the Pod's before it starts.
 */
import { chmod, chown } from 'node:fs/promises';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { type Api, encode } from '../api.js';
import { claimAccess } from './volume-access.js';

/** Set by the scheduler on a WaitForFirstConsumer claim once it placed a Pod that consumes it. */
export const SELECTED_NODE = 'volume.kubernetes.io/selected-node';

/** The Pod a claim waits for: one in its namespace that mounts it and has not finished. */
export async function consumerOf(api: Api, claim: PersistentVolumeClaim): Promise<Pod | undefined> {
  const namespace = claim.metadata?.namespace ?? 'default';
  const pods = await api.list<Pod>(`/api/v1/namespaces/${encode(namespace)}/pods`);
  return pods.find(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed' &&
      p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim.metadata?.name),
  );
}

/**
 * Sets the directory's owner and mode: root's alone until a process node mounts it (no
 * `consumer`), else its consumer's user's, or 0777 where that Pod names no user.
 */
export async function giveTo(path: string, consumer: Pod | undefined, claim: PersistentVolumeClaim): Promise<void> {
  const access = consumer && claimAccess(consumer, claim.metadata?.name ?? '');
  if (access) await chown(path, access.uid, access.gid);
  // mkdir's mode is masked by the umask; chmod is not.
  await chmod(path, access?.mode ?? (consumer ? 0o777 : 0o700));
}
