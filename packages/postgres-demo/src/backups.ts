/**
 * The demo's backups: a pgBackRest repository on the control plane's local S3 server, the first
 * full backup once the cluster is Ready, and the lines that report it.
 *
 * The S3 server (versitygw) is testenv's, so it listens on 127.0.0.1 only and goes with the
 * control plane. The cluster reads its S3 keys and CA from a Secret in PGO's layout (a conf.d
 * file), as a user would write it for a real bucket.
 */
import type { KubeClient } from '@kanri/client';
import {
  ANNOTATION,
  BACKUP_ANNOTATION,
  PostgresBackupResource,
  type PostgresCluster,
  PostgresClusterResource,
} from '@kanri/postgres';
import { type S3Server, waitFor } from '@kanri/testenv';

export const BUCKET = 'backups';
export const REPO = 'repo1';
/** The annotation value of the backup `npm start` takes; README's own backups use other values. */
export const FIRST_BACKUP_ID = 'npm-start';

export interface BackupObject {
  readonly metadata: { readonly name: string };
  readonly spec: { readonly type: string; readonly repoName: string };
  readonly status?: {
    readonly phase?: string;
    readonly message?: string;
    readonly label?: string;
    readonly sizeBytes?: number;
    readonly size?: string;
    readonly duration?: string;
  };
}

interface BackupsStatus {
  readonly pgbackrest?: {
    readonly repos?: readonly { readonly name: string; readonly stanzaCreated: boolean }[];
    readonly manualBackup?: { readonly id: string; readonly name?: string };
  };
  readonly archive?: { readonly firstRecoverabilityPoint?: string; readonly lastRecoverableTime?: string };
}

/** The Secret `<cluster>-s3-creds`: the S3 keys as a pgBackRest conf.d file, and the server's CA. */
export function buildS3CredsSecret(cluster: string, namespace: string, s3: S3Server) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    // The one annotation that lets the cluster use it (Kanri refuses a Secret that does not consent).
    metadata: { name: `${cluster}-s3-creds`, namespace, annotations: { [ANNOTATION.allowedClusters]: cluster } },
    stringData: {
      's3.conf': `[global]\n${REPO}-s3-key=${s3.accessKeyId}\n${REPO}-s3-key-secret=${s3.secretAccessKey}\n`,
      'ca.crt': s3.caPem,
    },
  };
}

/** `spec.backups` for a cluster backed up to the local S3 server (PGO's shape). */
export function buildBackupsSpec(cluster: string, s3: S3Server) {
  return {
    pgbackrest: {
      configuration: [{ secret: { name: `${cluster}-s3-creds` } }],
      global: {
        [`${REPO}-storage-port`]: String(s3.port),
        // versitygw serves buckets by path, not as <bucket>.localhost.
        [`${REPO}-s3-uri-style`]: 'path',
        // conf.d is where the configuration Secret's files are mounted.
        [`${REPO}-storage-ca-file`]: '/etc/pgbackrest/conf.d/ca.crt',
      },
      repos: [{ name: REPO, s3: { bucket: BUCKET, endpoint: s3.host, region: s3.region } }],
      manual: { repoName: REPO, options: ['--type=full'] },
    },
  };
}

const clusters = (client: KubeClient) =>
  client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
const backups = (client: KubeClient) =>
  client.resource<BackupObject & { apiVersion: string; kind: string }>(
    PostgresBackupResource.apiVersion,
    PostgresBackupResource.kind,
  );
const statusOf = (c: PostgresCluster) => (c.status ?? {}) as BackupsStatus;

/**
 * Requests a full backup through the annotation, as a user would, and waits until its
 * PostgresBackup has succeeded, logging each change of what it waits for.
 */
export async function takeFirstBackup(
  client: KubeClient,
  cluster: string,
  namespace: string,
  log: (line: string) => void,
  signal: AbortSignal,
): Promise<BackupObject> {
  await clusters(client).patch(
    cluster,
    { metadata: { annotations: { [BACKUP_ANNOTATION.backup]: FIRST_BACKUP_ID } } },
    { namespace, type: 'merge' },
  );
  let last = '';
  const say = (line: string) => {
    if (line !== last) log(`      ${line}`);
    last = line;
  };
  return waitFor(
    'the first backup to succeed',
    async () => {
      signal.throwIfAborted();
      const status = statusOf(await clusters(client).get(cluster, { namespace }));
      const name = status.pgbackrest?.manualBackup?.id === FIRST_BACKUP_ID && status.pgbackrest.manualBackup.name;
      if (!status.pgbackrest?.repos?.some((r) => r.name === REPO && r.stanzaCreated)) {
        say(`creating the stanza in s3://${BUCKET}…`);
        return undefined;
      }
      if (!name) return undefined;
      const backup = await backups(client)
        .get(name, { namespace })
        .catch(() => undefined);
      const phase = backup?.status?.phase ?? 'Pending';
      if (phase === 'Failed') throw new Error(`backup ${name} failed: ${backup?.status?.message ?? 'no message'}`);
      // The primary reports the recovery window once pgBackRest lists the backup: a few seconds later.
      const windowKnown = Boolean(status.archive?.firstRecoverabilityPoint);
      say(
        `backup ${name}: ${phase}${phase === 'Succeeded' && !windowKnown ? '; waiting for the recovery window' : ''}`,
      );
      return phase === 'Succeeded' && windowKnown ? backup : undefined;
    },
    600_000,
    1_000,
  );
}

/** What `npm start` reports about backups: the first backup, the recovery window and how to look. */
export async function describeBackups(client: KubeClient, cluster: string, namespace: string): Promise<string[]> {
  const status = statusOf(await clusters(client).get(cluster, { namespace }));
  const list = (await backups(client).list({ namespace })).items;
  const first = list.find((b) => b.metadata.name === status.pgbackrest?.manualBackup?.name) ?? list[0];
  const lines: string[] = [];
  if (first?.status?.phase === 'Succeeded') {
    lines.push(
      `Backup ${first.metadata.name}: ${first.spec.type}, label ${first.status.label}, ${first.status.size} (${first.status.sizeBytes} bytes) in ${first.status.duration}, in s3://${BUCKET} (${first.spec.repoName})`,
    );
  }
  const archive = status.archive;
  lines.push(
    `Recovery window: ${archive?.firstRecoverabilityPoint ?? '(no backup yet)'} … ${archive?.lastRecoverableTime ?? '(no WAL archived yet)'}`,
  );
  return lines;
}
