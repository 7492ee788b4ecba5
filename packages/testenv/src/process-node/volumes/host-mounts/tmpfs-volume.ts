/**
 * A sized volume in memory: a tmpfs of the claim's size mounted on the volume's directory, for
 * machines where a mounted ext4 cannot grow (no CAP_SYS_RESOURCE). Its data lives in RAM (only
 * the pages written take memory) and is gone once it is unmounted. It grows online with
 * `mount -o remount,size=<bytes>`, which changes the filesystem itself (its superblock), so every
 * mount of it, in any mount namespace, sees the new size at once. It is released by path.
 *
 * A real node's mount namespace is a private copy of the machine's made before the volume
 * existed, and a tmpfs mounted there again would be another, empty filesystem: so the machine's
 * mount is cloned (`open_tree(OPEN_TREE_CLONE)`, in this namespace) and the clone attached in the
 * node's (`move_mount`, after `nsenter`): the same filesystem in both. No util-linux 2.38 program
 * makes those two calls, and Node cannot, so a few lines of Perl (perl-base, always installed
 * where util-linux is) do; their numbers (428, 429) are the same on every architecture.
 */
import { execFile } from 'node:child_process';
import { mkdir, statfs } from 'node:fs/promises';
import { promisify } from 'node:util';
import { type MountEntry, readMounts, topMountAt } from './mount-table.js';
import { runTool as run, toolError, unmountAll } from './run-tool.js';
import { requireTool } from './sized-support.js';

const exec = promisify(execFile);
const MIB = 1n << 20n;

/**
 * The options of a new tmpfs volume of `bytes`: its size, and a root directory that is root's
 * alone until the provisioner gives it to its Pod. Pure.
 *
 * @example
 * ```ts
 * tmpfsMountOptions(64n << 20n); // 'size=67108864,mode=0700'
 * ```
 */
export const tmpfsMountOptions = (bytes: bigint): string => `size=${bytes},mode=0700`;

/**
 * The options that grow a mounted tmpfs to `bytes` in place. Pure.
 *
 * @example
 * ```ts
 * tmpfsRemountOptions(128n << 20n); // 'remount,size=134217728'
 * ```
 */
export const tmpfsRemountOptions = (bytes: bigint): string => `remount,size=${bytes}`;

/** The mount on `path` if it is a tmpfs (the top one). Pure. */
export function tmpfsMountAt(entries: readonly MountEntry[], path: string): MountEntry | undefined {
  const top = topMountAt(entries, path);
  return top?.fsType === 'tmpfs' ? top : undefined;
}

/**
 * Perl, run in this mount namespace: clones the mount on `path` (open_tree with OPEN_TREE_CLONE,
 * a detached copy of the same filesystem), then runs nsenter into `pid`'s mount namespace, which
 * inherits the clone's descriptor, and the attach program there. Arguments: nsenter, pid, perl,
 * the attach program, path.
 */
const CLONE_PROGRAM = [
  'my ($nsenter, $pid, $perl, $attach, $path) = @ARGV;',
  'my $fd = syscall(428, -100, $path, 1);',
  'die "open_tree $path: $!\\n" if $fd < 0;',
  'exec($nsenter, "-t", $pid, "-m", "--", $perl, "-e", $attach, $fd, $path) or die "exec $nsenter: $!\\n";',
].join(' ');

/** Perl, run in the node's namespace: attaches the clone `fd` on `path` (move_mount, MOVE_MOUNT_F_EMPTY_PATH). */
const ATTACH_PROGRAM = [
  'my ($fd, $path) = @ARGV; my $empty = "";',
  'syscall(429, $fd + 0, $empty, -100, $path, 4) == 0 or die "move_mount $path: $!\\n";',
].join(' ');

