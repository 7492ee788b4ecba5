import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresBackup } from '../../api/postgres-backup.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { BACKUP_LABEL, planBackups, SCHEDULED_AT_ANNOTATION, splitTypeOption } from './backup-plan.js';

const now = new Date('2026-12-01T10:05:10Z');
const cluster = (annotations: Record<string, string> = {}, extra: Record<string, unknown> = {}): PostgresCluster =>
  ({
    apiVersion: 'postgres.kanri.dev/v1',
    kind: 'PostgresCluster',
    metadata: {
      name: 'db',
      namespace: 'default',
      annotations,
      creationTimestamp: '2026-12-01T10:00:00Z',
      generation: 1,
    },
    spec: {
      postgresVersion: 15,
      instances: [],
      backups: {
        pgbackrest: {
          repos: [
            {
              name: 'repo1',
              s3: { bucket: 'b', endpoint: 'localhost', region: 'r' },
              schedules: { incremental: '*/2 * * * *' },
            },
          ],
          manual: { repoName: 'repo1', options: ['--type=diff'] },
        },
      },
      ...extra,
    },
  }) as unknown as PostgresCluster;

const made = (plan: ReturnType<typeof planBackups>) =>
  plan.create.map((r) => `${r.metadata?.name}:${r.spec.type}:${r.spec.trigger}`);

describe('planBackups', () => {
  it('makes one backup per manual annotation value, with the type from the manual options', () => {
    const first = planBackups({
      cluster: cluster({ 'postgres.kanri.dev/pgbackrest-backup': 'one' }),
      records: [],
      primaryBackups: undefined,
      now,
    });
    const manual = first.create.filter((r) => r.spec.trigger === 'annotation');
    assert.equal(manual.length, 1);
    assert.equal(manual[0]?.spec.type, 'diff');
    assert.equal(manual[0]?.spec.options, undefined);
    // The same value again, with the backup existing: nothing new.
    const again = planBackups({
      cluster: cluster({ 'postgres.kanri.dev/pgbackrest-backup': 'one' }),
      records: manual,
      primaryBackups: undefined,
      now,
    });
    assert.equal(again.create.filter((r) => r.spec.trigger === 'annotation').length, 0);
    assert.deepEqual(again.status.pgbackrest?.manualBackup, {
      id: 'one',
      name: manual[0]?.metadata?.name,
      finished: false,
    });
  });

  it('creates the latest due scheduled backup once, and none while shut down', () => {
    const plan = planBackups({ cluster: cluster(), records: [], primaryBackups: undefined, now });
    assert.deepEqual(made(plan), ['db-repo1-incr-20261201t100400z:incr:schedule']);
    assert.equal(plan.create[0]?.metadata?.annotations?.[SCHEDULED_AT_ANNOTATION], '2026-12-01T10:04:00.000Z');
    assert.equal(plan.create[0]?.metadata?.labels?.[BACKUP_LABEL.schedule], 'repo1-incremental');
    assert.equal(plan.requeueAfterMs, 50_000); // the next run, 10:06:00
    const served = planBackups({ cluster: cluster(), records: plan.create, primaryBackups: undefined, now });
    assert.deepEqual(made(served), []);
    const shutdown = planBackups({
      cluster: cluster({}, { shutdown: true }),
      records: [],
      primaryBackups: undefined,
      now,
    });
    assert.deepEqual(made(shutdown), []);
  });

  it('fails a Running backup whose heartbeat is stale, and only that one', () => {
    const running = (name: string, beat: string): PostgresBackup => ({
      apiVersion: 'postgres.kanri.dev/v1',
      kind: 'PostgresBackup',
      metadata: { name },
      spec: { cluster: 'db', repoName: 'repo1', type: 'full', trigger: 'manual' },
      status: { phase: 'Running', instance: 'db-i-0', heartbeatTime: beat },
    });
    const plan = planBackups({
      cluster: cluster(),
      records: [running('old', '2026-12-01T10:03:00Z'), running('fresh', '2026-12-01T10:05:00Z')],
      primaryBackups: undefined,
      now,
    });
    assert.deepEqual(
      plan.fail.map((f) => f.name),
      ['old'],
    );
    assert.match(plan.fail[0]?.message ?? '', /db-i-0 stopped reporting/);
  });

  it('derives WALArchiving from the primary report', () => {
    const at = (archive: Record<string, unknown>, stanza = 'created') =>
      planBackups({ cluster: cluster(), records: [], primaryBackups: { stanza, archive }, now }).condition;
    assert.equal(at({ lastArchivedWal: 'A', lastArchivedTime: '2026-12-01T10:05:00Z' })?.status, 'True');
    const failing = at({
      lastArchivedTime: '2026-12-01T10:04:00Z',
      lastFailedWal: 'B',
      lastFailedTime: '2026-12-01T10:05:00Z',
      lastFailureReason: 'ERROR: [104]: S3 down',
    });
    assert.equal(failing?.status, 'False');
    assert.equal(failing?.reason, 'ArchiveFailing');
    assert.match(failing?.message ?? '', /S3 down/);
    assert.equal(at({}, 'stanza-create failed (exit 1): x')?.reason, 'StanzaNotCreated');
    assert.equal(at({}, 'waiting: repo1 is reached through the repo host db-repo-host')?.reason, 'RepoHostNotReady');
    assert.equal(
      planBackups({ cluster: cluster(), records: [], primaryBackups: undefined, now }).condition?.status,
      'Unknown',
    );
  });

  it('refuses a manual backup whose options are outside the allow-list (a spec admitted before it), once, saying why', () => {
    const evil = (annotations: Record<string, string>, previous?: Record<string, unknown>) => {
      const c = cluster(annotations);
      const pgbackrest = c.spec.backups?.pgbackrest;
      if (pgbackrest) pgbackrest.manual = { repoName: 'repo1', options: ['--type=full', '--repo1-path=/elsewhere'] };
      if (previous) (c as { status?: unknown }).status = { pgbackrest: { manualBackup: previous } };
      return planBackups({ cluster: c, records: [], primaryBackups: undefined, now });
    };
    const first = evil({ 'postgres.kanri.dev/pgbackrest-backup': 'one' });
    assert.deepEqual(
      first.create.filter((r) => r.spec.trigger === 'annotation'),
      [],
    );
    assert.deepEqual(first.status.pgbackrest?.manualBackup, { id: 'one', finished: true, failed: 1 });
    assert.match(first.refused ?? '', /manual\.options: option --repo1-path=\/elsewhere is not allowed/);
    // Said once per request; the schedules still run.
    const again = evil(
      { 'postgres.kanri.dev/pgbackrest-backup': 'one' },
      first.status.pgbackrest?.manualBackup as never,
    );
    assert.equal(again.refused, undefined);
    assert.equal(evil({}).refused, undefined);
    assert.equal(first.create.filter((r) => r.spec.trigger === 'schedule').length, 1);
  });

  it('splits --type from the other manual options', () => {
    assert.deepEqual(splitTypeOption(['--type=incr', '--annotation=a=b']), {
      type: 'incr',
      rest: ['--annotation=a=b'],
    });
    assert.deepEqual(splitTypeOption(undefined), { type: 'full', rest: [] });
  });
});
