// A size-limited filesystem for a member's data, so that row 7 can fill the primary's disk: an
// ext4 image on a loop device (root only), the same kind for both systems. `-m 0` reserves no
// blocks for root, so postgres (not root) and the balloon that fills the disk see the same free
// space. Filling reserves the free space with fallocate (no data is written, so it is quick and
// the image stays sparse on the host); freeing deletes the balloon.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { chown, mkdir, rm, rmdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';

/** Mounted and not yet unmounted, for the synchronous sweep on exit. */
const mounted = new Set();
process.on('exit', () => {
  for (const dir of mounted) {
    try {
      // Lazy: a process still holding a file there cannot keep the mount alive past its exit.
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      rmSync(`${dir}.img`, { force: true });
    } catch {
      // already gone
    }
  }
});

const freeBytes = async (dir) => {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
};

/**
 * Mounts a fresh `sizeMiB` ext4 filesystem at `dir` (created), owned by `owner` ({ uid, gid }).
 *
 * @example
 * const disk = await mountSmallDisk('/tmp/x/disk', { sizeMiB: 2048 });
 * await disk.fill(); await disk.free(); await disk.unmount();
 */
export async function mountSmallDisk(dir, { sizeMiB = 2048, owner } = {}) {
  if (process.getuid?.() !== 0) throw new Error('a size-limited data directory needs root (a loop mount)');
  const image = `${dir}.img`;
  execFileSync('truncate', ['-s', `${sizeMiB}M`, image]);
  execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', image]);
  await mkdir(dir, { recursive: true });
  execFileSync('mount', ['-o', 'loop', image, dir]);
  mounted.add(dir);
  // Nothing else on it: initdb and the agents expect an empty directory.
  await rmdir(join(dir, 'lost+found'));
  if (owner?.uid !== undefined) await chown(dir, owner.uid, owner.gid);
  let balloons = 0;
  return {
    dir,
    /** Takes every free byte; resolves with how many it took. */
    async fill() {
      let taken = 0;
      // fallocate of all that statfs reports can fail for the extent tree's own blocks: halve and go on.
      for (let want = await freeBytes(dir); want >= 4096 && balloons < 64; ) {
        const file = join(dir, `balloon-${balloons++}`);
        try {
          execFileSync('fallocate', ['-l', String(want), file], { stdio: 'ignore' });
          taken += want;
          want = await freeBytes(dir);
        } catch {
          await rm(file, { force: true });
          want = Math.floor(want / 2 / 4096) * 4096;
        }
      }
      return taken;
    },
    async free() {
      for (let i = 0; i < balloons; i++) await rm(join(dir, `balloon-${i}`), { force: true });
      balloons = 0;
    },
    async unmount() {
      if (!mounted.delete(dir)) return;
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      await rm(image, { force: true });
    },
  };
}