/** Attaches this namespace's mount on `path` at `path` in `pid`'s mount namespace: the same filesystem. */
async function attachInNamespace(path: string, pid: number): Promise<void> {
  const [perl, nsenter] = [await requireTool('perl'), await requireTool('nsenter')];
  try {
    await exec(perl, ['-e', CLONE_PROGRAM, nsenter, String(pid), perl, ATTACH_PROGRAM, path], { timeout: 60_000 });
  } catch (error) {
    throw toolError('perl (open_tree, move_mount)', [path], error, pid);
  }
}

/**
 * Mounts a tmpfs of `bytes` (whole MiB) on `mountPoint`, unless one is mounted there already (a
 * sync that saw the claim twice). Whatever else is mounted there (an attempt that failed halfway)
 * is unmounted first; a failed mount leaves nothing mounted.
 */
export async function ensureTmpfsVolume(mountPoint: string, bytes: bigint): Promise<MountEntry> {
  const mounted = tmpfsMountAt(await readMounts(), mountPoint);
  if (mounted) return mounted;
  await releaseTmpfsVolume(mountPoint, []);
  if (bytes % MIB !== 0n) throw new Error(`a sized volume is whole MiB, not ${bytes} bytes`);
  await mkdir(mountPoint, { recursive: true });
  try {
    await run('mount', ['-t', 'tmpfs', '-o', tmpfsMountOptions(bytes), 'tmpfs', mountPoint]);
    const made = tmpfsMountAt(await readMounts(), mountPoint);
    if (!made) throw new Error(`mounted a tmpfs on ${mountPoint}, but it is not there`);
    return made;
  } catch (error) {
    await releaseTmpfsVolume(mountPoint, []).catch(() => {});
    throw error;
  }
}

/**
 * Mounts the tmpfs volume on `mountPoint` in the mount namespaces of `pids` where that filesystem
 * is not mounted yet, as the same filesystem (see the module's comment).
 */
export async function mountTmpfsInNamespaces(mountPoint: string, pids: readonly number[]): Promise<void> {
  const host = tmpfsMountAt(await readMounts(), mountPoint);
  if (!host) throw new Error(`${mountPoint} is not a mounted tmpfs`);
  for (const pid of pids) {
    const mounts = await readMounts(pid).catch(() => undefined);
    if (!mounts || topMountAt(mounts, mountPoint)?.device === host.device) continue;
    await attachInNamespace(mountPoint, pid);
  }
}

/**
 * Grows the mounted tmpfs on `mountPoint` to `bytes` without unmounting it: one remount here.
 * The size belongs to the filesystem, so every node's mount of it (the same filesystem) grows
 * with it; a node whose mount there is another tmpfs (none should be) is remounted too. A no-op
 * where it is that big already, so a retry resumes.
 */
export async function growTmpfsVolume(mountPoint: string, bytes: bigint, pids: readonly number[]): Promise<void> {
  const host = tmpfsMountAt(await readMounts(), mountPoint);
  if (!host) throw new Error(`${mountPoint} is not a mounted tmpfs; cannot grow it online`);
  const size = await statfs(mountPoint, { bigint: true });
  if (size.blocks * size.bsize < bytes) await run('mount', ['-o', tmpfsRemountOptions(bytes), mountPoint]);
  for (const pid of pids) {
    const mounts = await readMounts(pid).catch(() => undefined);
    const there = mounts && tmpfsMountAt(mounts, mountPoint);
    if (there && there.device !== host.device) {
      await run('mount', ['-o', tmpfsRemountOptions(bytes), mountPoint], pid);
    }
  }
}

/**
 * Releases a tmpfs volume: unmounts it in the namespaces of `pids` and here, which frees its
 * memory. The directory stays (empty); this throws rather than leave it mounted.
 */
export async function releaseTmpfsVolume(mountPoint: string, pids: readonly number[]): Promise<void> {
  for (const pid of pids) {
    // A node that stopped meanwhile took its mounts with it.
    await unmountAll(mountPoint, pid).catch(() => {});
  }
  await unmountAll(mountPoint);
}
