/**
 * The archive queue limit, end to end: with `archive-push-queue-max` set and the S3 server down,
 * pgBackRest drops WAL so that the database lives on; the cluster says so (WALArchiving False,
 * reason WALDropped, and a WALDropped Event) until a new full backup starts a history that needs
 * none of the lost WAL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type S3Server, waitFor } from '@kanri/testenv';
import { BACKUP_ANNOTATION } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { backupStatus, backupsOf, backupsSpec, prepareS3, sqlOn, switchWal } from './support/backup-fixtures.js';
import { waitForClusterEvent } from './support/cluster-observers.js';

const CLUSTER = 'queue';

describe('the archive queue limit', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  let s3: S3Server;
  const archiving = async () => (await backupStatus(env, CLUSTER)).conditions?.find((c) => c.type === 'WALArchiving');

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, s3: true });
    s3 = await prepareS3(env);
    await env.startOperator();
    const backups = backupsSpec(s3);
    // pgBackRest checks the queue when an asynchronous push starts; short I/O timeouts and no
    // retries make the one stuck on the unreachable repo give up, so the next one starts sooner.
    backups.pgbackrest.global = {
      ...backups.pgbackrest.global,
      'archive-push-queue-max': '32MB',
      'io-timeout': '5',
      'job-retry': '0',
    };
    await clusters(env.client).create(clusterManifest(CLUSTER, 1, { backups } as never));
    await waitReady(env.client, CLUSTER, 1, 240_000);
    await waitFor(
      'WALArchiving True',
      async () => ((await archiving())?.status === 'True' ? true : undefined),
      120_000,
      1_000,
    );
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('drops WAL past the limit while S3 is down, says so, and recovers after a new full backup', async () => {
    await sqlOn(env, CLUSTER, 'CREATE TABLE t (n int)');
    await s3.stop();
    const stopped = performance.now();
    // Each switch after a write closes a 16 MiB segment: four exceed the 32 MB queue.
    for (let n = 0; n < 5; n++) {
      await sqlOn(env, CLUSTER, 'INSERT INTO t VALUES ($1)', [n]);
      await switchWal(env, CLUSTER);
    }
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
    await clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { [BACKUP_ANNOTATION.backup]: 'after-drop' } } },
      { namespace: 'default', type: 'merge' },
    );
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
