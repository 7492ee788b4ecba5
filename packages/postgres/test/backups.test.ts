/**
 * Backups end to end, against the real control plane, real PostgreSQL 15, the pinned pgBackRest
 * and a real S3 server (versitygw over TLS): the stanza and WAL archiving, a manual backup made
 * once per annotation value and recorded as a PostgresBackup, and a point-in-time clone into a new
 * cluster that has exactly the rows committed up to the target.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type S3Server, waitFor } from '@kanri/testenv';
import type pg from 'pg';
import { ANNOTATION, API_VERSION, BACKUP_KIND, names, REPO_READERS_ANNOTATION } from '../src/contract/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from './harness.js';
import {
  type BackupObject,
  BUCKET,
  backupStatus,
  backupsOf,
  backupsSpec,
  CREDS_SECRET,
  prepareS3,
  repoPathOf,
  repoPrefix,
  s3DataSource,
  sqlOn,
  switchWal,
  waitArchived,
} from './support/backup-fixtures.js';

const SOURCE = 'shop';

describe('backups, WAL archiving and PITR clones with pgBackRest on S3', { timeout: 20 * 60_000 }, () => {
  let env: PostgresEnv;
  let s3: S3Server;
  const sql = <R extends pg.QueryResultRow>(cluster: string, text: string, params: unknown[] = []) =>
    sqlOn<R>(env, cluster, text, params);
  const status = (cluster: string) => backupStatus(env, cluster);

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, s3: true });
    s3 = await prepareS3(env);
    await env.startOperator();
    const backups = backupsSpec(s3);
    // Keep one full backup: the second manual backup below expires the first.
    backups.pgbackrest.global = { ...backups.pgbackrest.global, 'repo1-retention-full': '1' };
    await clusters(env.client).create(clusterManifest(SOURCE, 2, { backups } as never));
    await waitReady(env.client, SOURCE, 2, 240_000);
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('creates the stanza and archives WAL, and says so in WALArchiving', async () => {
    await waitFor(
      'the stanza',
      async () => ((await status(SOURCE)).pgbackrest?.repos?.[0]?.stanzaCreated ? true : undefined),
      120_000,
      1_000,
    );
    const wal = await switchWal(env, SOURCE);
    const archived = await waitFor(
      `WAL ${wal} archived`,
      async () => {
        const s = await status(SOURCE);
        const condition = s.conditions?.find((c) => c.type === 'WALArchiving');
        return condition?.status === 'True' && s.archive?.lastArchivedWal ? s : undefined;
      },
      120_000,
      1_000,
    );
    assert.ok(archived.archive?.lastArchivedWal);
    // A new cluster's repo is under its namespace, name and UID (issue 37, finding 12).
    const source = await clusters(env.client).get(SOURCE, { namespace: 'default' });
    assert.equal(await repoPathOf(env, SOURCE), `/pgbackrest/default/${SOURCE}-${source.metadata?.uid}/repo1`);
    const objects = await env.cp.s3?.listObjects(BUCKET, await repoPrefix(env, SOURCE, 'archive/db/'));
    assert.ok(
      objects?.some((o) => o.key.includes(wal)),
      `segment ${wal} is in the bucket`,
    );
  });

  it('makes exactly one full backup per annotation value, recorded as a PostgresBackup', async () => {
    const annotate = (value: string) =>
      clusters(env.client).patch(
        SOURCE,
        { metadata: { annotations: { 'postgres.kanri.dev/pgbackrest-backup': value } } },
        { namespace: 'default', type: 'merge' },
      );
    await annotate('first');
    const done = await waitFor(
      'the manual backup to succeed',
      async () => {
        const manual = (await backupsOf(env, SOURCE)).filter((b) => b.spec.trigger === 'annotation');
        const phase = manual[0]?.status?.phase;
        if (phase === 'Failed') throw new Error(`backup failed: ${manual[0]?.status?.message}`);
        return phase === 'Succeeded' ? manual : undefined;
      },
      300_000,
      1_000,
    );
    assert.equal(done.length, 1);
    const backup = done[0] as BackupObject;
    assert.equal(backup.spec.type, 'full');
    assert.ok((backup.status?.sizeBytes ?? 0) > 1_000_000, `size ${backup.status?.sizeBytes}`);
    assert.match(backup.status?.walStart ?? '', /^[0-9A-F]{24}$/);
    const label = backup.status?.label ?? '';
    assert.match(label, /F$/);
    const files = await env.cp.s3?.listObjects(BUCKET, await repoPrefix(env, SOURCE, `backup/db/${label}/`));
    assert.ok((files?.length ?? 0) > 10, `the backup's files are in the bucket (${files?.length})`);
    // The same value again: nothing new, however long we wait.
    await annotate('first');
    await sleep(8_000);
    assert.equal((await backupsOf(env, SOURCE)).filter((b) => b.spec.trigger === 'annotation').length, 1);
    const manual = (await status(SOURCE)).pgbackrest?.manualBackup;
    assert.equal(manual?.id, 'first');
    assert.equal(manual?.succeeded, 1);

    // A new value: a second full backup, and retention (repo1-retention-full: 1) expires the first.
    await annotate('second');
    const second = await waitFor(
      'the second manual backup',
      async () => {
        const b = (await backupsOf(env, SOURCE)).filter((x) => x.spec.trigger === 'annotation');
        return b.length === 2 && b.every((x) => x.status?.phase === 'Succeeded') ? b : undefined;
      },
      300_000,
      1_000,
    );
    const labels = second.map((b) => b.status?.label ?? '').sort();
    assert.notEqual(labels[0], labels[1]);
    const left = await env.cp.s3?.listObjects(BUCKET, await repoPrefix(env, SOURCE, `backup/db/${label}/`));
    assert.equal(left?.length, 0, `the first backup ${label} expired`);
  });

  it('runs a PostgresBackup a user creates, naming the cluster', async () => {
    await env.client.resource(API_VERSION, BACKUP_KIND).create({
      apiVersion: API_VERSION,
      kind: BACKUP_KIND,
      metadata: { name: 'by-hand', namespace: 'default' },
      spec: { cluster: SOURCE, repoName: 'repo1', type: 'incr' },
    });
    const done = await waitFor(
      'the user-made backup to succeed',
      async () => {
        const b = (await backupsOf(env, SOURCE)).find((x) => x.metadata.name === 'by-hand');
        if (b?.status?.phase === 'Failed') throw new Error(`failed: ${b.status.message}`);
        return b?.status?.phase === 'Succeeded' ? b : undefined;
      },
      300_000,
      1_000,
    );
    // An incremental on top of the last full backup.
    assert.match(done.status?.label ?? '', /^\d{8}-\d{6}F_\d{8}-\d{6}I$/);
  });

  it('clones to a point in time: every marker up to T, none after', async () => {
    await sql(SOURCE, 'CREATE TABLE markers (n int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())');
    for (let n = 1; n <= 30; n++) {
      await sql(SOURCE, 'INSERT INTO markers (n) VALUES ($1)', [n]);
      await sleep(100);
    }
    const rows = await sql<{ n: number; at: Date }>(SOURCE, 'SELECT n, at FROM markers ORDER BY n');
    // T halfway between markers 15 and 16.
    const t = new Date(((rows[14]?.at.getTime() ?? 0) + (rows[15]?.at.getTime() ?? 0)) / 2);
    const wal = await switchWal(env, SOURCE);
    await waitArchived(env, SOURCE, wal);
    const clone = 'shop-at-t';
    await clusters(env.client).create(
      clusterManifest(clone, 1, {
        // The clone backs up too, into its own path: never into its source's.
        backups: backupsSpec(s3),
        dataSource: {
          postgresCluster: {
            clusterName: SOURCE,
            repoName: 'repo1',
            options: ['--type=time', `--target=${t.toISOString().replace('T', ' ').replace('Z', '+00')}`],
          },
        },
      } as never),
    );
    await waitReady(env.client, clone, 1, 300_000);
    const restored = await sql<{ n: number }>(clone, 'SELECT n FROM markers ORDER BY n');
    assert.deepEqual(
      restored.map((r) => r.n),
      Array.from({ length: 15 }, (_, i) => i + 1),
    );
    const timeline =
      (await sql<{ timeline: number }>(clone, 'SELECT timeline_id AS timeline FROM pg_control_checkpoint()'))[0]
        ?.timeline ?? 0;
    assert.ok(timeline >= 2, `the clone runs on a new timeline (${timeline})`);

    const cloneWal = await switchWal(env, clone);
    const tli = cloneWal.slice(0, 8);
    await waitFor(
      `the clone's ${cloneWal} in its own repo path`,
      async () => {
        const keys = (await env.cp.s3?.listObjects(BUCKET, await repoPrefix(env, clone, 'archive/db/'))) ?? [];
        return keys.some((o) => o.key.includes(cloneWal)) ? true : undefined;
      },
      120_000,
      1_000,
    );
    const sourceKeys = (await env.cp.s3?.listObjects(BUCKET, await repoPrefix(env, SOURCE, 'archive/db/'))) ?? [];
    assert.ok(sourceKeys.length > 0);
    assert.ok(
      !sourceKeys.some((o) => (o.key.split('/').pop() ?? '').startsWith(tli)),
      `no segment or history of the clone's timeline ${tli} in the source's repo`,
    );
  });

  it('refuses a clone in another namespace that names this cluster’s repo path, until this cluster grants it (issue 37, finding 12)', async () => {
    const TEAM = 'team-b';
    const clone = 'borrowed';
    await env.client
      .resource('v1', 'Namespace')
      .create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: TEAM } });
    // The same S3 credentials in the other namespace: what the finding is about.
    const creds = await env.client.resource('v1', 'Secret').get(CREDS_SECRET, { namespace: 'default' });
    await env.client.resource('v1', 'Secret').create({
      apiVersion: 'v1',
      kind: 'Secret',
      // Consented to the clone (finding 11), so only the repo path stands in its way.
      metadata: { name: CREDS_SECRET, namespace: TEAM, annotations: { [ANNOTATION.allowedClusters]: clone } },
      data: (creds as { data: Record<string, string> }).data,
    });
    const path = await repoPathOf(env, SOURCE);
    const manifest = clusterManifest(clone, 1, {
      dataSource: s3DataSource(s3, CREDS_SECRET, { 'repo1-path': path }),
    } as never);
    await clusters(env.client).create({ ...manifest, metadata: { name: clone, namespace: TEAM } });
    const condition = async () =>
      (await clusters(env.client).get(clone, { namespace: TEAM })).status?.conditions?.find(
        (c) => c.type === 'RepoPathsGranted',
      );
    const refused = await waitFor(
      'the refusal',
      async () => ((await condition())?.status === 'False' ? condition() : undefined),
      60_000,
      500,
    );
    assert.equal(refused?.reason, 'GrantMissing');
    assert.match(
      refused?.message ?? '',
      new RegExp(
        `${path}.*PostgresCluster default/${SOURCE}.*postgres\\.kanri\\.dev/repo-readers names ${TEAM}/${clone}`,
      ),
    );
    const pods = () => env.client.resource('v1', 'Pod').list({ namespace: TEAM });
    assert.equal((await pods()).items.length, 0, 'nothing restored');

    await clusters(env.client).patch(
      SOURCE,
      { metadata: { annotations: { [REPO_READERS_ANNOTATION]: `${TEAM}/${clone}` } } },
      { namespace: 'default', type: 'merge' },
    );
    await waitFor(
      `${TEAM}/${clone} Ready`,
      async () => {
        const c = await clusters(env.client).get(clone, { namespace: TEAM });
        return c.status?.conditions?.find((x) => x.type === 'Ready')?.status === 'True' ? c : undefined;
      },
      300_000,
      1_000,
    );
    assert.equal((await condition())?.status, 'True');
    const password = Buffer.from(
      (
        (await env.client.resource('v1', 'Secret').get(names.superuserSecret(clone), { namespace: TEAM })) as {
          data: Record<string, string>;
        }
      ).data.password ?? '',
      'base64',
    ).toString('utf8');
    const db = await connect(
      await serviceAddress(env.cp, TEAM, names.primaryService(clone), 5432),
      'postgres',
      password,
    );
    try {
      const { rows } = await db.query<{ count: string }>('SELECT count(*) FROM markers');
      assert.equal(Number(rows[0]?.count), 30, 'the granted clone has the source’s data');
    } finally {
      await db.end();
    }
  });
});
