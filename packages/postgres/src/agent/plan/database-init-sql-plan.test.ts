import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DatabaseInitSqlRun } from '../../contract/index.js';
import { shouldReadInitSql, shouldRunSql } from './database-init-sql-plan.js';

const wanted = { name: 'init', key: 'init.sql' };
const run = (change: Partial<DatabaseInitSqlRun> = {}): DatabaseInitSqlRun => ({
  configMap: 'init',
  key: 'init.sql',
  sha256: 'aa',
  result: 'Succeeded',
  finishedAt: '2026-12-07T10:00:00.000Z',
  ...change,
});

describe('databaseInitSQL plan', () => {
  it('reads the SQL while it has not run, and not once the status or this primary says it ran', () => {
    assert.equal(shouldReadInitSql({ wanted, recorded: undefined, lastRun: undefined }), true);
    assert.equal(shouldReadInitSql({ wanted: undefined, recorded: undefined, lastRun: undefined }), false);
    assert.equal(shouldReadInitSql({ wanted, recorded: 'init', lastRun: undefined }), false);
    assert.equal(shouldReadInitSql({ wanted, recorded: undefined, lastRun: run() }), false);
    // Another ConfigMap ran before: this one has not.
    assert.equal(shouldReadInitSql({ wanted, recorded: 'older', lastRun: run({ configMap: 'older' }) }), true);
    assert.equal(shouldReadInitSql({ wanted, recorded: undefined, lastRun: run({ key: 'other.sql' }) }), true);
    // A failure: read again, to see whether the text changed.
    assert.equal(shouldReadInitSql({ wanted, recorded: undefined, lastRun: run({ result: 'Failed' }) }), true);
  });

  it('does not run a text that failed again, but runs a changed one or one that could not be read', () => {
    const failed = run({ result: 'Failed', message: 'psql exited with code 3' });
    assert.equal(shouldRunSql(wanted, 'aa', failed), false);
    assert.equal(shouldRunSql(wanted, 'bb', failed), true);
    assert.equal(shouldRunSql(wanted, 'aa', run({ sha256: '', result: 'Failed' })), true);
    assert.equal(shouldRunSql(wanted, 'aa', run({ result: 'Failed', configMap: 'other' })), true);
    assert.equal(shouldRunSql(wanted, 'aa', undefined), true);
  });
});
