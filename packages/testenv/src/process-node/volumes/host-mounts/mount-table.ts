/**
 * The mounts a process sees (`/proc/<pid>/mountinfo`), to find the sized volumes' mounts by path:
 * in this process's mount namespace, or a real node's.
 */
import { readFile } from 'node:fs/promises';

export interface MountEntry {
  /** The mount's ID: a remount or a new mount on the same path gets another. */
  readonly id: number;
  /** `major:minor` of the filesystem's device. */
  readonly device: string;
  readonly mountPoint: string;
  readonly fsType: string;
  /** What was mounted: `/dev/loop3` for a sized volume. */
  readonly source: string;
}

/** mountinfo escapes space, tab, newline and backslash as `\ooo`. */
const unescapeField = (field: string) =>
  field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));

/**
 * The entries of a mountinfo file, in its order (a later mount on the same path hides an earlier
 * one). Pure.
 *
 * @example
 * ```ts
 * parseMountInfo('36 35 7:3 / /tmp/x\\040y rw - ext4 /dev/loop3 rw\n');
 * // [{ id: 36, device: '7:3', mountPoint: '/tmp/x y', fsType: 'ext4', source: '/dev/loop3' }]
 * ```
 */
export function parseMountInfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const separator = fields.indexOf('-', 6);
    const [id, , device, , mountPoint] = fields;
    if (separator === -1 || id === undefined || device === undefined || mountPoint === undefined) continue;
    entries.push({
      id: Number(id),
      device,
      mountPoint: unescapeField(mountPoint),
      fsType: fields[separator + 1] ?? '',
      source: unescapeField(fields[separator + 2] ?? ''),
    });
  }
  return entries;
}

/** `path` is `dir` or inside it (plain path prefixes, no `..`). Pure. */
export function isWithin(path: string, dir: string): boolean {
  const base = dir.endsWith('/') ? dir.slice(0, -1) : dir;
  return base !== '' && (path === base || path.startsWith(`${base}/`));
}

/**
 * The mounts at or below any of `dirs`, in the order to unmount them: deepest path first, and on
 * one path the top mount first. Pure.
 */
export function mountsWithin(entries: readonly MountEntry[], dirs: readonly string[]): MountEntry[] {
  return entries
    .map((entry, order) => ({ entry, order }))
    .filter(({ entry }) => dirs.some((dir) => isWithin(entry.mountPoint, dir)))
    .sort((a, b) => b.entry.mountPoint.length - a.entry.mountPoint.length || b.order - a.order)
    .map(({ entry }) => entry);
}

/** The top mount on `path`, if any. Pure. */
export function topMountAt(entries: readonly MountEntry[], path: string): MountEntry | undefined {
  return entries.findLast((entry) => entry.mountPoint === path);
}

/** The mounts of `pid`'s mount namespace (this process's by default). */
export async function readMounts(pid: number | 'self' = 'self'): Promise<MountEntry[]> {
  return parseMountInfo(await readFile(`/proc/${pid}/mountinfo`, 'utf8'));
}
