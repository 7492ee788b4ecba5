/**
 * What sized volumes need of the machine, and the programs they run, found once by absolute path
 * (root's PATH may lack the sbin directories where util-linux and e2fsprogs live).
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** The programs a sized volume's life needs. */
export type SizedVolumeTool = 'losetup' | 'mkfs.ext4' | 'resize2fs' | 'mount' | 'umount' | 'nsenter' | 'perl';

const PROVIDER: Readonly<Record<SizedVolumeTool, string>> = {
  losetup: 'util-linux',
  'mkfs.ext4': 'e2fsprogs',
  resize2fs: 'e2fsprogs',
  mount: 'util-linux',
  umount: 'util-linux',
  nsenter: 'util-linux',
  perl: 'perl-base',
};

/** Linux's CAP_SYS_RESOURCE: ext4 refuses to grow a mounted filesystem without it. */
export const CAP_SYS_RESOURCE = 24;

const found = new Map<SizedVolumeTool, Promise<string | undefined>>();

/** The absolute path of `tool` on PATH or in the sbin directories, or undefined. */
export function findTool(tool: SizedVolumeTool): Promise<string | undefined> {
  let path = found.get(tool);
  if (!path) {
    path = (async () => {
      const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/sbin', '/usr/bin', '/bin'];
      for (const dir of dirs.filter(Boolean)) {
        const candidate = join(dir, tool);
        const runnable = await access(candidate, constants.X_OK).then(
          () => true,
          () => false,
        );
        if (runnable) return candidate;
      }
      return undefined;
    })();
    found.set(tool, path);
  }
  return path;
}

/** The absolute path of `tool`; throws naming the package that provides it. */
export async function requireTool(tool: SizedVolumeTool): Promise<string> {
  const path = await findTool(tool);
  if (!path) throw new Error(`sized volumes need \`${tool}\` (${PROVIDER[tool]}), which is not installed`);
  return path;
}

/**
 * Whether `/proc/<pid>/status` text has `capability` in the bounding set: what a program that
 * root starts (resize2fs) gets. Pure.
 *
 * @example
 * ```ts
 * hasCapability('CapBnd:\t000001fffeffffff\n', CAP_SYS_RESOURCE); // false: bit 24 is clear
 * ```
 */
export function hasCapability(procStatus: string, capability: number): boolean {
  const hex = /^CapBnd:\s*([0-9a-f]+)$/m.exec(procStatus)?.[1];
  return hex !== undefined && ((BigInt(`0x${hex}`) >> BigInt(capability)) & 1n) === 1n;
}

/**
 * What a sized volume is made of on this machine:
 *
 * - `ext4-loop`: an ext4 filesystem in a sparse image file on a loop device, grown online with
 *   `resize2fs` (needs root, loop devices, util-linux, e2fsprogs and CAP_SYS_RESOURCE);
 * - `tmpfs`: a tmpfs of the claim's size, grown online with `mount -o remount,size=…` (needs root
 *   and util-linux). Memory-backed: its data lives in RAM and is gone once it is unmounted.
 */
export type SizedVolumeBackend = 'ext4-loop' | 'tmpfs';

export const SIZED_VOLUME_BACKENDS: readonly SizedVolumeBackend[] = ['ext4-loop', 'tmpfs'];

/** Which backend sized volumes use here and why, or why there are none. */
export type SizedVolumeBackendChoice =
  | { readonly backend: SizedVolumeBackend; readonly reason: string }
  | { readonly backend: undefined; readonly reason: string };

/**
 * The backend from why each one cannot serve here (undefined: it can): ext4 on a loop device
 * where a mounted one can grow, else a tmpfs, else none. Pure.
 *
 * @example
 * ```ts
 * chooseSizedVolumeBackend({ ext4Loop: 'growing … needs CAP_SYS_RESOURCE, …', tmpfs: undefined });
 * // { backend: 'tmpfs', reason: 'ext4 on a loop device cannot grow online here: growing … needs CAP_SYS_RESOURCE, …' }
 * ```
 */
export function chooseSizedVolumeBackend(unsupported: {
  readonly ext4Loop: string | undefined;
  readonly tmpfs: string | undefined;
}): SizedVolumeBackendChoice {
  if (unsupported.ext4Loop === undefined) {
    return {
      backend: 'ext4-loop',
      reason: 'ext4 on a loop device grows online here (root, loop devices, CAP_SYS_RESOURCE)',
    };
  }
  if (unsupported.tmpfs === undefined) {
    return { backend: 'tmpfs', reason: `ext4 on a loop device cannot grow online here: ${unsupported.ext4Loop}` };
  }
  return { backend: undefined, reason: unsupported.tmpfs };
}

