import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeToolsPackages, pgBackRestPackage } from '../versions.js';
import { type DebianPackagePin, planAptFetch, planAptFetchAll } from './apt-fetch-plan.js';

const pin = (name: string, debianVersion: string, more: Partial<DebianPackagePin> = {}): DebianPackagePin => ({
  name,
  version: debianVersion.split('-')[0] ?? '',
  debianVersion,
  architecture: 'amd64',
  suite: 'bookworm',
  mirror: 'http://deb.debian.org/debian',
  sha256: '0'.repeat(64),
  ...more,
});

describe('planAptFetchAll', () => {
  const pins = [pin('containerd', '1.6.20~ds1-1+deb12u3'), pin('libgmp10', '2:6.2.1+dfsg1-1.1'), pin('runc', '1.1.5')];
  const plan = planAptFetchAll(pins, '/cache/apt-bookworm', '/scratch/download');
  const config = plan.files['/cache/apt-bookworm/apt.conf'] ?? '';

  it('downloads every pinned version with one apt-get download, after one index update', () => {
    assert.deepEqual(plan.download.args, [
      'download',
      'containerd=1.6.20~ds1-1+deb12u3',
      'libgmp10=2:6.2.1+dfsg1-1.1',
      'runc=1.1.5',
    ]);
    assert.equal(plan.download.cwd, '/scratch/download');
    assert.deepEqual(plan.update.args, ['update']);
    assert.deepEqual(plan.update.env, { APT_CONFIG: '/cache/apt-bookworm/apt.conf' });
    assert.deepEqual(plan.download.env, plan.update.env, 'both runs read the private configuration');
  });

  it("names each .deb as apt writes it, in the pins' order, an epoch's colon quoted", () => {
    assert.deepEqual(plan.debFiles, [
      '/scratch/download/containerd_1.6.20~ds1-1+deb12u3_amd64.deb',
      '/scratch/download/libgmp10_2%3a6.2.1+dfsg1-1.1_amd64.deb',
      '/scratch/download/runc_1.1.5_amd64.deb',
    ]);
  });

  it('lists one suite and resolves against nothing the machine has', () => {
    assert.equal(plan.files['/cache/apt-bookworm/sources.list'], 'deb http://deb.debian.org/debian bookworm main\n');
    assert.equal(plan.files['/cache/apt-bookworm/state/status'], '');
    assert.match(config, /^Dir::Etc::SourceParts "\/nonexistent";$/m);
    assert.match(config, /^APT::Architecture "amd64";$/m);
    for (const line of config.trim().split('\n')) {
      const value = /"(.*)"/.exec(line)?.[1] ?? '';
      if (value.startsWith('/')) assert.ok(/^\/(cache\/apt-bookworm\/|nonexistent$)/.test(value), line);
    }
    assert.ok(plan.dirs.includes('/cache/apt-bookworm/state/lists/partial'));
    assert.ok(plan.dirs.includes('/scratch/download'));
  });

  it('refuses pins that one sources line cannot serve, an empty list and a package pinned twice', () => {
    const security = pin('postgresql-15', '15.20-0+deb12u1', {
      suite: 'bookworm-security',
      mirror: 'http://deb.debian.org/debian-security',
    });
    assert.throws(() => planAptFetchAll([pins[0] as DebianPackagePin, security], '/a', '/d'), /mirror .*plan it/);
    assert.throws(
      () => planAptFetchAll([pin('a', '1'), pin('b', '1', { suite: 'trixie' })], '/a', '/d'),
      /b comes from suite trixie, not bookworm/,
    );
    assert.throws(
      () => planAptFetchAll([pin('a', '1'), pin('b', '1', { architecture: 'arm64' })], '/a', '/d'),
      /arm64/,
    );
    const mixed = planAptFetchAll([pin('a', '1'), pin('b', '1', { architecture: 'all' })], '/a', '/d');
    assert.match(mixed.files['/a/apt.conf'] ?? '', /APT::Architecture "amd64";/, 'an arch-independent package joins');
    assert.equal(mixed.debFiles[1], '/d/b_1_all.deb');
    assert.throws(() => planAptFetchAll([], '/a', '/d'), /no package/);
    assert.throws(() => planAptFetchAll([pin('a', '1'), pin('a', '2')], '/a', '/d'), /a is pinned twice/);
  });

  it('plans the pinned node tools as one fetch from bookworm', () => {
    const tools = planAptFetchAll(nodeToolsPackages, '/c', '/d');
    assert.equal(tools.download.args.length, 1 + nodeToolsPackages.length);
    assert.ok(tools.download.args.includes('containerd=1.6.20~ds1-1+deb12u3'));
    assert.ok(tools.download.args.includes('nftables=1.0.6-2+deb12u2'));
    assert.equal(tools.files['/c/sources.list'], 'deb http://deb.debian.org/debian bookworm main\n');
    for (const p of nodeToolsPackages) assert.match(p.sha256, /^[0-9a-f]{64}$/, p.name);
  });

  it('keeps the single-package plan of pgBackRest as it was', () => {
    const single = planAptFetch(pgBackRestPackage, '/cache/apt-trixie', '/scratch/download');
    assert.equal(single.debFile, '/scratch/download/pgbackrest_2.55.1-1_amd64.deb');
    assert.deepEqual(single.debFiles, [single.debFile]);
    assert.deepEqual(single.download.args, ['download', 'pgbackrest=2.55.1-1']);
  });
});
