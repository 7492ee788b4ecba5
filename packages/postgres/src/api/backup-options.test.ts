import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  credentialGlobalOptionsRule,
  declaredRepoNames,
  isCredentialGlobalOption,
  operatorOwnsGlobalOption,
  repoStorage,
} from './backup-options.js';

describe('backup options', () => {
  it('lists the declared repositories in order, none without backups', () => {
    assert.deepEqual(
      declaredRepoNames({ backups: { pgbackrest: { repos: [{ name: 'repo3' }, { name: 'repo1' }] } } }),
      ['repo3', 'repo1'],
    );
    assert.deepEqual(declaredRepoNames({}), []);
  });

  it("names a repository's storage, or none", () => {
    assert.equal(repoStorage({ s3: { bucket: 'b' } }), 's3');
    assert.equal(repoStorage({ volume: {} }), 'volume');
    assert.equal(repoStorage({ azure: { container: 'c' } }), 'azure');
    assert.equal(repoStorage({}), undefined);
  });

  it('knows every secret option of pgBackRest as a credential, by its numbered and its deprecated name', () => {
    for (const key of [
      'repo1-s3-key',
      'repo1-s3-key-secret',
      'repo2-s3-token',
      'repo1-s3-sse-customer-key',
      'repo3-gcs-key',
      'repo4-azure-key',
      'repo1-azure-account',
      'repo1-cipher-pass',
      'repo1-sftp-private-key-passphrase',
      'repo-s3-key',
      'repo-s3-key-secret',
      'repo-cipher-pass',
    ])
      assert.equal(isCredentialGlobalOption(key), true, key);
    for (const key of [
      'repo1-s3-key-type',
      'repo1-cipher-type',
      'repo1-s3-bucket',
      'repo1-gcs-key-type',
      'x-repo1-s3-key',
    ])
      assert.equal(isCredentialGlobalOption(key), false, key);
    // The CEL rule uses the same pattern, and its message names the key.
    assert.match(credentialGlobalOptionsRule.rule, /s3-key-secret/);
    assert.match(credentialGlobalOptionsRule.messageExpression, /^'option ' \+ self\.filter\(k, /);
  });

  it('owns the global options that locate postgres and pgBackRest, and repoN- options of undeclared repositories', () => {
    for (const key of [
      'stanza',
      'pg1-path',
      'pg1-host',
      'pg1-host-user',
      'config',
      'config-include-path',
      'log-path',
      // pgBackRest's deprecated names of the same options, which it still reads.
      'db-path',
      'db1-host',
      'db-socket-path',
      'backup-host',
      'backup-config',
    ]) {
      assert.equal(operatorOwnsGlobalOption(key, ['repo1']), true, key);
    }
    assert.equal(operatorOwnsGlobalOption('repo2-path', ['repo1']), true);
    assert.equal(operatorOwnsGlobalOption('repo12-path', ['repo1']), true);
    assert.equal(operatorOwnsGlobalOption('repo1-path', ['repo1']), false);
    assert.equal(operatorOwnsGlobalOption('repo2-path', ['repo1', 'repo2']), false);
    assert.equal(operatorOwnsGlobalOption('compress-type', []), false);
    assert.equal(operatorOwnsGlobalOption('pg2-path', ['repo1']), false);
    assert.equal(operatorOwnsGlobalOption('db-timeout', ['repo1']), false);
    assert.equal(operatorOwnsGlobalOption('backup-standby', ['repo1']), false);
  });
});
