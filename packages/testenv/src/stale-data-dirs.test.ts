import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
  it('removes directories of dead owners and keeps live or unowned ones', async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-sweep-'));
    try {
      // A PID that certainly existed and is now gone: a child we ran to completion.
      const deadPid = spawnSync(process.execPath, ['-e', '0']).pid;
      const dead = join(base, `${DATA_DIR_PREFIX}dead`);
      const live = join(base, `${DATA_DIR_PREFIX}live`);
      const unowned = join(base, `${DATA_DIR_PREFIX}new`);
      const unrelated = join(base, 'something-else');
      for (const d of [dead, live, unowned, unrelated]) await mkdir(d);
      await writeFile(join(dead, 'owner.pid'), `${deadPid}\n`);
      await writeFile(join(live, 'owner.pid'), `${process.pid}\n`);
      await writeFile(join(unrelated, 'owner.pid'), `${deadPid}\n`);
      assert.deepEqual(await sweepStaleDataDirs(base), [dead]);
      assert.equal(await exists(dead), false);
      assert.equal(await exists(live), true);
      assert.equal(await exists(unowned), true);
      assert.equal(await exists(unrelated), true);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
