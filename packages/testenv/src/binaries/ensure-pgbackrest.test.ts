import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { BinaryBuildError } from '../errors.js';
import { pgBackRestPackage } from '../versions.js';
import { planAptFetch } from './apt-fetch-plan.js';
import { ensurePgBackRest } from './ensure-pgbackrest.js';

const run = promisify(execFile);

describe('planAptFetch', () => {
  const plan = planAptFetch(pgBackRestPackage, '/cache/apt-trixie', '/scratch/download');
  const config = plan.files['/cache/apt-trixie/apt.conf'] ?? '';

  it('keeps every directory apt writes to under its own root, and never reads the machine sources or dpkg status', () => {
    assert.match(config, /^Dir::Etc::SourceList "\/cache\/apt-trixie\/sources\.list";$/m);
    assert.match(config, /^Dir::Etc::SourceParts "\/nonexistent";$/m);
    assert.match(config, /^Dir::State::status "\/cache\/apt-trixie\/state\/status";$/m);
    for (const key of ['Dir::State', 'Dir::State::Lists', 'Dir::Cache', 'Dir::Cache::Archives']) {
      assert.match(config, new RegExp(`^${key} "/cache/apt-trixie/`, 'm'), key);
    }
    assert.equal(plan.files['/cache/apt-trixie/state/status'], '', 'an empty package database');
    assert.equal(plan.files['/cache/apt-trixie/sources.list'], 'deb http://deb.debian.org/debian trixie main\n');
    assert.deepEqual(plan.update.env, { APT_CONFIG: '/cache/apt-trixie/apt.conf' });
  });

  it('downloads the exact pinned version into the scratch directory', () => {
    assert.deepEqual(plan.download.args, ['download', 'pgbackrest=2.55.1-1']);
    assert.equal(plan.download.cwd, '/scratch/download');
    assert.equal(plan.debFile, '/scratch/download/pgbackrest_2.55.1-1_amd64.deb');
    assert.ok(plan.dirs.includes('/cache/apt-trixie/state/lists/partial'));
    assert.ok(plan.dirs.includes('/cache/apt-trixie/cache/archives/partial'));
  });

  it('refuses a path apt.conf cannot quote', () => {
    assert.throws(() => planAptFetch(pgBackRestPackage, '/tmp/a"b', '/x'), /quote/);
  });
});

describe('ensurePgBackRest', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-pgbackrest-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the cached pgBackRest 2.55.1, which runs here', async () => {
    const path = await ensurePgBackRest({ onProgress: () => {} });
    assert.match(path, /pgbackrest-2\.55\.1\/bin\/pgbackrest$/);
    const { stdout } = await run(path, ['version']);
    assert.equal(stdout.trim(), 'pgBackRest 2.55.1');
    assert.equal(await ensurePgBackRest({ onProgress: () => {} }), path, 'the second call reuses the cache');
  });

  it('says what to install when apt-get is missing, and caches nothing', async () => {
    const cacheDir = join(dir, 'no-apt');
    const path = process.env.PATH;
    process.env.PATH = join(dir, 'empty-path');
    try {
      await assert.rejects(
        ensurePgBackRest({ cacheDir, onProgress: () => {} }),
        (error: unknown) =>
          error instanceof BinaryBuildError &&
          /`apt-get` was not found/.test(error.message) &&
          /install apt and dpkg/.test(error.message),
      );
    } finally {
      process.env.PATH = path;
    }
    assert.deepEqual(await readdir(join(cacheDir, 'pgbackrest-2.55.1')), [], 'no bin/, no scratch left behind');
  });
});
