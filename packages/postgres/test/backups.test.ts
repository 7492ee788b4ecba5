/**
 * Backups end to end, against the real control plane, real PostgreSQL 15, the pinned pgBackRest
 * and a real S3 server (versitygw over TLS): the stanza and WAL archiving, a manual backup made
 * once per annotation value and recorded as a PostgresBackup, and a point-in-time clone into a new
 * cluster that has exactly the rows committed up to the target.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import type pg from 'pg';
import { API_VERSION, BACKUP_KIND, LABEL, names } from '../src/contract/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  secretValue,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from './harness.js';

const SOURCE = 'shop';
const BUCKET = 'backups';

interface BackupObject {
  metadata: { name: string };
  spec: { type: string; trigger: string };
  status?: {
    phase?: string;
    sizeBytes?: number;
    label?: string;
    walStart?: string;
    walStop?: string;
    message?: string;
  };
}

describe('backups, WAL archiving and PITR clones with pgBackRest on S3', { timeout: 20 * 60_000 }, () => {
  let env: PostgresEnv;
  const sql = async <R extends pg.QueryResultRow>(cluster: string, text: string, params: unknown[] = []) => {
    const password = await secretValue(env.client, names.superuserSecret(cluster), 'password');
    const db = await connect(
      await serviceAddress(env.cp, 'default', names.primaryService(cluster), 5432),
      'postgres',
      password,
    );
    try {
      return (await db.query<R>(text, params)).rows;
    } finally {
      await db.end();
    }
  };
  const backups = () =>
    env.client.resource<BackupObject & { apiVersion: string; kind: string }>(API_VERSION, BACKUP_KIND);
  const backupsOf = async (cluster: string) =>
    (await backups().list({ namespace: 'default', labelSelector: { [LABEL.cluster]: cluster } })).items;
  const status = async (cluster: string) =>
    (await clusters(env.client).get(cluster, { namespace: 'default' })).status as Record<string, unknown> & {
      conditions?: { type: string; status: string; message: string }[];
      pgbackrest?: { repos?: { stanzaCreated: boolean }[]; manualBackup?: { id: string; succeeded?: number } };
      archive?: { lastArchivedWal?: string };
    };

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, s3: true });
    const s3 = env.cp.s3;
    assert.ok(s3, 'the control plane runs an S3 server');
    await s3.createBucket(BUCKET);
    // PGO's layout: credentials as a pgBackRest conf.d file, and here also the S3 server's CA.
    await env.client.resource('v1', 'Secret').create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'pgo-s3-creds', namespace: 'default' },
      stringData: {
        's3.conf': `[global]\nrepo1-s3-key=${s3.accessKeyId}\nrepo1-s3-key-secret=${s3.secretAccessKey}\n`,
        'ca.crt': s3.caPem,
      },
    });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(SOURCE, 2, {
        backups: {
          pgbackrest: {
            configuration: [{ secret: { name: 'pgo-s3-creds' } }],
            global: {
              'repo1-storage-port': String(s3.port),
              'repo1-s3-uri-style': 'path',
              'repo1-storage-ca-file': '/etc/pgbackrest/conf.d/ca.crt',
            },
            repos: [{ name: 'repo1', s3: { bucket: BUCKET, endpoint: 'localhost', region: s3.region } }],
            manual: { repoName: 'repo1', options: ['--type=full'] },
          },
        },
      } as never),
    );
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
    const wal = (await sql<{ wal: string }>(SOURCE, 'SELECT pg_walfile_name(pg_switch_wal()) AS wal'))[0]?.wal ?? '';
    const archived = await waitFor(
      `WAL ${wal} archived`,
      async () => {
        const s = await status(SOURCE);
        const condition = s.conditions?.find((c) => c.type === 'WALArchiving');
        return condition?.status === 'True' && (s.archive?.lastArchivedWal ?? '') >= wal ? s : undefined;
      },
      120_000,
      1_000,
    );
    assert.ok(archived.archive?.lastArchivedWal);
    const objects = await env.cp.s3?.listObjects(BUCKET, `pgbackrest/default/${SOURCE}/repo1/archive/db/`);
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
        const manual = (await backupsOf(SOURCE)).filter((b) => b.spec.trigger === 'annotation');
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
    const files = await env.cp.s3?.listObjects(BUCKET, `pgbackrest/default/${SOURCE}/repo1/backup/db/${label}/`);
    assert.ok((files?.length ?? 0) > 10, `the backup's files are in the bucket (${files?.length})`);
    // The same value again: nothing new, however long we wait.
    await annotate('first');
    await sleep(8_000);
    assert.equal((await backupsOf(SOURCE)).filter((b) => b.spec.trigger === 'annotation').length, 1);
    const manual = (await status(SOURCE)).pgbackrest?.manualBackup;
    assert.equal(manual?.id, 'first');
    assert.equal(manual?.succeeded, 1);
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
    const wal = (await sql<{ wal: string }>(SOURCE, 'SELECT pg_walfile_name(pg_switch_wal()) AS wal'))[0]?.wal ?? '';
    await waitFor(
      `WAL ${wal} archived`,
      async () => (((await status(SOURCE)).archive?.lastArchivedWal ?? '') >= wal ? true : undefined),
      120_000,
      1_000,
    );
    const clone = 'shop-at-t';
    await clusters(env.client).create(
      clusterManifest(clone, 1, {
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
  });
});
