/**
 * A sized volume on disk: a sparse image file, an ext4 filesystem in it (no reserved blocks), a
 * loop device over it, mounted on the volume's directory. It grows online (the image, then the
 * device, then the mounted filesystem) and is released by path: mounts at its directory, devices
 * whose backing file is its image. Nothing is ever found by a process's or device's name.
 */
import { mkdir, open, realpath, rm, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { listLoopDevices, loopsBackedBy, loopsBackedWithin } from './loop-devices.js';
import { mountsWithin, readMounts, topMountAt } from './mount-table.js';
import { runTool as run, unmount, unmountAll } from './run-tool.js';

const MIB = 1n << 20n;

export interface LoopVolumePaths {
  /** The image file, beside the mount point (`<dir>.img`). */
  readonly image: string;
  /** The volume's directory: the PersistentVolume's hostPath. */
  readonly mountPoint: string;
}

/** The image of a sized volume mounted on `mountPoint`. */
export const loopVolumePaths = (mountPoint: string): LoopVolumePaths => ({ image: `${mountPoint}.img`, mountPoint });

/**
 * Makes the sized volume of `paths` (`bytes`, a whole number of MiB) and mounts it, unless it is
 * already mounted from its image (a sync that saw the claim twice). Leftovers of an attempt that
 * failed halfway are released first; a failure now releases what it made before it throws.
 * Returns the loop device.
 */
export async function ensureLoopVolume(paths: LoopVolumePaths, bytes: bigint): Promise<string> {
  const top = topMountAt(await readMounts(), paths.mountPoint);
  const devices = loopsBackedBy(await listLoopDevices(), paths.image);
  if (top && devices.some((d) => d.device === top.source)) return top.source;
  await releaseLoopVolume(paths, []);
  if (bytes % MIB !== 0n) throw new Error(`a sized volume is whole MiB, not ${bytes} bytes`);
  await mkdir(paths.mountPoint, { recursive: true });
  try {
    const image = await open(paths.image, 'wx', 0o600);
    try {
      await image.truncate(Number(bytes)); // sparse: no block is written
    } finally {
      await image.close();
    }
    await run('mkfs.ext4', ['-q', '-F', '-m', '0', paths.image]);
    const device = (await run('losetup', ['--find', '--show', paths.image])).trim();
    await run('mount', ['-t', 'ext4', device, paths.mountPoint]);
    return device;
  } catch (error) {
    await releaseLoopVolume(paths, []).catch(() => {});
    throw error;
  }
}

/**
 * Mounts the volume in the mount namespaces of `pids` where it is not mounted yet: a real node's
 * namespace is a private copy of the machine's made before the volume existed, so the machine's
 * mount never reaches it. The same device mounted again is the same filesystem (one superblock),
 * so a resize shows everywhere.
 */
export async function mountInNamespaces(paths: LoopVolumePaths, device: string, pids: readonly number[]) {
  for (const pid of pids) {
    const mounts = await readMounts(pid).catch(() => undefined);
    if (!mounts || topMountAt(mounts, paths.mountPoint)?.source === device) continue;
    await run('mount', ['-t', 'ext4', device, paths.mountPoint], pid);
  }
}

/**
 * Grows the mounted volume to `bytes` without unmounting it: the image (never shrunk), the loop
 * device's size (`losetup --set-capacity`), then the filesystem (`resize2fs`, online). Each step
 * is a no-op when done, so a retry after a failure resumes.
 */
export async function growLoopVolume(paths: LoopVolumePaths, bytes: bigint): Promise<void> {
  const top = topMountAt(await readMounts(), paths.mountPoint);
  const devices = loopsBackedBy(await listLoopDevices(), paths.image);
  const device = devices.find((d) => d.device === top?.source)?.device;
  if (!device) throw new Error(`${paths.mountPoint} is not mounted from ${paths.image}; cannot grow it online`);
  if (BigInt((await stat(paths.image)).size) < bytes) {
    const image = await open(paths.image, 'r+');
    try {
      await image.truncate(Number(bytes));
    } finally {
      await image.close();
    }
  }
  for (const { device: each } of devices) await run('losetup', ['--set-capacity', each]);
  await run('resize2fs', [device]);
}

/**
 * Releases a sized volume: unmounts it in the namespaces of `pids` and here, detaches every loop
 * device over its image and removes the image. The directory stays (empty once unmounted); this
 * throws rather than leave it mounted, so a caller never deletes through a mount.
 */
export async function releaseLoopVolume(paths: LoopVolumePaths, pids: readonly number[]): Promise<void> {
  for (const pid of pids) {
    // A node that stopped meanwhile took its mounts with it.
    await unmountAll(paths.mountPoint, pid).catch(() => {});
  }
  await unmountAll(paths.mountPoint);
  for (const { device } of loopsBackedBy(await listLoopDevices(), paths.image)) {
    await run('losetup', ['--detach', device]);
  }
  await rm(paths.image, { force: true });
}

export interface ReleasedWithin {
  readonly unmounted: readonly string[];
  readonly detached: readonly string[];
  /** Mount points that are still mounted: the directory must not be deleted. */
  readonly stillMounted: readonly string[];
}

/**
 * Releases every sized volume under `dir` by path alone, of either backend: unmounts each mount
 * at or below it (deepest first: an ext4 volume's, a tmpfs volume's, anything else mounted
 * there), then detaches each loop device whose backing file is below it. For a stopping
 * provisioner's volumes directory and a dead run's data directory; nothing elsewhere is touched.
 */
export async function releaseSizedVolumesWithin(dir: string): Promise<ReleasedWithin> {
  // Sized volumes exist on Linux alone, which alone has /proc/self/mountinfo.
  if (process.platform !== 'linux') return { unmounted: [], detached: [], stillMounted: [] };
  const dirs = [resolve(dir)];
  const real = await realpath(dir).catch(() => undefined);
  if (real && real !== dirs[0]) dirs.push(real);
  const unmounted: string[] = [];
  const detached: string[] = [];
  for (const mount of mountsWithin(await readMounts(), dirs)) {
    await unmount(mount.mountPoint).then(
      () => unmounted.push(mount.mountPoint),
      () => {},
    );
  }
  for (const { device } of loopsBackedWithin(await listLoopDevices(), dirs)) {
    await run('losetup', ['--detach', device]).then(
      () => detached.push(device),
      () => {},
    );
  }
  const stillMounted = mountsWithin(await readMounts(), dirs).map((m) => m.mountPoint);
  return { unmounted, detached, stillMounted };
}

/** {@link releaseSizedVolumesWithin}'s earlier name. */
export const releaseLoopVolumesWithin = releaseSizedVolumesWithin;
