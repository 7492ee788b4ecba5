/**
 * What the backup tests share: the S3 credentials Secret in PGO's layout, a `backups.pgbackrest`
 * block for testenv's S3 server, SQL on a cluster's primary, and readers of PostgresBackups and of
 * the cluster's backup status.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type S3Server, waitFor } from '@kanri/testenv';
import type pg from 'pg';
import { ANNOTATION, API_VERSION, BACKUP_ANNOTATION, BACKUP_KIND, LABEL, names } from '../../src/contract/index.js';
import { clusters, connect, type PostgresEnv, secretValue, serviceAddress } from '../harness.js';

export const BUCKET = 'backups';
export const CREDS_SECRET = 'pgo-s3-creds';

/** The bucket, and the Secret with PGO's `s3.conf` (keys) plus the S3 server's CA. */
export async function prepareS3(env: PostgresEnv): Promise<S3Server> {
  const s3 = env.cp.s3;
  if (!s3) throw new Error('the control plane runs no S3 server (startPostgresEnv({ s3: true }))');
  await s3.createBucket(BUCKET);
  await env.client.resource('v1', 'Secret').create({
    apiVersion: 'v1',
    kind: 'Secret',
    // Every test cluster may use it (clones included): the one annotation a PGO manifest needs.
    metadata: { name: CREDS_SECRET, namespace: 'default', annotations: { [ANNOTATION.allowedClusters]: '*' } },
    stringData: {
      's3.conf': `[global]\nrepo1-s3-key=${s3.accessKeyId}\nrepo1-s3-key-secret=${s3.secretAccessKey}\n`,
      'ca.crt': s3.caPem,
    },
  });
  return s3;
}

/** `global` options that reach testenv's S3 server (path style, its port and CA). */
export function s3Global(s3: S3Server): Record<string, string> {
  return {
    'repo1-storage-port': String(s3.port),
    'repo1-s3-uri-style': 'path',
    'repo1-storage-ca-file': '/etc/pgbackrest/conf.d/ca.crt',
  };
}

/** The one repo on testenv's S3 server. */
export function s3Repo(s3: S3Server, extra: Record<string, unknown> = {}) {
  return { name: 'repo1', s3: { bucket: BUCKET, endpoint: 'localhost', region: s3.region }, ...extra };
}

/**
 * `spec.dataSource` restoring stanza `db` from repo1 on testenv's S3 server, with the credentials
 * of Secret `secret`; `global` adds to the S3 options (a recorded `repo1-path`, say).
 */
export function s3DataSource(s3: S3Server, secret = CREDS_SECRET, global: Record<string, string> = {}) {
  return {
    pgbackrest: {
      stanza: 'db',
      configuration: [{ secret: { name: secret } }],
      global: { ...s3Global(s3), ...global },
      repo: s3Repo(s3),
    },
  };
}

/** `spec.backups` with repo1 on testenv's S3 server; `extra` adds to `pgbackrest`. */
export function backupsSpec(s3: S3Server, extra: Record<string, unknown> = {}) {
  return {
    pgbackrest: {
      configuration: [{ secret: { name: CREDS_SECRET } }],
      global: s3Global(s3),
      repos: [s3Repo(s3)],
      manual: { repoName: 'repo1', options: ['--type=full'] },
      ...extra,
    },
  };
}

/** Runs SQL on the cluster's primary (through its Service) as the superuser. */
export async function sqlOn<R extends pg.QueryResultRow>(
  env: PostgresEnv,
  cluster: string,
  text: string,
  params: unknown[] = [],
): Promise<R[]> {
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
}

export interface BackupObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: { type: string; trigger: string; repoName: string };
  status?: {
    phase?: string;
    sizeBytes?: number;
    label?: string;
    walStart?: string;
    walStop?: string;
    message?: string;
    startedAt?: string;
    completedAt?: string;
  };
}

export async function backupsOf(env: PostgresEnv, cluster: string): Promise<BackupObject[]> {
  const list = await env.client
    .resource<BackupObject>(API_VERSION, BACKUP_KIND)
    .list({ namespace: 'default', labelSelector: { [LABEL.cluster]: cluster } });
  return list.items;
}

export interface BackupStatusView {
  conditions?: { type: string; status: string; reason: string; message: string }[];
  primary?: string;
  pgbackrest?: {
    repos?: { stanzaCreated: boolean }[];
    manualBackup?: { id: string; succeeded?: number };
    restore?: { id: string; finished: boolean; phase?: string; succeeded?: number; failed?: number; message?: string };
  };
  archive?: { lastArchivedWal?: string; firstRecoverabilityPoint?: string; lastRecoverableTime?: string };
}

