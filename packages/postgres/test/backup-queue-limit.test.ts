/**
 * A long repository outage, end to end: while archiving fails a planned switchover waits (the new
 * primary's timeline would start without its history in the repository); with
 * `archive-push-queue-max` set, pgBackRest then drops WAL so that the database lives on, and the
 * cluster says so (WALArchiving False, reason WALDropped, and a WALDropped Event) until a new full
 * backup starts a history that needs none of the lost WAL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type S3Server, waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, BACKUP_ANNOTATION, readPodReport } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { backupStatus, backupsOf, backupsSpec, prepareS3, sqlOn, switchWal } from './support/backup-fixtures.js';
import { waitForClusterEvent } from './support/cluster-observers.js';

const CLUSTER = 'queue';

describe('a long repository outage: switchover waits, the queue limit drops WAL', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  let s3: S3Server;
  const annotateCluster = (key: string, value: string | null) =>
    clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { [key]: value } } },
      { namespace: 'default', type: 'merge' },
    );
  const archiving = async () => (await backupStatus(env, CLUSTER)).conditions?.find((c) => c.type === 'WALArchiving');

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, s3: true });
    s3 = await prepareS3(env);
    await env.startOperator();
    const backups = backupsSpec(s3);
    // pgBackRest checks the queue when an asynchronous push starts; short I/O timeouts and no
    // retries make the one stuck on the unreachable repo give up, so the next one starts sooner.
    // 64 MB, not 32: WAL written before the stanza exists waits in pg_wal, and after a slow stanza
    // creation that backlog passed 32 MB once, so pgBackRest dropped segment 1 at once and the setup
    // never saw WALArchiving True (a CI run printed it). The outage below writes 80 MB.
    backups.pgbackrest.global = {
      ...backups.pgbackrest.global,
      'archive-push-queue-max': '64MB',
      'io-timeout': '5',
      'job-retry': '0',
    };
    await clusters(env.client).create(clusterManifest(CLUSTER, 2, { backups } as never));
    await waitReady(env.client, CLUSTER, 2, 240_000);
    try {
      await waitFor(
        'WALArchiving True',
        async () => ((await archiving())?.status === 'True' ? true : undefined),
        120_000,
        1_000,
      );
    } catch (error) {
      // A failed hook sets no exit code before after() runs: say here what the agents said.
      const lines = (await env.allLogs()).split('\n').filter((l) => /stanza|pgbackrest|WALArchiving|archiv/i.test(l));
      console.error(
        `WALArchiving never turned True; condition ${JSON.stringify(await archiving())}\n${lines.slice(-60).join('\n')}`,
      );
      throw error;
    }
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('waits with a switchover, drops WAL past the limit while S3 is down, says so, and recovers after a new full backup', async () => {
    await sqlOn(env, CLUSTER, 'CREATE TABLE t (n int)');
    await s3.stop();
    const stopped = performance.now();
    // Each switch after a write closes a segment: 80 MB of them exceed the 64 MB queue, whatever
    // the segment size (4 MiB in clusters Kanri makes).
    const [{ start } = { start: '' }] = await sqlOn<{ start: string }>(
      env,
      CLUSTER,
      'SELECT pg_current_wal_lsn()::text AS start',
    );
    const written = async () =>
      Number(
        (
          await sqlOn<{ bytes: string }>(
            env,
            CLUSTER,
            'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint::text AS bytes',
            [start],
          )
        )[0]?.bytes,
      );
    for (let n = 0; (await written()) < 80 * 2 ** 20; n++) {
      assert.ok(n < 200, `only ${await written()} bytes of WAL after ${n} switches`);
      await sqlOn(env, CLUSTER, 'INSERT INTO t VALUES ($1)', [n]);
      await switchWal(env, CLUSTER);
    }
    await waitFor(
      'WALArchiving False',
      async () => ((await archiving())?.status === 'False' ? true : undefined),
      120_000,
      1_000,
    );
    const primary = (await backupStatus(env, CLUSTER)).primary ?? '';
    await annotateCluster(ANNOTATION.switchover, '*');
    await sleep(15_000);
    assert.equal((await backupStatus(env, CLUSTER)).primary, primary, 'no switchover while archiving fails');
    const report = readPodReport(await env.client.resource<Pod>('v1', 'Pod').get(primary, { namespace: 'default' }));
    assert.match(report?.switchover ?? '', /waiting: WAL archiving fails/);
    await annotateCluster(ANNOTATION.switchover, null);

    const dropped = await waitFor(
      'WALArchiving False for dropped WAL',
      async () => {
        const c = await archiving();
        return c?.reason === 'WALDropped' ? c : undefined;
      },
      300_000,
      1_000,
    );
    console.error(`WAL dropped and reported ${((performance.now() - stopped) / 1000).toFixed(1)} s after S3 stopped`);
    assert.equal(dropped.status, 'False');
    assert.match(dropped.message, /take a new full backup/);
    await waitForClusterEvent(
      env.client,
      CLUSTER,
      { type: 'Warning', reason: 'WALDropped', note: /point-in-time/ },
      30_000,
    );
    // The database kept taking writes all along.
    await sqlOn(env, CLUSTER, 'INSERT INTO t VALUES (99)');

    await s3.restart();
    await annotateCluster(BACKUP_ANNOTATION.backup, 'after-drop');
    await waitFor(
      'the new full backup',
      async () => ((await backupsOf(env, CLUSTER)).some((b) => b.status?.phase === 'Succeeded') ? true : undefined),
      300_000,
      1_000,
    );
    const recovered = await waitFor(
      'WALArchiving True again',
      async () => {
        const c = await archiving();
        return c?.status === 'True' ? c : undefined;
      },
      120_000,
      1_000,
    );
    assert.equal(recovered.reason, 'Archiving');
  });
});
