import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { latestFullBackups } from './backup-info.js';
import { BackupsState } from './backups-state.js';

const at = (s: number) => new Date(Date.UTC(2026, 11, 1, 10, 0, s));

describe('archive stalls', () => {
  it('says why once every push failed for longer than the limit, counted from the later of the last success and `since`', () => {
    const state = new BackupsState();
    state.seeArchiveOutcome({ wal: 'A', ok: true }, at(0));
    state.seeArchiveOutcome({ wal: 'B', ok: false, reason: 'ERROR: [082]: x' }, at(15));
    assert.equal(state.archiveStalled(at(5), 60_000, at(50)), undefined);
    assert.equal(state.archiveStalled(at(5), 60_000, at(66)), 'ERROR: [082]: x');
    assert.equal(
      state.archiveStalled(at(30), 60_000, at(66)),
      undefined,
      'a backup started later waits its own minute',
    );
    state.seeArchiveOutcome({ wal: 'B', ok: true }, at(70));
    assert.equal(state.archiveStalled(at(5), 60_000, at(200)), undefined, 'archiving works again');
  });
});

describe('archive outcomes', () => {
  it('keeps the last failure and its reason when a push succeeds', () => {
    const state = new BackupsState();
    state.seeArchiveOutcome({ wal: 'A', ok: true }, at(0));
    const afterSuccess = state.lastFailure;
    assert.equal(afterSuccess, undefined, 'a success is no failure');
    state.seeArchiveOutcome({ wal: 'B', ok: false, reason: 'S3 down' }, at(5));
    state.seeArchiveOutcome({ wal: 'B', ok: true }, at(9));
    assert.deepEqual(state.lastFailure, { wal: 'B', time: at(5).toISOString(), reason: 'S3 down' });
    assert.deepEqual(state.lastSuccess, { wal: 'B', time: at(9).toISOString() });
    assert.equal(state.archiveFailing, false);
    state.seeArchiveOutcome({ wal: 'C', ok: true, dropped: 'dropped WAL file C' }, at(12));
    state.seeArchiveOutcome({ wal: 'D', ok: true, dropped: 'dropped WAL file D' }, at(14));
    assert.equal(state.walDropped?.wal, 'C', 'the first drop is where recovery stops');
    assert.equal(state.lastFailure?.reason, 'S3 down', 'a drop is no failure either');
  });
});

describe("pgBackRest's full backups in the report", () => {
  it('lists the latest full backups without error, at most three per repo, with pgBackRest’s end time', () => {
    const backup = (label: string, type: string, stop: number, error = false) => ({
      label,
      type,
      timestamp: { start: stop - 60, stop },
      error,
    });
    const listed = latestFullBackups('repo2', [
      backup('A', 'full', 1_000),
      backup('B', 'full', 2_000),
      backup('B_I', 'incr', 2_500),
      backup('C', 'full', 3_000, true),
      backup('D', 'full', 4_000),
      backup('E', 'full', 5_000),
    ]);
    assert.deepEqual(listed, [
      { repo: 'repo2', label: 'B', stoppedAt: new Date(2_000_000).toISOString() },
      { repo: 'repo2', label: 'D', stoppedAt: new Date(4_000_000).toISOString() },
      { repo: 'repo2', label: 'E', stoppedAt: new Date(5_000_000).toISOString() },
    ]);
    const state = new BackupsState();
    state.optionsWritten('h', undefined);
    state.stanzaCreated('h');
    state.seeFullBackups(listed);
    assert.deepEqual(state.report()?.fullBackups, listed);
  });
});

describe('the stanza and the archive target', () => {
  it('is ready only for the options written now, and archiving off drops the target', () => {
    const state = new BackupsState();
    const target = { bin: 'pgbackrest', args: ['--stanza=db'] };
    state.optionsWritten('h1', target);
    assert.equal(state.stanzaReady, false, 'no stanza yet');
    state.stanzaFailed('h1', 'failed: [049] no such bucket');
    assert.equal(state.stanzaReady, false);
    assert.equal(state.report()?.stanza, 'failed: [049] no such bucket');
    state.stanzaCreated('h1');
    assert.equal(state.stanzaReady, true);
    state.optionsWritten('h2', target);
    assert.equal(state.stanzaReady, false, 'new options need the stanza again');
    state.archivingOff('waiting: the repo host is not ready yet');
    assert.equal(state.target, undefined);
    assert.equal(state.stanza, 'waiting: the repo host is not ready yet');
  });

  it('owes a stanza-upgrade after a major upgrade until the stanza is created', () => {
    const state = new BackupsState();
    state.upgradedData(false);
    assert.equal(state.stanzaUpgradeDue, true);
    state.stanzaCreated('h');
    assert.equal(state.stanzaUpgradeDue, false);
    state.upgradedData(true);
    assert.equal(state.stanzaUpgradeDue, false, 'upgraded already');
  });

  it('forgets dropped WAL only after a full backup started after the drop', () => {
    const state = new BackupsState();
    state.seeArchiveOutcome({ wal: 'C', ok: true, dropped: 'dropped WAL file C' }, at(10));
    state.seeBackupSucceeded('full', at(5));
    assert.equal(state.walDropped?.wal, 'C', 'a backup started before the drop needs the lost WAL');
    state.seeBackupSucceeded('incr', at(20));
    assert.equal(state.walDropped?.wal, 'C', 'an incremental backup needs it too');
    state.seeBackupSucceeded('full', at(20));
    assert.equal(state.walDropped, undefined);
  });
});
