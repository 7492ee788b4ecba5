import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  declaredRepoNames,
  FORBIDDEN_POSTGRES_BACKUP_OPTIONS,
  FORBIDDEN_RESTORE_OPTIONS,
  forbiddenOption,
  operatorOwnsGlobalOption,
  refuseOptionsRule,
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

  it('finds forbidden options as whole words, with = or a space', () => {
    assert.equal(
      forbiddenOption(['--type=time', '--target-action=pause'], FORBIDDEN_RESTORE_OPTIONS),
      '--target-action=pause',
    );
    assert.equal(forbiddenOption(['--stanza x'], FORBIDDEN_RESTORE_OPTIONS), '--stanza x');
    assert.equal(forbiddenOption(['--repo'], FORBIDDEN_RESTORE_OPTIONS), '--repo');
    assert.equal(forbiddenOption(['--process-max=2 --repo=2'], FORBIDDEN_RESTORE_OPTIONS), '--process-max=2 --repo=2');
    // Options of one repository, or longer names sharing a prefix, are not the forbidden option.
    assert.equal(
      forbiddenOption(['--repo1-retention-full=2', '--typed=x'], FORBIDDEN_POSTGRES_BACKUP_OPTIONS),
      undefined,
    );
    assert.equal(forbiddenOption(['--type=diff'], FORBIDDEN_POSTGRES_BACKUP_OPTIONS), '--type=diff');
    assert.equal(forbiddenOption(undefined, FORBIDDEN_RESTORE_OPTIONS), undefined);
  });

  it('builds a CEL rule that uses the same pattern and lists every option in its message', () => {
    const { rule, message } = refuseOptionsRule(['--a', '--b', '--c'], 'why');
    assert.equal(rule, "self.all(o, !o.matches(r'(^|\\s)(--a|--b|--c)(=|\\s|$)'))");
    assert.equal(message, 'options must not set --a, --b or --c: why');
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
    ]) {
      assert.equal(operatorOwnsGlobalOption(key, ['repo1']), true, key);
    }
    assert.equal(operatorOwnsGlobalOption('repo2-path', ['repo1']), true);
    assert.equal(operatorOwnsGlobalOption('repo12-path', ['repo1']), true);
    assert.equal(operatorOwnsGlobalOption('repo1-path', ['repo1']), false);
    assert.equal(operatorOwnsGlobalOption('repo2-path', ['repo1', 'repo2']), false);
    assert.equal(operatorOwnsGlobalOption('compress-type', []), false);
    assert.equal(operatorOwnsGlobalOption('pg2-path', ['repo1']), false);
  });
});
