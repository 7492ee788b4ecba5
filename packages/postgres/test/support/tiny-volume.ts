/**
 * A size-limited data volume for one instance: a tmpfs of `mib` MiB mounted (as root) under a
 * directory of the test's own, offered as a PersistentVolume of its own StorageClass name and
 * pre-bound to the instance's claim, so that the process node hands exactly that directory to
 * exactly that Pod. `remove` unmounts it and deletes the directory; call it after the Pods stopped.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient, KubeObject } from '@kanri/client';

export interface TinyVolume {
  readonly path: string;
  readonly storageClassName: string;
  /** Resizes the tmpfs (a bigger size gives the instance room again). */
  resize(mib: number): void;
  remove(): void;
}

export async function createTinyVolume(
  client: KubeClient,
  options: { readonly claim: string; readonly mib: number; readonly storageClassName: string },
): Promise<TinyVolume> {
  const root = mkdtempSync(join(tmpdir(), 'kanri-tiny-'));
  // The agent runs as postgres: it must pass through to the mount.
  chmodSync(root, 0o711);
  const path = join(root, 'volume');
  mkdirSync(path);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${options.mib}m,mode=0700`, 'tmpfs', path]);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  let mounted = true;
  try {
    await client.resource<KubeObject>('v1', 'PersistentVolume').create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `${options.claim}-tiny` },
      spec: {
        capacity: { storage: `${options.mib}Mi` },
        accessModes: ['ReadWriteOnce'],
        // Retain: nobody but this helper touches the mount's contents.
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: options.storageClassName,
        hostPath: { path, type: 'Directory' },
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: options.claim },
      },
    } as KubeObject);
  } catch (error) {
    execFileSync('umount', ['--lazy', path]);
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return {
    path,
    storageClassName: options.storageClassName,
    resize(mib) {
      execFileSync('mount', ['-o', `remount,size=${mib}m`, path]);
    },
    remove() {
      if (mounted) execFileSync('umount', ['--lazy', path]);
      mounted = false;
      rmSync(root, { recursive: true, force: true });
    },
  };
}
