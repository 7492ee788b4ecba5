import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refusedSpec } from './backup-runner.js';

describe('the backup runner, before it runs pgBackRest', () => {
  it('refuses a PostgresBackup admitted before the allow-list, or written past admission, saying why', () => {
    assert.equal(refusedSpec({ type: 'diff', options: ['--process-max=2', '--annotation=why=nightly'] }), undefined);
    assert.equal(refusedSpec(undefined), undefined);
    assert.match(
      refusedSpec({ type: 'full', options: ['--repo1-s3-endpoint=evil.example'] }) ?? '',
      /^spec\.options: option --repo1-s3-endpoint=evil\.example is not allowed: .*an allow-list/,
    );
    assert.match(refusedSpec({ options: ['--repo1-path=/x'] }) ?? '', /option --repo1-path=\/x is not allowed/);
    assert.match(refusedSpec({ type: 'full', options: ['--type=incr'] }) ?? '', /option --type=incr is not allowed/);
    assert.match(refusedSpec({ type: 'full --repo1-path=/x' }) ?? '', /^spec\.type: .* is not one of full, diff, incr/);
    assert.match(refusedSpec({ options: '--repo1-path=/x' }) ?? '', /spec\.options: not a list of strings/);
    assert.match(refusedSpec({ options: [1] }) ?? '', /spec\.options: not a list of strings/);
  });
});
