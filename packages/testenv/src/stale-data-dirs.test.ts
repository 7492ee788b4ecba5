import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { access, chown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  ensureLoopVolume,
  loopVolumePaths,
  releaseSizedVolumesWithin,
} from './process-node/volumes/host-mounts/loop-volume.js';
import { readMounts, topMountAt } from './process-node/volumes/host-mounts/mount-table.js';
import { ext4LoopUnsupportedReason, tmpfsUnsupportedReason } from './process-node/volumes/host-mounts/sized-support.js';
import { ensureTmpfsVolume } from './process-node/volumes/host-mounts/tmpfs-volume.js';
import { DATA_DIR_PREFIX, sweepStaleDataDirs } from './stale-data-dirs.js';

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe('sweepStaleDataDirs', () => {
  it("removes directories of dead owners and keeps live, unowned, linked or another user's ones", async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-sweep-'));
    try {
      // A PID that certainly existed and is now gone: a child we ran to completion.
      const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
      const dead = join(base, `${DATA_DIR_PREFIX}dead`);
      const live = join(base, `${DATA_DIR_PREFIX}live`);
      const unowned = join(base, `${DATA_DIR_PREFIX}new`);
      const unrelated = join(base, 'something-else');
      const target = join(base, 'elsewhere');
      const link = join(base, `${DATA_DIR_PREFIX}link`);
      const others = join(base, `${DATA_DIR_PREFIX}others`);
      for (const d of [dead, live, unowned, unrelated, target, others]) await mkdir(d);
      await symlink(target, link);
      for (const d of [target, others]) await writeFile(join(d, 'owner.pid'), `${deadPid}\n`);
      const asRoot = process.getuid?.() === 0;
      // Another user's (as root, one can be made): theirs to sweep, or planted to make this one act.
      if (asRoot) await chown(others, 65534, 65534);
      await writeFile(join(dead, 'owner.pid'), `${deadPid}\n`);
      await writeFile(join(live, 'owner.pid'), `${process.pid}\n`);
      await writeFile(join(unrelated, 'owner.pid'), `${deadPid}\n`);
      assert.deepEqual((await sweepStaleDataDirs(base)).sort(), asRoot ? [dead] : [dead, others].sort());
      assert.equal(await exists(join(target, 'owner.pid')), true, 'a symbolic link is not followed');
      assert.equal(await exists(link), true);
      assert.equal(await exists(others), asRoot);
      assert.equal(await exists(dead), false);
      assert.equal(await exists(live), true);
      assert.equal(await exists(unowned), true);
      assert.equal(await exists(unrelated), true);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});

describe('sweepStaleDataDirs and sized volumes', { skip: await ext4LoopUnsupportedReason() }, () => {
  it("unmounts and detaches a dead run's sized volumes by path, and nothing of a live run or outside", async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-sweep-loop-'));
    const MIB = 1n << 20n;
    const losetupJ = (image: string) => execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).trim();
    try {
      const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
      const dead = join(base, `${DATA_DIR_PREFIX}dead`);
      const live = join(base, `${DATA_DIR_PREFIX}live`);
      const outside = join(base, 'outside');
      for (const d of [dead, live, outside]) await mkdir(join(d, 'volumes'), { recursive: true });
      await writeFile(join(dead, 'owner.pid'), `${deadPid}\n`);
      await writeFile(join(live, 'owner.pid'), `${process.pid}\n`);
      // As a killed run leaves them: one mounted, one only attached (killed between losetup and mount).
      const mounted = loopVolumePaths(join(dead, 'volumes', 'pvc-1'));
      await ensureLoopVolume(mounted, 16n * MIB);
      const attachedImage = join(dead, 'volumes', 'pvc-2.img');
      await writeFile(attachedImage, Buffer.alloc(0));
      execFileSync('truncate', ['-s', '16M', attachedImage]);
      execFileSync('losetup', ['--find', attachedImage]);
      const liveVolume = loopVolumePaths(join(live, 'volumes', 'pvc-3'));
      const outsideVolume = loopVolumePaths(join(outside, 'volumes', 'pvc-4'));
      await ensureLoopVolume(liveVolume, 16n * MIB);
      await ensureLoopVolume(outsideVolume, 16n * MIB);
      assert.notEqual(losetupJ(attachedImage), '');

      assert.deepEqual(await sweepStaleDataDirs(base), [dead]);
      const mounts = await readMounts();
      assert.equal(topMountAt(mounts, mounted.mountPoint), undefined);
      assert.equal(losetupJ(mounted.image), '');
      assert.equal(losetupJ(attachedImage), '');
      assert.equal(await exists(dead), false);
      assert.notEqual(topMountAt(mounts, liveVolume.mountPoint), undefined, "a live run's volume stays");
      assert.notEqual(losetupJ(liveVolume.image), '');
      assert.notEqual(topMountAt(mounts, outsideVolume.mountPoint), undefined, 'a volume outside a testenv dir stays');
      assert.notEqual(losetupJ(outsideVolume.image), '');
    } finally {
      await releaseSizedVolumesWithin(base);
      await rm(base, { recursive: true, force: true });
    }
  });
});

describe('sweepStaleDataDirs and tmpfs volumes', { skip: await tmpfsUnsupportedReason() }, () => {
  it("unmounts a dead run's tmpfs volumes by path, and nothing of a live run or outside", async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-sweep-tmpfs-'));
    const MIB = 1n << 20n;
    try {
      const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
      const dead = join(base, `${DATA_DIR_PREFIX}dead`);
      const live = join(base, `${DATA_DIR_PREFIX}live`);
      const outside = join(base, 'outside');
      for (const d of [dead, live, outside]) await mkdir(join(d, 'volumes'), { recursive: true });
      await writeFile(join(dead, 'owner.pid'), `${deadPid}\n`);
      await writeFile(join(live, 'owner.pid'), `${process.pid}\n`);
      const deadVolume = join(dead, 'volumes', 'pvc-1');
      const liveVolume = join(live, 'volumes', 'pvc-2');
      const outsideVolume = join(outside, 'volumes', 'pvc-3');
      for (const v of [deadVolume, liveVolume, outsideVolume]) await ensureTmpfsVolume(v, 16n * MIB);
      await writeFile(join(deadVolume, 'data'), 'x');

      assert.deepEqual(await sweepStaleDataDirs(base), [dead]);
      const mounts = await readMounts();
      assert.equal(topMountAt(mounts, deadVolume), undefined);
      assert.equal(await exists(dead), false);
      assert.equal(topMountAt(mounts, liveVolume)?.fsType, 'tmpfs', "a live run's volume stays");
      assert.equal(topMountAt(mounts, outsideVolume)?.fsType, 'tmpfs', 'a volume outside a testenv dir stays');
    } finally {
      await releaseSizedVolumesWithin(base);
      await rm(base, { recursive: true, force: true });
    }
  });
});
