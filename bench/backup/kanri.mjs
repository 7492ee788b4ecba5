// The Kanri side of the backup benchmark: the PostgreSQL end-to-end harness
// (packages/postgres/test/harness.ts: a control plane with process nodes, the CRDs, the operator)
// with testenv's S3 server (versitygw over TLS), a bucket, the credentials Secret in PGO's layout,
// and a one-instance cluster that archives WAL to the bucket and makes full manual backups, as
// packages/postgres/test/backups.test.ts sets it up. Also: where an instance's agent keeps its
// pgBackRest configuration (read from the container's environment, as the agent resolves it).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ANNOTATION,
  API_VERSION,
  BACKUP_KIND,
  LABEL,
  names,
  PATH,
  PGBACKREST_CONF_DIR,
  PGBACKREST_STANZA,
} from '../../packages/postgres/dist/src/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  secretValue,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from '../../packages/postgres/dist/test/harness.js';
import { resolveMountPath, waitFor } from '../../packages/testenv/dist/src/index.js';

export const NS = 'default';
export const BUCKET = 'backups';
export const BACKUP_ANNOTATION = 'postgres.kanri.dev/pgbackrest-backup';

/** `spec.backups.pgbackrest` on the S3 server, as the end-to-end test declares it. */
export function backupsSpec(s3) {
  return {
    pgbackrest: {
      configuration: [{ secret: { name: 'bench-s3-creds' } }],
      global: {
        'repo1-storage-port': String(s3.port),
        'repo1-s3-uri-style': 'path',
        'repo1-storage-ca-file': '/etc/pgbackrest/conf.d/ca.crt',
      },
      repos: [{ name: 'repo1', s3: { bucket: BUCKET, endpoint: 'localhost', region: s3.region } }],
      manual: { repoName: 'repo1', options: ['--type=full'] },
    },
  };
}

/** Starts everything and the source cluster; resolves once its stanza exists. */
export async function startBackupSystem({ name, log }) {
  log('starting the control plane (2 process nodes), the S3 server and the operator');
  const env = await startPostgresEnv({ processNodes: 2, s3: true });
  try {
    const s3 = env.cp.s3;
    if (!s3) throw new Error('the control plane runs no S3 server');
    await s3.createBucket(BUCKET);
    await env.client.resource('v1', 'Secret').create({
      apiVersion: 'v1',
      kind: 'Secret',
      // The clusters that may project it: the source and its clones (Kanri refuses a Secret that does not consent).
      metadata: { name: 'bench-s3-creds', namespace: NS, annotations: { [ANNOTATION.allowedClusters]: '*' } },
      stringData: {
        's3.conf': `[global]\nrepo1-s3-key=${s3.accessKeyId}\nrepo1-s3-key-secret=${s3.secretAccessKey}\n`,
        'ca.crt': s3.caPem,
      },
    });
    await env.startOperator();
    log(`creating PostgresCluster ${name} (1 instance, WAL archiving to s3://${BUCKET})`);
    await clusters(env.client).create(clusterManifest(name, 1, { backups: backupsSpec(s3) }));
    await waitReady(env.client, name, 1, 300_000);
    await waitFor(
      'the stanza',
      async () => {
        const c = await clusters(env.client).get(name, { namespace: NS });
        return c.status?.pgbackrest?.repos?.[0]?.stanzaCreated ? true : undefined;
      },
      180_000,
      1_000,
    );
    return env;
  } catch (error) {
    await env.stop().catch(() => {});
    throw error;
  }
}

/** `host:port` of the cluster's primary Service, and the superuser's password. */
export async function primaryTarget(env, cluster) {
  const address = await serviceAddress(env.cp, NS, names.primaryService(cluster), 5432);
  const password = await secretValue(env.client, names.superuserSecret(cluster), 'password');
  const [host, port] = address.split(':');
  return { host, port: Number(port), password, address };
}

/** A pg client to the cluster's primary as postgres. */
export async function primaryClient(env, cluster) {
  const t = await primaryTarget(env, cluster);
  return connect(t.address, 'postgres', t.password);
}

/** The running agent container of a Pod of `cluster` (the one at `podIP` if given). */
export function agentContainer(env, cluster, podIP) {
  return env.cp.processNodes
    .flatMap((n) => n.containers())
    .find(
      (c) =>
        c.namespace === NS &&
        c.pod.startsWith(`${cluster}-`) &&
        !c.init &&
        c.state === 'running' &&
        (podIP === undefined || c.podIP === podIP),
    );
}

/**
 * What the agent of `container` runs pgBackRest with: the binary, its `--config`,
 * `--config-include-path` and stanza (agent/backups/pgbackrest.ts `baseArgs`), and PGDATA. Read from the
 * container's environment (`KANRI_VOLUME_MOUNTS`, `KANRI_PGBACKREST`), as the agent resolves them.
 */
export async function agentPgBackRest(container) {
  if (!container?.pid) throw new Error('the agent container is not running');
  const environ = Object.fromEntries(
    (await readFile(`/proc/${container.pid}/environ`, 'utf8'))
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const bin = environ.KANRI_PGBACKREST;
  if (!bin) throw new Error(`${container.pod}: KANRI_PGBACKREST is not set`);
  const runDir = resolveMountPath(PATH.run, environ);
  return {
    bin,
    runDir,
    pgdata: join(resolveMountPath(PATH.data, environ), 'pgdata'),
    baseArgs: [
      `--config=${join(runDir, 'pgbackrest.conf')}`,
      `--config-include-path=${resolveMountPath(PGBACKREST_CONF_DIR, environ)}`,
      `--stanza=${PGBACKREST_STANZA}`,
    ],
  };
}

export const backupResource = (env) => env.client.resource(API_VERSION, BACKUP_KIND);

/** The cluster's PostgresBackups. */
export async function backupsOf(env, cluster) {
  return (await backupResource(env).list({ namespace: NS, labelSelector: { [LABEL.cluster]: cluster } })).items;
}

export async function annotateBackup(env, cluster, value) {
  await clusters(env.client).patch(
    cluster,
    { metadata: { annotations: { [BACKUP_ANNOTATION]: value } } },
    { namespace: NS, type: 'merge' },
  );
}

export { clusterManifest, clusters, waitReady };
