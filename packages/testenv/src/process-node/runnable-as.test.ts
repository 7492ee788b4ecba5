import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, mkdir, mkdtemp, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runnableFileAs, stageRoot } from './runnable-as.js';

const asRoot = process.getuid?.() === 0;
const USER = 'postgres';

/** Runs `file` as `user` the way a process node does, and returns what it printed. */
function runAs(user: string, file: string): string {
  return execFileSync('setpriv', [`--reuid=${user}`, `--regid=${user}`, '--init-groups', file], {
    encoding: 'utf8',
  }).trim();
}

describe('runnableFileAs', () => {
  let privateDir: string;
  let publicDir: string;
  const staged = new Set<string>();
  const script = '#!/bin/sh\necho "ran as $(id -un)"\n';
  const unique = () => `kanri-unit-${randomBytes(4).toString('hex')}`;

  before(async () => {
    privateDir = await mkdtemp(join(tmpdir(), 'kanri-private-'));
    await chmod(privateDir, 0o700);
    publicDir = await mkdtemp(join(tmpdir(), 'kanri-public-'));
    await chmod(publicDir, 0o755);
  });
  after(async () => {
    await rm(privateDir, { recursive: true, force: true });
    await rm(publicDir, { recursive: true, force: true });
    for (const path of staged) await rm(dirname(path), { recursive: true, force: true });
  });

  async function writeScript(dir: string, mode: number): Promise<string> {
    const file = join(dir, unique());
    await writeFile(file, script);
    await chmod(file, mode);
    return file;
  }

  it('returns a file the user can already run unchanged', async () => {
    const file = await writeScript(publicDir, 0o755);
    assert.equal(runnableFileAs(USER, file), file);
  });

  it('hard-links a world-executable file out of a private directory, once per version', async () => {
    const file = await writeScript(privateDir, 0o755);
    const path = runnableFileAs(USER, file);
    staged.add(path);
    if (!asRoot) {
      assert.equal(path, file, 'without root no user switch happens, so nothing is staged');
      return;
    }
    assert.notEqual(path, file);
    assert.ok(path.startsWith(tmpdir()));
    assert.equal((await stat(path)).ino, (await stat(file)).ino, 'a hard link, not a copy');
    assert.equal(runAs(USER, path), `ran as ${USER}`);
    assert.equal(runnableFileAs(USER, file), path, 'the same version is staged once');
    const later = new Date(Date.now() + 60_000);
    await utimes(file, later, later);
    const next = runnableFileAs(USER, file);
    staged.add(next);
    assert.notEqual(next, path, 'a changed file gets a new stage');
  });

  it('copies a file only its owner may execute, and makes the copy executable by the user', async () => {
    const file = await writeScript(privateDir, 0o700);
    const path = runnableFileAs(USER, file);
    staged.add(path);
    if (!asRoot) {
      assert.equal(path, file);
      return;
    }
    assert.notEqual((await stat(path)).ino, (await stat(file)).ino, 'a copy: a link would share mode 0700');
    assert.equal((await stat(path)).mode & 0o777, 0o755);
    assert.equal((await stat(file)).mode & 0o777, 0o700, 'the original keeps its mode');
    assert.equal(runAs(USER, path), `ran as ${USER}`);
  });

  it('never runs what another user planted where an earlier release staged the same file', async () => {
    const file = await writeScript(privateDir, 0o700);
    const { size, mtimeMs } = await stat(file);
    // The path releases before the stage root used: predictable from the file alone, in /tmp.
    const planted = join(
      tmpdir(),
      `kanri-file-${basename(file)}-${size.toString(36)}-${Math.floor(mtimeMs).toString(36)}`,
    );
    await mkdir(planted, { mode: 0o755 });
    await writeFile(join(planted, basename(file)), '#!/bin/sh\necho planted\n', { mode: 0o755 });
    try {
      if (asRoot) {
        for (const path of [planted, join(planted, basename(file))]) await chown(path, 65534, 65534);
      }
      const path = runnableFileAs(USER, file);
      staged.add(path);
      assert.ok(!path.startsWith(planted), `${path} is the planted program`);
      if (asRoot) assert.equal(runAs(USER, path), `ran as ${USER}`);
    } finally {
      await rm(planted, { recursive: true, force: true });
    }
  });

  it("stages into this user's own root, which nobody else may write to", async () => {
    const file = await writeScript(privateDir, 0o700);
    const path = runnableFileAs(USER, file);
    staged.add(path);
    if (!asRoot) {
      assert.equal(path, file);
      return;
    }
    const stage = dirname(path);
    const root = dirname(stage);
    assert.equal(root, join(tmpdir(), 'kanri-stage-0'));
    for (const dir of [root, stage]) {
      const facts = await lstat(dir);
      assert.ok(facts.isDirectory() && !facts.isSymbolicLink(), dir);
      assert.equal(facts.uid, 0, `${dir} is root's`);
      assert.equal(facts.mode & 0o022, 0, `${dir} (mode ${(facts.mode & 0o777).toString(8)}) is writable by others`);
    }
    assert.equal(
      (await lstat(root)).mode & 0o777,
      0o711,
      'others pass through to what they are given, and list nothing',
    );
  });

  it("refuses a stage root it did not make: a symbolic link, one others may write to, another user's", async () => {
    const base = await mkdtemp(join(tmpdir(), 'kanri-stage-base-'));
    try {
      const root = join(base, `kanri-stage-${process.getuid?.()}`);
      await symlink(publicDir, root);
      assert.throws(() => stageRoot(base), /is a symbolic link/);
      await rm(root);
      await mkdir(root);
      await chmod(root, 0o777);
      assert.throws(() => stageRoot(base), /writable by every user \(mode 0777\)/);
      if (!asRoot) return;
      await chmod(root, 0o755);
      await chown(root, 65534, 65534);
      const file = await writeScript(privateDir, 0o700);
      assert.throws(() => runnableFileAs(USER, file, { stageBase: base }), /owned by uid 65534, not by this user/);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });
});
