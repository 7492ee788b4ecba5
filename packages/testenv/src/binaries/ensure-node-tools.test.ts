import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { BinaryBuildError } from '../errors.js';
import { nodeToolsPackages } from '../versions.js';
import { ensureNodeTools } from './ensure-node-tools.js';
import { NODE_TOOLS_CNI_PLUGINS, nodeToolsVersion } from './node-tools-layout.js';

const run = promisify(execFile);

describe('ensureNodeTools', { skip: process.arch !== 'x64' && 'the pinned packages are amd64 only' }, () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kanri-node-tools-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the cached node tools, which run here with the environment it gives', async () => {
    const tools = await ensureNodeTools({ onProgress: () => {} });
    assert.equal(tools.version, nodeToolsVersion(nodeToolsPackages));
    assert.match(tools.root, /\/node-tools-bookworm-[0-9a-f]{12}$/);
    const env = { ...process.env, ...tools.env };
    const { stdout: iptables } = await run('iptables', ['--version'], { env });
    assert.equal(iptables.trim(), 'iptables v1.8.9 (nf_tables)', 'the PATH finds the nf_tables iptables first');
    const { stdout: nft } = await run('nft', ['--version'], { env });
    assert.match(nft, /^nftables v1\.0\.6/);
    const { stdout: containerd } = await run('containerd', ['--version'], { env });
    assert.match(containerd, /1\.6\.20~ds1-1\+deb12u3/);
    assert.equal(await readlink(join(tools.binDir, 'iptables-restore')), '../usr/sbin/xtables-nft-multi');
    const plugins = await readdir(tools.cniBinDir);
    for (const plugin of NODE_TOOLS_CNI_PLUGINS) assert.ok(plugins.includes(plugin), plugin);
    assert.ok((await readdir(tools.xtablesLibDir)).includes('libxt_MASQUERADE.so'));
    assert.deepEqual(await ensureNodeTools({ onProgress: () => {} }), tools, 'the second call reuses the cache');
  });

  it('says what to install when apt-get and dpkg-deb are missing, and caches nothing', async () => {
    const cacheDir = join(dir, 'no-apt');
    const path = process.env.PATH;
    process.env.PATH = join(dir, 'empty-path');
    try {
      await assert.rejects(
        ensureNodeTools({ cacheDir, onProgress: () => {} }),
        (error: unknown) =>
          error instanceof BinaryBuildError &&
          /`apt-get` and `dpkg-deb` were not found/.test(error.message) &&
          /install apt and dpkg/.test(error.message),
      );
    } finally {
      process.env.PATH = path;
    }
    const entry = join(cacheDir, `node-tools-${nodeToolsVersion(nodeToolsPackages)}`);
    assert.deepEqual(await readdir(entry), [], 'no bin/, no scratch left behind');
    assert.ok(!(await readdir(cacheDir)).some((name) => name.startsWith('apt-')), 'apt never ran');
  });
});
