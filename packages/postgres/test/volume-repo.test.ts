/**
 * A volume repository end to end, operator and agents together on real PostgreSQL and pgBackRest:
 * the repo host the operator starts serves the repo over TLS with the certificates it issued, the
 * primary archives WAL through it (WALArchiving turns True), and a backup requested by annotation
 * runs on the repo host against the primary and succeeds; an in-place restore to a point in time
 * reads from the repo host, which keeps running through it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import { BACKUP_ANNOTATION, names } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, volume, waitReady } from './harness.js';
import { backupStatus, backupsOf, sqlOn, switchWal } from './support/backup-fixtures.js';

const CLUSTER = 'cellar';

describe('a volume repository through the repo host', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, pgbackrest: true });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 1, {
        backups: {
          pgbackrest: {
            repos: [{ name: 'repo1', volume: { volumeClaimSpec: volume } }],
            manual: { repoName: 'repo1', options: ['--type=full'] },
          },
        },
      }),
    );
    await waitReady(env.client, CLUSTER, 1);
  });
  after(async () => {
    await env?.stop();
  });

  it('archives WAL through the repo host', async () => {
    const condition = await waitFor(
      'WALArchiving to be True',
      async () => {
        const c = (await backupStatus(env, CLUSTER)).conditions?.find((x) => x.type === 'WALArchiving');
        if (c?.status !== 'True') throw new Error(`WALArchiving: ${JSON.stringify(c)}`);
        return c;
      },
      240_000,
      500,
    );
    assert.equal(condition.status, 'True');
    const pods = await env.client.resource('v1', 'Pod').list({ namespace: 'default' });
    assert.ok(pods.items.some((p) => p.metadata?.name === names.repoHost(CLUSTER)));
  });

  it('takes a backup into the volume repo on request', async () => {
    await clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { 'postgres.kanri.dev/pgbackrest-backup': 'first' } } },
      { namespace: 'default', type: 'merge' },
    );
    const backup = await waitFor(
      'the backup to succeed',
      async () => {
        const [b] = await backupsOf(env, CLUSTER);
        if (b?.status?.phase === 'Failed') return b;
        if (b?.status?.phase !== 'Succeeded') throw new Error(`backup: ${JSON.stringify(b?.status)}`);
        return b;
      },
      300_000,
      500,
    );
    assert.equal(backup.status?.phase, 'Succeeded', backup.status?.message);
    assert.equal(backup.spec.repoName, 'repo1');
    assert.match(backup.status?.label ?? '', /F$/);
  });

  it('restores in place to a point in time from the repo host, which keeps running', async () => {
    const repoHostUid = async () =>
      (await env.client.resource('v1', 'Pod').get(names.repoHost(CLUSTER), { namespace: 'default' })).metadata?.uid;
    const before = await repoHostUid();
    await sqlOn(
      env,
      CLUSTER,
      'CREATE TABLE markers (n int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())',
    );
    for (let n = 1; n <= 10; n++) {
      await sqlOn(env, CLUSTER, 'INSERT INTO markers (n) VALUES ($1)', [n]);
      await sleep(100);
    }
    const rows = await sqlOn<{ n: number; at: Date }>(env, CLUSTER, 'SELECT n, at FROM markers ORDER BY n');
    const t = new Date(((rows[4]?.at.getTime() ?? 0) + (rows[5]?.at.getTime() ?? 0)) / 2);
    const wal = await switchWal(env, CLUSTER);
    await waitFor(
      `WAL ${wal} archived`,
      async () => {
        const last = (await backupStatus(env, CLUSTER)).archive?.lastArchivedWal ?? '';
        if (last.slice(0, 24) < wal) throw new Error(`last archived: ${last}`);
        return true;
      },
      120_000,
      500,
    );
    const target = t.toISOString().replace('T', ' ').replace('Z', '+00');
    await clusters(env.client).patch(
      CLUSTER,
      {
        metadata: { annotations: { [BACKUP_ANNOTATION.restore]: 'to-t' } },
        spec: {
          backups: {
            pgbackrest: {
              restore: { enabled: true, repoName: 'repo1', options: ['--type=time', `--target=${target}`] },
            },
          },
        },
      },
      { namespace: 'default', type: 'merge' },
    );
    const done = await waitFor(
      'the restore to succeed',
      async () => {
        const r = (await backupStatus(env, CLUSTER)).pgbackrest?.restore;
        if (r?.id === 'to-t' && r.finished && r.phase !== 'Succeeded') throw new Error(`restore failed: ${r.message}`);
        return r?.id === 'to-t' && r.finished ? r : undefined;
      },
      300_000,
      1_000,
    );
    assert.equal(done.succeeded, 1);
    await waitReady(env.client, CLUSTER, 1, 300_000);
    const restored = await sqlOn<{ n: number }>(env, CLUSTER, 'SELECT n FROM markers ORDER BY n');
    assert.deepEqual(
      restored.map((r) => r.n),
      [1, 2, 3, 4, 5],
    );
    assert.equal(await repoHostUid(), before, 'the repo host was never replaced');
  });
});