const platformOrRootReason = (): string | undefined => {
  if (process.platform !== 'linux') return `sized volumes need Linux; this is ${process.platform}`;
  if (process.getuid?.() !== 0) return 'sized volumes need root (mounts); testenv runs as a user';
  return undefined;
};

/**
 * Why ext4 volumes on loop devices cannot be made here, or undefined when they can: they need
 * Linux, root, `/dev/loop-control`, and losetup, mkfs.ext4, resize2fs, mount and umount.
 */
export async function ext4LoopUnsupportedReason(): Promise<string | undefined> {
  const base = platformOrRootReason();
  if (base) return base;
  const loopControl = await access('/dev/loop-control', constants.R_OK | constants.W_OK).then(
    () => true,
    () => false,
  );
  if (!loopControl) return 'ext4 sized volumes need loop devices, and /dev/loop-control is missing (modprobe loop)';
  for (const tool of ['losetup', 'mkfs.ext4', 'resize2fs', 'mount', 'umount'] as const) {
    if (!(await findTool(tool)))
      return `ext4 sized volumes need \`${tool}\` (${PROVIDER[tool]}), which is not installed`;
  }
  return undefined;
}

/** Why tmpfs volumes cannot be made here, or undefined when they can: Linux, root, mount and umount. */
export async function tmpfsUnsupportedReason(): Promise<string | undefined> {
  const base = platformOrRootReason();
  if (base) return base;
  for (const tool of ['mount', 'umount'] as const) {
    if (!(await findTool(tool))) return `sized volumes need \`${tool}\` (${PROVIDER[tool]}), which is not installed`;
  }
  return undefined;
}

/**
 * Why a mounted ext4 sized volume cannot grow here, or undefined when it can: resize2fs grows a
 * mounted ext4 through an ioctl that the kernel grants only with CAP_SYS_RESOURCE, which some
 * containers and VMs withhold even from root (`resize2fs: Permission denied to resize
 * filesystem`). Where it cannot, sized volumes are tmpfs instead (`sizedVolumeBackend()`).
 */
export async function onlineResizeUnsupportedReason(): Promise<string | undefined> {
  const ext4 = await ext4LoopUnsupportedReason();
  if (ext4) return ext4;
  const status = await readFile('/proc/self/status', 'utf8');
  if (!hasCapability(status, CAP_SYS_RESOURCE)) {
    return 'growing a mounted ext4 filesystem needs CAP_SYS_RESOURCE, which this machine withholds from root';
  }
  return undefined;
}

/**
 * Which backend the `kanri-sized` StorageClass uses on this machine, and why: `ext4-loop` where
 * a mounted ext4 grows online (`onlineResizeUnsupportedReason()` finds nothing), else `tmpfs`
 * as root, else none (the reason says what is missing). Each provisioner asks once, at start.
 *
 * @example
 * ```ts
 * await sizedVolumeBackendChoice();
 * // { backend: 'tmpfs', reason: 'ext4 on a loop device cannot grow online here: growing a mounted ext4 filesystem needs CAP_SYS_RESOURCE, …' }
 * ```
 */
export async function sizedVolumeBackendChoice(): Promise<SizedVolumeBackendChoice> {
  return chooseSizedVolumeBackend({
    ext4Loop: await onlineResizeUnsupportedReason(),
    tmpfs: await tmpfsUnsupportedReason(),
  });
}

/**
 * The backend sized volumes use here (`ext4-loop` or `tmpfs`), or undefined where there is none
 * (then `sizedVolumesUnsupportedReason()` says why; `sizedVolumeBackendChoice()` gives both).
 */
export async function sizedVolumeBackend(): Promise<SizedVolumeBackend | undefined> {
  return (await sizedVolumeBackendChoice()).backend;
}

/**
 * Why sized volumes (the `kanri-sized` StorageClass) cannot be offered here, or undefined when they
 * can, on either backend: they need Linux, root, mount and umount (and for ext4, loop devices,
 * e2fsprogs and CAP_SYS_RESOURCE; without those they are tmpfs).
 *
 * @example
 * ```ts
 * const reason = await sizedVolumesUnsupportedReason();
 * it('expands a sized volume', { skip: reason }, async () => { … });
 * ```
 */
export async function sizedVolumesUnsupportedReason(): Promise<string | undefined> {
  const choice = await sizedVolumeBackendChoice();
  return choice.backend === undefined ? choice.reason : undefined;
}
