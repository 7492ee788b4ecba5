import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { CREDENTIAL_FILE, ENV, PATH } from '../contract/index.js';
import { chooseSocketDir, loadAgentConfig, MAX_SOCKET_PATH } from './config.js';
import { loadRepoHostConfig } from './repo-host/repo-host-config.js';

const base = {
  [ENV.cluster]: 'pg',
  [ENV.podName]: 'pg-a-0',
  [ENV.namespace]: 'db',
  [ENV.podIP]: '127.1.0.1',
  [ENV.superuserPassword]: 'super-secret-1',
  [ENV.replicationPassword]: 'repl-secret-2',
  PG_BIN: '/usr/lib/postgresql/16/bin',
};

it('reads the contract environment and resolves paths through the volume mounts', () => {
  const config = loadAgentConfig({
    ...base,
    [ENV.bootstrap]: 'initdb',
    KANRI_VOLUME_MOUNTS: JSON.stringify({ '/pgdata': '/tmp/x/data', '/run/postgresql': '/tmp/x/run' }),
  });
  assert.equal(config.pgdata, '/tmp/x/data/pgdata');
  assert.equal(config.runDir, '/tmp/x/run');
  assert.equal(config.socketDir, '/tmp/x/run');
  assert.equal(config.bootstrap, 'initdb');
  assert.equal(config.pgBin, '/usr/lib/postgresql/16/bin');
});

it('refuses to start without PG_BIN: no PostgreSQL version is guessed', () => {
  const { PG_BIN: _, ...unset } = base;
  assert.throws(() => loadAgentConfig(unset), /PG_BIN must name the bin directory of the PostgreSQL the image runs/);
  assert.throws(() => loadAgentConfig({ ...base, PG_BIN: '' }), /PG_BIN must name/);
});

it('defaults to basebackup, with container paths as they are', () => {
  const config = loadAgentConfig(base);
  assert.equal(config.bootstrap, 'basebackup');
  assert.equal(config.pgdata, '/pgdata/pgdata');
  assert.equal(config.socketDir, '/run/postgresql');
});

it('reads what a major upgrade needs: the major to upgrade from, and where other majors are', () => {
  const config = loadAgentConfig({ ...base, [ENV.majorUpgradeFrom]: '15', [ENV.pgBinDirs]: '15=/opt/15/bin' });
  assert.deepEqual([config.majorUpgradeFrom, config.pgBinDirs], [15, '15=/opt/15/bin']);
  assert.deepEqual([loadAgentConfig(base).majorUpgradeFrom, loadAgentConfig(base).pgBinDirs], [undefined, undefined]);
  assert.throws(
    () => loadAgentConfig({ ...base, [ENV.majorUpgradeFrom]: 'fifteen' }),
    /PGC_MAJOR_UPGRADE_FROM must be a major version/,
  );
});

it('requires TLS at the start unless PGC_TLS_OPTIONAL is exactly true (which the operator never sets)', () => {
  assert.equal(loadAgentConfig(base).tlsOptional, false);
  assert.equal(loadAgentConfig({ ...base, [ENV.tlsOptional]: 'yes' }).tlsOptional, false);
  assert.equal(loadAgentConfig({ ...base, [ENV.tlsOptional]: 'true' }).tlsOptional, true);
});

it('reads the passwords from the credentials volume when the environment has none, as in a Pod', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kanri-credentials-'));
  try {
    writeFileSync(join(dir, CREDENTIAL_FILE.superuser), 'from-file-1');
    writeFileSync(join(dir, CREDENTIAL_FILE.replication), 'from-file-2');
    const { [ENV.superuserPassword]: _s, [ENV.replicationPassword]: _r, ...identity } = base;
    const config = loadAgentConfig({ ...identity, KANRI_VOLUME_MOUNTS: JSON.stringify({ [PATH.credentials]: dir }) });
    assert.deepEqual([config.superuserPassword, config.replicationPassword], ['from-file-1', 'from-file-2']);
    rmSync(join(dir, CREDENTIAL_FILE.replication));
    assert.throws(
      () => loadAgentConfig({ ...identity, KANRI_VOLUME_MOUNTS: JSON.stringify({ [PATH.credentials]: dir }) }),
      /replication-password cannot be read \(ENOENT\) and PGC_REPLICATION_PASSWORD is unset/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('names every problem, and never a secret value', () => {
  const error = (() => {
    try {
      loadAgentConfig({
        [ENV.superuserPassword]: 'super-secret-1',
        [ENV.podIP]: 'not-an-ip',
        [ENV.bootstrap]: 'reinit',
      });
    } catch (e) {
      return e as Error;
    }
    return undefined;
  })();
  assert.ok(error);
  for (const name of [ENV.cluster, ENV.podName, ENV.namespace, ENV.replicationPassword, ENV.podIP, ENV.bootstrap])
    assert.match(error.message, new RegExp(name));
  assert.equal(error.message.includes('super-secret-1'), false);
});

it('falls back to a short socket directory when the socket path would be too long', () => {
  const long = `/tmp/${'x'.repeat(110)}`;
  const dir = chooseSocketDir(long);
  assert.match(dir, /^\/tmp\/kanri-pg-[0-9a-f]{16}$/);
  assert.equal(chooseSocketDir(long), dir, 'stable across restarts');
  assert.notEqual(chooseSocketDir(`${long}y`), dir, 'distinct per Pod');
  const fits = `/tmp/${'y'.repeat(MAX_SOCKET_PATH - '/tmp/'.length - '/.s.PGSQL.5432'.length)}`;
  assert.equal(chooseSocketDir(fits), fits, 'exactly 107 bytes still fits');
  assert.notEqual(chooseSocketDir(`${fits}z`), `${fits}z`);
});

it('reads the repo host’s identity without passwords, and names what is missing', () => {
  const config = loadRepoHostConfig({
    [ENV.cluster]: 'pg',
    [ENV.podName]: 'pg-repo-host',
    [ENV.namespace]: 'db',
    [ENV.podIP]: '127.1.0.9',
    KANRI_VOLUME_MOUNTS: JSON.stringify({ '/run/postgresql': '/tmp/r/run' }),
  });
  assert.equal(config.runDir, '/tmp/r/run');
  assert.equal(config.podIP, '127.1.0.9');
  assert.throws(
    () => loadRepoHostConfig({ [ENV.cluster]: 'pg', [ENV.podIP]: 'not-an-ip' }),
    /POD_NAME is not set; POD_NAMESPACE is not set; POD_IP must be an IP address/,
  );
});
