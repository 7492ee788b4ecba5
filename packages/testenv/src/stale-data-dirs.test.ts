import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { access, chown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
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
