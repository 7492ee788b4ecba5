/**
 * Release of the local provisioner's volumes whose claim is gone: with reclaim policy Delete, a
 * Released volume loses its mount (and a loop volume its device and image), its directory and
 * its PersistentVolume. A failure is logged and tried again on the next sync.
 */
import { rm } from 'node:fs/promises';
import type { PersistentVolume } from 'kubernetes-types/core/v1.js';
import { encode } from '../api.js';
import { loopVolumePaths, releaseLoopVolume } from './host-mounts/loop-volume.js';
import { isWithin } from './host-mounts/mount-table.js';
import { releaseTmpfsVolume } from './host-mounts/tmpfs-volume.js';
import { PROVISIONED_BY, PROVISIONER_NAME } from './provisioner-name.js';
import { kindOfVolume } from './provisioner-objects.js';
import { backendOfVolume } from './sized-class.js';
import { messageOf, type SyncContext } from './sync-context.js';

/**
 * Deletes every Released volume of this provisioner whose reclaim policy is Delete. Only a path
 * inside the volumes directory is unmounted or removed: the PersistentVolume is the API's and
 * could name any path; one outside still has its PersistentVolume deleted.
 */
export async function releaseVolumes(context: SyncContext, volumes: readonly PersistentVolume[]): Promise<void> {
  const { api, volumesDir } = context;
  for (const volume of volumes) {
    if (context.signal.aborted) return;
    if (volume.metadata?.annotations?.[PROVISIONED_BY] !== PROVISIONER_NAME) continue;
    if (volume.spec?.persistentVolumeReclaimPolicy !== 'Delete' || volume.status?.phase !== 'Released') continue;
    const path = volume.spec.hostPath?.path;
    const ours = path !== undefined && path !== volumesDir && isWithin(path, volumesDir);
    try {
      if (ours && kindOfVolume(volume) === 'loop') {
        const pids = context.mountNamespaces();
        if (backendOfVolume(volume.metadata?.annotations) === 'tmpfs') await releaseTmpfsVolume(path, pids);
        else await releaseLoopVolume(loopVolumePaths(path), pids);
      }
      if (ours) await rm(path, { recursive: true, force: true });
      await api.delete(`/api/v1/persistentvolumes/${encode(volume.metadata?.name ?? '')}`);
      context.log(`deleted released volume ${volume.metadata?.name}`);
    } catch (error) {
      context.log(`releasing ${volume.metadata?.name} failed: ${messageOf(error)}; retrying on the next sync`);
    }
  }
}
