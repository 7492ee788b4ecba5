import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeToolsPackages } from '../versions.js';
import {
  NODE_TOOLS_BIN_LINKS,
  nodeToolsChecks,
  nodeToolsEnv,
  nodeToolsPaths,
  nodeToolsUnsupported,
  nodeToolsVersion,
} from './node-tools-layout.js';

describe('node tools layout', () => {
  it('derives a version that changes with any pin, so a changed package is never served from an old entry', () => {
    const version = nodeToolsVersion(nodeToolsPackages);
    assert.match(version, /^bookworm-[0-9a-f]{12}$/);
    assert.equal(nodeToolsVersion([...nodeToolsPackages]), version, 'stable for the same pins');
    const [first, ...rest] = nodeToolsPackages;
    assert.notEqual(nodeToolsVersion([{ ...first, sha256: 'f'.repeat(64) }, ...rest]), version, 'a checksum');
    assert.notEqual(nodeToolsVersion([{ ...first, debianVersion: '1.6.20~ds1-1+deb12u4' }, ...rest]), version);
    assert.notEqual(nodeToolsVersion([{ ...first, version: '1.6.21' }, ...rest]), version, 'the version checked');
    assert.notEqual(nodeToolsVersion(rest), version, 'a package dropped');
  });

  it('puts the commands in bin/, the CNI plugins and libraries where Debian unpacks them', () => {
    const paths = nodeToolsPaths('/c/node-tools-v');
    assert.deepEqual(paths, {
      root: '/c/node-tools-v',
      binDir: '/c/node-tools-v/bin',
      cniBinDir: '/c/node-tools-v/usr/lib/cni',
      libDir: '/c/node-tools-v/usr/lib/x86_64-linux-gnu',
      xtablesLibDir: '/c/node-tools-v/usr/lib/x86_64-linux-gnu/xtables',
    });
  });

  it('links every iptables command to the nf_tables multi-call binary, relative to bin/', () => {
    for (const name of ['iptables', 'iptables-save', 'iptables-restore', 'ip6tables', 'ip6tables-save']) {
      assert.equal(NODE_TOOLS_BIN_LINKS[name], '../usr/sbin/xtables-nft-multi', name);
    }
    assert.equal(NODE_TOOLS_BIN_LINKS['ip6tables-restore'], '../usr/sbin/xtables-nft-multi');
    for (const name of [
      'containerd',
      'containerd-shim-runc-v2',
      'ctr',
      'runc',
      'nft',
      'buildah',
      'mmdebstrap',
      'patchelf',
    ]) {
      assert.match(NODE_TOOLS_BIN_LINKS[name] ?? '', new RegExp(`^\\.\\./usr/s?bin/${name}$`), name);
    }
    assert.ok(
      Object.values(NODE_TOOLS_BIN_LINKS).every((t) => !t.includes('legacy')),
      'never the legacy backend',
    );
  });

  it('gives a child process the tools first on PATH, their libraries and only their xtables extensions', () => {
    const paths = nodeToolsPaths('/t');
    const env = nodeToolsEnv(paths, { PATH: '/usr/bin:/bin', LD_LIBRARY_PATH: '/opt/lib', XTABLES_LIBDIR: '/x' });
    assert.deepEqual(env, {
      PATH: '/t/bin:/usr/bin:/bin',
      LD_LIBRARY_PATH: '/t/usr/lib/x86_64-linux-gnu:/opt/lib',
      XTABLES_LIBDIR: '/t/usr/lib/x86_64-linux-gnu/xtables',
    });
    const bare = nodeToolsEnv(paths, {});
    assert.equal(bare.LD_LIBRARY_PATH, '/t/usr/lib/x86_64-linux-gnu');
    assert.match(bare.PATH, /^\/t\/bin:.*\/usr\/sbin:.*\/usr\/bin/, 'a default PATH behind bin/ when there is none');
  });

  it('checks the pinned versions, and that iptables is the nf_tables variant', () => {
    const checks = nodeToolsChecks(nodeToolsPackages);
    assert.deepEqual(
      checks.map((c) => [c.pin.name, c.command, ...c.args]),
      [
        ['containerd', 'containerd', '--version'],
        ['runc', 'runc', '--version'],
        ['iptables', 'iptables', '--version'],
        ['nftables', 'nft', '--version'],
        ['ipset', 'ipset', 'version'],
        ['buildah', 'buildah', '--version'],
        ['mmdebstrap', 'mmdebstrap', '--version'],
        ['patchelf', 'patchelf', '--version'],
      ],
    );
    const expect = Object.fromEntries(checks.map((c) => [c.command, c.expect]));
    assert.deepEqual(expect.containerd, ['1.6.20~ds1-1+deb12u3']);
    assert.deepEqual(expect.runc, ['runc version 1.1.5', '1.1.5+ds1-1+deb12u1']);
    assert.deepEqual(expect.iptables, ['iptables v1.8.9 (nf_tables)']);
    assert.deepEqual(expect.nft, ['nftables v1.0.6']);
    assert.deepEqual(expect.ipset, ['ipset v7.17']);
    for (const check of checks) assert.ok(check.command in NODE_TOOLS_BIN_LINKS, `${check.command} is in bin/`);
    assert.throws(() => nodeToolsChecks(nodeToolsPackages.filter((p) => p.name !== 'runc')), /no pinned package runc/);
  });

  it('says what is missing on a machine that cannot fetch or run them', () => {
    assert.equal(nodeToolsUnsupported('x64', []), undefined);
    assert.match(
      nodeToolsUnsupported('arm64', []) ?? '',
      /^node-tools: .*amd64 \(x86_64\) only; this machine is arm64$/,
    );
    assert.match(nodeToolsUnsupported('x64', ['dpkg-deb']) ?? '', /`dpkg-deb` was not found on the PATH.*install apt/);
    const both = nodeToolsUnsupported('arm64', ['apt-get', 'dpkg-deb']) ?? '';
    assert.match(both, /arm64/);
    assert.match(both, /`apt-get` and `dpkg-deb` were not found/);
  });
});
