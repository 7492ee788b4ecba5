/**
 * A sized volume on real loop devices, without a control plane: made, mounted, grown (or, where the
 * machine withholds CAP_SYS_RESOURCE, refused with the kernel's reason while staying mounted),
 * released by path. Needs root; skipped elsewhere with the reason.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { listLoopDevices, loopsBackedBy } from './loop-devices.js';
import {
  ensureLoopVolume,
  growLoopVolume,
  loopVolumePaths,
  releaseLoopVolume,
  releaseLoopVolumesWithin,
} from './loop-volume.js';
import { readMounts, topMountAt } from './mount-table.js';
import { onlineResizeUnsupportedReason, sizedVolumesUnsupportedReason } from './sized-support.js';

const MIB = 1n << 20n;
const unsupported = await sizedVolumesUnsupportedReason();
const noGrowth = await onlineResizeUnsupportedReason();
const losetupJ = (image: string) => execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).trim();
const sizeOf = (path: string) => {
  const s = statfsSync(path);
  return s.blocks * s.bsize;
};

describe('a sized volume on a loop device', { skip: unsupported }, () => {
  const root = mkdtempSync(join(tmpdir(), 'kanri-loop-volume-'));
  const paths = loopVolumePaths(join(root, 'pvc-1'));
  after(async () => {
    // Whatever an assertion left behind: by path, as the provisioner's stop does.
    await releaseLoopVolumesWithin(root);
    rmSync(root, { recursive: true, force: true });
  });

  it('is made sparse, formatted, attached and mounted, and found again rather than made twice', async () => {
    const device = await ensureLoopVolume(paths, 64n * MIB);
    const top = topMountAt(await readMounts(), paths.mountPoint);
    assert.equal(top?.source, device);
    assert.equal(top?.fsType, 'ext4');
    assert.match(losetupJ(paths.image), new RegExp(`^${device}: .*\\(${paths.image}\\)$`));
    assert.equal(statSync(paths.image).size, 64 * 1024 * 1024);
    assert.ok(statSync(paths.image).blocks * 512 < 32 * 1024 * 1024, 'the image is sparse');
    const size = sizeOf(paths.mountPoint);
    assert.ok(size > 0.85 * 64 * 1024 * 1024 && size <= 64 * 1024 * 1024, `statfs size ${size}`);
    const superblock = execFileSync('dumpe2fs', ['-h', device], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    assert.match(superblock, /^Reserved block count:\s+0$/m, 'no blocks reserved for root (mkfs -m 0)');
    writeFileSync(join(paths.mountPoint, 'before'), 'kept');
    assert.equal(await ensureLoopVolume(paths, 64n * MIB), device);
    assert.equal(topMountAt(await readMounts(), paths.mountPoint)?.id, top?.id, 'the same mount');
    assert.equal(loopsBackedBy(await listLoopDevices(), paths.image).length, 1);
  });

  it('grows online where the machine allows it, and otherwise fails saying why, still mounted', async () => {
    const before = topMountAt(await readMounts(), paths.mountPoint);
    if (noGrowth) {
      await assert.rejects(
        growLoopVolume(paths, 128n * MIB),
        /resize2fs \/dev\/loop\d+: .*Permission denied to resize filesystem/,
      );
      // The steps before resize2fs happened, and are no-ops on the next try.
      assert.equal(statSync(paths.image).size, 128 * 1024 * 1024);
      const device = before?.source ?? '';
      const bytes = execFileSync('blockdev', ['--getsize64', device], { encoding: 'utf8' }).trim();
      assert.equal(bytes, String(128 * 1024 * 1024));
      assert.ok(sizeOf(paths.mountPoint) <= 64 * 1024 * 1024);
    } else {
      await growLoopVolume(paths, 128n * MIB);
      const size = sizeOf(paths.mountPoint);
      assert.ok(size > 0.9 * 128 * 1024 * 1024 && size <= 128 * 1024 * 1024, `statfs size ${size}`);
    }
    assert.equal(topMountAt(await readMounts(), paths.mountPoint)?.id, before?.id, 'never unmounted');
    assert.equal(readFileSync(join(paths.mountPoint, 'before'), 'utf8'), 'kept');
  });

  it('is released: unmounted, detached, its image gone, its directory empty', async () => {
    await releaseLoopVolume(paths, []);
    assert.equal(topMountAt(await readMounts(), paths.mountPoint), undefined);
    assert.equal(losetupJ(paths.image), '');
    assert.equal(existsSync(paths.image), false);
    assert.equal(existsSync(join(paths.mountPoint, 'before')), false, 'the file was on the volume, not beneath it');
    await releaseLoopVolume(paths, []); // released twice: nothing to do
  });

  it('refuses a size that is not whole MiB', async () => {
    await assert.rejects(ensureLoopVolume(loopVolumePaths(join(root, 'pvc-2')), MIB + 1n), /whole MiB/);
    assert.equal(existsSync(join(root, 'pvc-2.img')), false);
  });
});
