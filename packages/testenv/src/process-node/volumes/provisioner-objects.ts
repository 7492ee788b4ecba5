/**
 * The objects the local provisioner writes: its default StorageClass and the PersistentVolume of
 * each claim, and what such a volume is, read back from the volume alone. Pure.
 */
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { SizedVolumeBackend } from './host-mounts/sized-support.js';
import { PROVISIONED_BY, PROVISIONER_NAME } from './provisioner-name.js';
import { VOLUME_BACKEND_ANNOTATION, VOLUME_KIND_PARAMETER, type VolumeKind } from './sized-class.js';

/** The default StorageClass, annotated as the cluster default. Pure. */
export function buildStorageClass(name: string, waitForConsumer = false): Record<string, unknown> {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name, annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    provisioner: PROVISIONER_NAME,
    reclaimPolicy: 'Delete',
    volumeBindingMode: waitForConsumer ? 'WaitForFirstConsumer' : 'Immediate',
    allowVolumeExpansion: true,
  };
}

/** How a sized volume differs from a directory in its PersistentVolume. */
export interface SizedVolumeSpec {
  /** Its real size, e.g. `96Mi` for a request of `100M`. */
  readonly capacity: string;
  /** What it is made of; recorded as annotation `kanri.dev/volume-backend`. */
  readonly backend: SizedVolumeBackend;
}

/**
 * The PersistentVolume for a claim, pre-bound to it: a directory (`hostPath` DirectoryOrCreate,
 * the request as capacity), or with `sized` a mounted sized volume (`hostPath` Directory, which
 * must be there, its size as capacity, annotated `kanri.dev/volume: loop` and
 * `kanri.dev/volume-backend: <backend>`). Pure.
 */
export function buildVolumeForClaim(
  claim: PersistentVolumeClaim,
  storageClassName: string,
  path: string,
  sized?: SizedVolumeSpec,
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${claim.metadata?.uid}`,
      annotations: {
        [PROVISIONED_BY]: PROVISIONER_NAME,
        ...(sized ? { [VOLUME_KIND_PARAMETER]: 'loop', [VOLUME_BACKEND_ANNOTATION]: sized.backend } : {}),
      },
    },
    spec: {
      capacity: { storage: sized?.capacity ?? claim.spec?.resources?.requests?.storage ?? '1Gi' },
      accessModes: claim.spec?.accessModes?.length ? claim.spec.accessModes : ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName,
      volumeMode: claim.spec?.volumeMode ?? 'Filesystem',
      hostPath: { path, type: sized ? 'Directory' : 'DirectoryOrCreate' },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata?.namespace,
        name: claim.metadata?.name,
        uid: claim.metadata?.uid,
      },
    },
  };
}

/**
 * What a volume of this provisioner is, from its PersistentVolume alone: its class may be gone by
 * the time it is grown or released.
 */
export const kindOfVolume = (volume: PersistentVolume): VolumeKind =>
  volume.metadata?.annotations?.[VOLUME_KIND_PARAMETER] === 'loop' ? 'loop' : 'directory';
