/**
 * Who owns a Pod's volume directory (an emptyDir, a claim's directory) and its mode: the Pod's own
 * user alone, or its fsGroup, wherever the Pod says who that is; world-writable 0777 (what the
 * kubelet gives an emptyDir, and Rancher's local-path provisioner a volume) only where it does
 * not, since then nothing less serves every container. Pure.
 */
import type { Pod } from 'kubernetes-types/core/v1.js';

/** A container's identity, as far as it is known: `gid` may be the image's, unknown here. */
export interface VolumeUser {
  readonly uid: number;
  readonly gid?: number;
}

export interface VolumeAccess {
  readonly uid: number;
  readonly gid: number;
  readonly mode: number;
}

/**
 * The access for a volume mounted by containers running as `users` (undefined for one whose user
 * is unknown: an image's own USER), in a Pod with `fsGroup`. With an fsGroup every container is in
 * that group, so the group gets the volume (rwx, setgid, as the kubelet does for volumes that
 * support ownership); without one, a single user owns it alone (root needs no permission bits).
 * Undefined when only 0777 would serve them all: a user unknown, or two users sharing no group.
 *
 * @example
 * ```ts
 * planVolumeAccess([{ uid: 26, gid: 26 }], 26); // { uid: 26, gid: 26, mode: 0o2770 }
 * planVolumeAccess([{ uid: 26, gid: 26 }], undefined); // { uid: 26, gid: 26, mode: 0o700 }
 * ```
 */
export function planVolumeAccess(
  users: readonly (VolumeUser | undefined)[],
  fsGroup: number | undefined,
): VolumeAccess | undefined {
  const known = users.filter((u): u is VolumeUser => u !== undefined);
  const nonRoot = known.filter((u) => u.uid !== 0);
  const owner = nonRoot[0] ?? known[0] ?? { uid: 0, gid: 0 };
  if (fsGroup !== undefined) return { uid: owner.uid, gid: fsGroup, mode: 0o2770 };
  if (known.length < users.length) return undefined;
  if (new Set(nonRoot.map((u) => u.uid)).size <= 1) return { uid: owner.uid, gid: owner.gid ?? 0, mode: 0o700 };
  const groups = new Set(nonRoot.map((u) => u.gid));
  const [shared] = groups;
  if (groups.size === 1 && shared !== undefined) return { uid: owner.uid, gid: shared, mode: 0o2770 };
  return undefined;
}

/**
 * The access for claim `claimName`'s directory, from the Pod that consumes it: the users its
 * securityContexts name for the containers that mount the claim, and its fsGroup.
 *
 * @example
 * ```ts
 * claimAccess(instancePod, 'db-1-pgdata'); // { uid: 26, gid: 26, mode: 0o2770 } for runAsUser 26, fsGroup 26
 * ```
 */
export function claimAccess(pod: Pod, claimName: string): VolumeAccess | undefined {
  const spec = pod.spec;
  const volumes = new Set(
    (spec?.volumes ?? []).filter((v) => v.persistentVolumeClaim?.claimName === claimName).map((v) => v.name),
  );
  const users = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])]
    .filter((c) => c.volumeMounts?.some((m) => volumes.has(m.name)))
    .map((c): VolumeUser | undefined => {
      const uid = c.securityContext?.runAsUser ?? spec?.securityContext?.runAsUser;
      const gid = c.securityContext?.runAsGroup ?? spec?.securityContext?.runAsGroup;
      if (uid === undefined) return undefined;
      return gid === undefined ? { uid } : { uid, gid };
    });
  return planVolumeAccess(users, spec?.securityContext?.fsGroup);
}
