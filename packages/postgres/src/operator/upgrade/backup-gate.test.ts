import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresBackup, PostgresBackupStatus } from '../../api/postgres-backup.js';
import { backupGate } from './backup-gate.js';

const now = new Date('2026-12-06T12:00:00Z');
const DAY = 24 * 3_600_000;
const record = (
  name: string,
  label: string,
  extra: Partial<PostgresBackup['spec']> = {},
  phase: PostgresBackupStatus['phase'] = 'Succeeded',
): PostgresBackup => ({
  metadata: { name },
  spec: { cluster: 'db', repoName: 'repo1', type: 'full', trigger: 'manual', ...extra },
  status: { phase, label },
});
const listed = (label: string, hoursAgo: number, repo = 'repo1') => ({
  repo,
  label,
  stoppedAt: new Date(now.getTime() - hoursAgo * 3_600_000).toISOString(),
});

describe('the major upgrade backup gate', () => {
  it('opens where the PostgresBackup and pgBackRest agree on repo and label, within the window by pgBackRest’s time', () => {
    const gate = backupGate({
      records: [record('b1', '20261206-100000F')],
      reported: [listed('20261206-100000F', 2)],
      now,
      withinMs: DAY,
    });
    assert.deepEqual(gate, { open: true, backup: 'b1', label: '20261206-100000F' });
  });

  it('stays shut on a forged Succeeded status whose backup pgBackRest does not list, naming it', () => {
    const gate = backupGate({
      records: [record('forged', '20991231-000000F')],
      reported: [listed('20261201-100000F', 122)],
      now,
      withinMs: DAY,
    });
    assert.equal(gate.open, false);
    assert.match(
      gate.open ? '' : gate.why,
      /^no full backup of the last 24 h is confirmed by pgBackRest \(PostgresBackup forged says full backup 20991231-000000F in repo1, which pgBackRest's info on the primary does not list\)$/,
    );
  });

  it('stays shut when the label is pgBackRest’s but in another repo, or its backup ended too long ago (a copied label)', () => {
    const otherRepo = backupGate({
      records: [record('b', '20261206-100000F', { repoName: 'repo2' })],
      reported: [listed('20261206-100000F', 2, 'repo1')],
      now,
      withinMs: DAY,
    });
    assert.equal(otherRepo.open, false);
    const old = backupGate({
      records: [record('copied', '20261201-100000F')],
      reported: [listed('20261201-100000F', 122)],
      now,
      withinMs: DAY,
    });
    assert.deepEqual(old, { open: false, why: 'no full backup succeeded in the last 24 h' });
  });

  it('counts only Succeeded full backups, and waits for the primary’s report of the info', () => {
    const records = [
      record('incr', '20261206-100000F_20261206-110000I', { type: 'incr' }),
      record('running', '20261206-100000F', {}, 'Running'),
    ];
    assert.deepEqual(backupGate({ records, reported: [listed('20261206-100000F', 1)], now, withinMs: DAY }), {
      open: false,
      why: 'no full backup succeeded in the last 24 h',
    });
    const unreported = backupGate({
      records: [record('b', '20261206-100000F')],
      reported: undefined,
      now,
      withinMs: DAY,
    });
    assert.match(unreported.open ? '' : unreported.why, /the primary has not reported pgBackRest's info/);
  });
});
