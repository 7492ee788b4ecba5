import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideArchivePermit } from '../plan/archive-plan.js';
import { backupStatusFields, firstRecoverabilityPoint, humanSize, parseBackups } from './backup-info.js';
import { BackupsState } from './backups-state.js';
import { usableSpec } from './primary-backups.js';

const INFO = JSON.stringify([
  {
    name: 'db',
    backup: [
      {
        label: '20261201-172405F',
        type: 'full',
        timestamp: { start: 1796145845, stop: 1796145849 },
        info: { size: 22988888, delta: 22988888, repository: { size: 3056154, delta: 3056154 } },
        archive: { start: '000000010000000000000004', stop: '000000010000000000000004' },
        lsn: { start: '0/4000028', stop: '0/4000138' },
        error: false,
      },
    ],
  },
]);

describe('pgbackrest info', () => {
  it('reads the backups even after a warning printed before the JSON', () => {
    const backups = parseBackups(`P00   WARN: environment contains invalid option 'bin'\n${INFO}`, 'db');
    assert.equal(backups[0]?.label, '20261201-172405F');
    assert.deepEqual(parseBackups('not json', 'db'), []);
    assert.deepEqual(parseBackups(INFO, 'other'), []);
  });

  it("records label, sizes, duration and the WAL range of a backup, and the repo's first restorable time", () => {
    const [backup] = parseBackups(INFO, 'db');
    assert.ok(backup);
    assert.deepEqual(backupStatusFields(backup), {
      label: '20261201-172405F',
      duration: '4s',
      sizeBytes: 22988888,
      size: '21.9 MiB',
      repoSizeBytes: 3056154,
      walStart: '000000010000000000000004',
      walStop: '000000010000000000000004',
      lsnStart: '0/4000028',
      lsnStop: '0/4000138',
    });
    assert.equal(firstRecoverabilityPoint([backup]), new Date(1796145849 * 1000).toISOString());
    assert.equal(humanSize(512), '512 B');
  });
});

describe('the archive permit', () => {
  const input = {
    specKnown: true,
    archiving: true,
    leading: true,
    stanzaReady: true,
    bin: 'pgbackrest',
    args: ['--stanza=db'],
  };
  it('pushes only for the leader with a stanza, skips without repos, refuses otherwise', () => {
    assert.equal(decideArchivePermit(input).action, 'push');
    assert.equal(decideArchivePermit({ ...input, archiving: false, leading: false }).action, 'skip');
    assert.equal(decideArchivePermit({ ...input, leading: false }).action, 'refuse');
    assert.equal(decideArchivePermit({ ...input, stanzaReady: false }).action, 'refuse');
    assert.equal(decideArchivePermit({ ...input, args: undefined }).action, 'refuse');
    assert.equal(decideArchivePermit({ ...input, specKnown: false }).action, 'refuse');
  });
});

describe('BackupsState', () => {
  it('tells a failing archive from a recovered one, and remembers dropped WAL', () => {
    const state = new BackupsState();
    state.seeArchiveOutcome({ wal: 'A', ok: true }, new Date('2026-12-01T10:00:00Z'));
    state.seeArchiveOutcome({ wal: 'B', ok: false, reason: 'S3 down' }, new Date('2026-12-01T10:00:05Z'));
    assert.equal(state.archiveFailing, true);
    state.seeArchiveOutcome({ wal: 'B', ok: true, dropped: 'dropped WAL file B' }, new Date('2026-12-01T10:00:09Z'));
    assert.equal(state.archiveFailing, false);
    assert.equal(state.walDropped?.wal, 'B');
    state.optionsWritten('h', undefined);
    state.stanzaCreated('h');
    assert.deepEqual(state.report()?.walDropped, { wal: 'B', time: '2026-12-01T10:00:09.000Z' });
  });

  it('uses the s3 repos and names the others unsupported', () => {
    const { usable, unsupported } = usableSpec({
      repos: [
        { name: 'repo1', s3: { bucket: 'b', endpoint: 'e', region: 'r' } },
        { name: 'repo2', gcs: { bucket: 'g' } },
      ],
    });
    assert.deepEqual(
      usable?.repos.map((r) => r.name),
      ['repo1'],
    );
    assert.match(unsupported[0] ?? '', /repo2: gcs/);
    assert.deepEqual(usableSpec(undefined), { unsupported: [] });
  });
});
