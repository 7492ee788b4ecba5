import assert from 'node:assert/strict';
import { chmod, chown, lstat, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureTrustedDirectory, UntrustedPathError, untrustedReason } from './trusted-dir.js';

const dir = (uid: number, mode: number) => ({ isSymbolicLink: false, isDirectory: true, uid, mode: 0o40000 | mode });

describe('untrustedReason', () => {
  it("trusts only this user's own directory that nobody else may write to", () => {
    assert.equal(untrustedReason('/t/a', dir(0, 0o711), 0), undefined);
    assert.equal(untrustedReason('/t/a', dir(1000, 0o700), 1000), undefined);
    assert.match(untrustedReason('/t/a', dir(1000, 0o755), 0) ?? '', /owned by uid 1000, not by this user \(uid 0\)/);
    assert.match(untrustedReason('/t/a', dir(0, 0o777), 0) ?? '', /writable by every user \(mode 0777\)/);
    assert.match(untrustedReason('/t/a', dir(0, 0o775), 0) ?? '', /writable by its group \(mode 0775\)/);
    assert.match(
      untrustedReason('/t/a', dir(0, 0o1777), 0) ?? '',
      /writable by every user/,
      'sticky is not enough for a private one',
    );
    assert.match(untrustedReason('/t/a', { ...dir(0, 0o755), isSymbolicLink: true }, 0) ?? '', /is a symbolic link/);
    assert.match(untrustedReason('/t/a', { ...dir(0, 0o755), isDirectory: false }, 0) ?? '', /not a directory/);
  });

  it("trusts a shared lock directory when it is root's or this user's, and sticky if others may write", () => {
    const shared = { shared: true };
    assert.equal(untrustedReason('/t/l', dir(0, 0o1777), 1000, shared), undefined);
    assert.equal(untrustedReason('/t/l', dir(1000, 0o1777), 1000, shared), undefined);
    assert.match(untrustedReason('/t/l', dir(1001, 0o1777), 0, shared) ?? '', /owned by uid 1001/);
    assert.match(untrustedReason('/t/l', dir(0, 0o777), 0, shared) ?? '', /writable by every user/, 'not sticky');
  });
});

describe('ensureTrustedDirectory', () => {
  let base: string;
  before(async () => {
    base = await mkdtemp(join(tmpdir(), 'kanri-trusted-'));
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('creates the directory with its mode whatever the umask, and accepts it again', async () => {
    const path = join(base, 'fresh');
    ensureTrustedDirectory(path, 0o711);
    assert.equal((await lstat(path)).mode & 0o7777, 0o711);
    ensureTrustedDirectory(path, 0o711);
  });

  it('refuses a symbolic link, a directory others may write to, and (as root) another user’s, naming the fix', async () => {
    const link = join(base, 'link');
    await symlink(base, link);
    assert.throws(
      () => ensureTrustedDirectory(link, 0o711),
      (e: Error) => {
        assert.ok(e instanceof UntrustedPathError);
        assert.match(e.message, /link is a symbolic link: .*remove it \(rm -r .*link\)/);
        return true;
      },
    );
    const open = join(base, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    assert.throws(() => ensureTrustedDirectory(open, 0o711), /writable by every user \(mode 0777\)/);
    assert.equal((await lstat(open)).mode & 0o777, 0o777, 'a refused directory is left as it was');
    if (process.getuid?.() !== 0) return;
    const theirs = join(base, 'theirs');
    await mkdir(theirs, { mode: 0o755 });
    await chown(theirs, 65534, 65534);
    assert.throws(() => ensureTrustedDirectory(theirs, 0o711), /owned by uid 65534, not by this user \(uid 0\)/);
  });
});
