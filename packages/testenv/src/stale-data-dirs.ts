/** Data directories left behind by a process that was killed outright (so never ran `stop()`), and their removal. */
import { lstat, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isProcessAlive } from './managed-process.js';
import { releaseSizedVolumesWithin } from './process-node/volumes/host-mounts/loop-volume.js';

export const DATA_DIR_PREFIX = 'kanri-testenv-';
const OWNER_FILE = 'owner.pid';

export async function writeOwnerPid(dataDir: string): Promise<void> {
  await writeFile(join(dataDir, OWNER_FILE), `${process.pid}\n`);
}

/**
 * Removes `kanri-testenv-*` directories under `base` whose owning process is gone. Never touches a
 * live owner's, nor one another user made (theirs to sweep, or planted to make this one act on it).
 * A dead run's sized volumes go first, found by path alone: each mount at or below the directory
 * (an ext4 volume's or a tmpfs volume's alike) is unmounted and each loop device whose backing
 * file is below it detached. A directory that stays mounted is left for a later sweep: deleting
 * through a mount would empty the filesystem and then fail on the mount point.
 */
export async function sweepStaleDataDirs(base: string): Promise<string[]> {
  const removed: string[] = [];
  let entries: string[];
  try {
    entries = (await readdir(base)).filter((e) => e.startsWith(DATA_DIR_PREFIX));
  } catch {
    return removed;
  }
  for (const entry of entries) {
    const dir = join(base, entry);
    const stats = await lstat(dir).catch(() => undefined);
    if (!stats?.isDirectory() || stats.uid !== process.getuid?.()) continue;
    const owner = Number.parseInt(await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => ''), 10);
    // A directory without an owner file may be mid-creation by another process: leave it.
    if (!Number.isInteger(owner) || isProcessAlive(owner)) continue;
    const released = await releaseSizedVolumesWithin(dir);
    if (released.stillMounted.length > 0) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
