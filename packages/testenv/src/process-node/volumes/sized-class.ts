/**
 * The StorageClass of sized volumes, and how the provisioner tells its classes apart: by the
 * `kanri.dev/volume` parameter, which every consumer of the class can read too. Pure.
 */

import type { SizedVolumeBackend } from './host-mounts/sized-support.js';
import { PROVISIONER_NAME } from './provisioner-name.js';

/**
 * The sized volumes' StorageClass: each claim gets a filesystem of its own size, ext4 on a loop
 * device or a tmpfs (see `SizedVolumeBackend`).
 */
export const SIZED_STORAGE_CLASS = 'kanri-sized';

/** The StorageClass parameter that says what a claim of the class gets. */
export const VOLUME_KIND_PARAMETER = 'kanri.dev/volume';

/**
 * The PersistentVolume annotation that records a sized volume's backend (`ext4-loop` or `tmpfs`),
 * so growing and releasing it never depend on what the machine would choose now.
 */
export const VOLUME_BACKEND_ANNOTATION = 'kanri.dev/volume-backend';

/**
 * `directory`: a plain directory (no size of its own); `loop`: a sized volume of its own
 * filesystem, mounted (the name is older than its second backend, tmpfs).
 */
export type VolumeKind = 'directory' | 'loop';

/**
 * The sized volumes' StorageClass: same provisioner as the default class, not the default,
 * expandable, with `kanri.dev/volume: loop`.
 *
 * @example
 * ```ts
 * buildSizedStorageClass('kanri-sized').parameters; // { 'kanri.dev/volume': 'loop' }
 * ```
 */
export function buildSizedStorageClass(name: string, waitForConsumer = false): Record<string, unknown> {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: PROVISIONER_NAME,
    parameters: { [VOLUME_KIND_PARAMETER]: 'loop' },
    reclaimPolicy: 'Delete',
    volumeBindingMode: waitForConsumer ? 'WaitForFirstConsumer' : 'Immediate',
    allowVolumeExpansion: true,
  };
}

/**
 * What a claim of a class with these parameters gets: `loop` only where the class says so, so
 * the default class (no parameters) keeps its directories.
 *
 * @example
 * ```ts
 * volumeKindOf({ 'kanri.dev/volume': 'loop' }); // 'loop'
 * volumeKindOf(undefined); // 'directory'
 * ```
 */
export function volumeKindOf(parameters: Readonly<Record<string, string>> | undefined): VolumeKind {
  return parameters?.[VOLUME_KIND_PARAMETER] === 'loop' ? 'loop' : 'directory';
}

/**
 * The backend of a sized volume from its PersistentVolume's annotations: `tmpfs` where recorded,
 * else `ext4-loop` (the only backend before the annotation existed). Pure.
 *
 * @example
 * ```ts
 * backendOfVolume({ 'kanri.dev/volume-backend': 'tmpfs' }); // 'tmpfs'
 * backendOfVolume(undefined); // 'ext4-loop'
 * ```
 */
export function backendOfVolume(annotations: Readonly<Record<string, string>> | undefined): SizedVolumeBackend {
  return annotations?.[VOLUME_BACKEND_ANNOTATION] === 'tmpfs' ? 'tmpfs' : 'ext4-loop';
}
