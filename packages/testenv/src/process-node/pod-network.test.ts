import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { leaseLoopbackBlock } from './pod-network.js';

describe('leaseLoopbackBlock', () => {
  let base: string;
  before(async () => {
    base = await mkdtemp(join(tmpdir(), 'kanri-leases-'));
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('shares a sticky lock directory every user may lease in, and leases a block there', async () => {
    const leaseDir = join(base, 'fresh');
    const { block, release } = await leaseLoopbackBlock({ leaseDir });
    try {
      assert.equal(block, 1);
      assert.equal((await lstat(leaseDir)).mode & 0o7777, 0o1777);
    } finally {
      await release();
    }
  });

  it('refuses a lock directory that is a link, or that others may write to without the sticky bit', async () => {
    const link = join(base, 'link');
    await symlink(base, link);
    await assert.rejects(leaseLoopbackBlock({ leaseDir: link }), /is a symbolic link/);
    const open = join(base, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    await assert.rejects(leaseLoopbackBlock({ leaseDir: open }), /writable by every user \(mode 0777\)/);
  });
});