export async function backupStatus(env: PostgresEnv, cluster: string): Promise<BackupStatusView> {
  return ((await clusters(env.client).get(cluster, { namespace: 'default' })).status ?? {}) as BackupStatusView;
}

/** Closes the current WAL segment; resolves its name. */
export async function switchWal(env: PostgresEnv, cluster: string): Promise<string> {
  const rows = await sqlOn<{ wal: string }>(env, cluster, 'SELECT pg_walfile_name(pg_switch_wal()) AS wal');
  return rows[0]?.wal ?? '';
}

/**
 * Where `cluster`'s repo keeps its stanza, as the operator recorded it (`/pgbackrest/<namespace>/
 * <cluster>-<uid>/<repo>` for a new cluster); waits for the record.
 */
export async function repoPathOf(env: PostgresEnv, cluster: string, repo = 'repo1', namespace = 'default') {
  return waitFor(
    `the path of ${cluster}'s ${repo}`,
    async () => {
      const c = await clusters(env.client).get(cluster, { namespace });
      return c.status?.pgbackrest?.repoPaths?.[repo];
    },
    60_000,
    250,
  );
}

/** The S3 key prefix of `under` in `cluster`'s repo1 (its recorded path, without the leading slash). */
export async function repoPrefix(env: PostgresEnv, cluster: string, under: string, namespace = 'default') {
  return `${(await repoPathOf(env, cluster, 'repo1', namespace)).replace(/^\//, '')}/${under}`;
}

/**
 * Waits until segment `wal` of `cluster` is in its repo (its recorded path on the test bucket).
 * The bucket is the truth: `pg_stat_archiver.last_archived_wal` can name a backup's history file
 * (`…28.000F7688.backup`), archived after later segments and sorting below them.
 */
export async function waitArchived(
  env: PostgresEnv,
  cluster: string,
  wal: string,
  timeoutMs = 120_000,
  bucket = BUCKET,
): Promise<void> {
  const s3 = env.cp.s3;
  if (!s3) throw new Error('the control plane runs no S3 server');
  const prefix = await repoPrefix(env, cluster, 'archive/db/');
  await waitFor(
    `WAL ${wal} of ${cluster} in the repo`,
    async () => {
      const objects = await s3.listObjects(bucket, prefix);
      return objects.some((o) => (o.key.split('/').pop() ?? '').startsWith(wal)) ? true : undefined;
    },
    timeoutMs,
    500,
  );
}

/**
 * Creates the table `markers` and inserts `count` rows 100 ms apart; resolves the time halfway
 * between marker `keep` and the next, so a restore to it keeps exactly markers 1…`keep`.
 */
export async function writeMarkers(env: PostgresEnv, cluster: string, count: number, keep: number): Promise<Date> {
  await sqlOn(
    env,
    cluster,
    'CREATE TABLE markers (n int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())',
  );
  for (let n = 1; n <= count; n++) {
    await sqlOn(env, cluster, 'INSERT INTO markers (n) VALUES ($1)', [n]);
    await sleep(100);
  }
  const rows = await sqlOn<{ n: number; at: Date }>(env, cluster, 'SELECT n, at FROM markers ORDER BY n');
  return new Date(((rows[keep - 1]?.at.getTime() ?? 0) + (rows[keep]?.at.getTime() ?? 0)) / 2);
}

/** The markers `cluster` has now, in order. */
export async function markers(env: PostgresEnv, cluster: string): Promise<number[]> {
  return (await sqlOn<{ n: number }>(env, cluster, 'SELECT n FROM markers ORDER BY n')).map((r) => r.n);
}

/** A time as pgBackRest's `--target` takes it: `2026-12-01 10:00:00.123+00`. */
export function targetTime(t: Date): string {
  return t.toISOString().replace('T', ' ').replace('Z', '+00');
}

/**
 * Requests an in-place restore of `cluster` to `target` (the spec's `restore`, then the restore
 * annotation `id`); resolves `status.pgbackrest.restore` once that restore finished, either way.
 */
export async function restoreInPlace(env: PostgresEnv, cluster: string, id: string, target: string) {
  await clusters(env.client).patch(
    cluster,
    {
      spec: {
        backups: {
          pgbackrest: { restore: { enabled: true, repoName: 'repo1', options: ['--type=time', `--target=${target}`] } },
        },
      },
    },
    { namespace: 'default', type: 'merge' },
  );
  await clusters(env.client).patch(
    cluster,
    { metadata: { annotations: { [BACKUP_ANNOTATION.restore]: id } } },
    { namespace: 'default', type: 'merge' },
  );
  return waitFor(
    `restore ${id} of ${cluster} to finish`,
    async () => {
      const r = (await backupStatus(env, cluster)).pgbackrest?.restore;
      return r?.id === id && r.finished ? r : undefined;
    },
    300_000,
    1_000,
  );
}
