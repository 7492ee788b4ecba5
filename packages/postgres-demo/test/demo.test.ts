/**
 * The README's main command: `npm start` brings up a Ready 3-instance cluster with its first full
 * backup on the local S3 server, on real nodes where this machine can run them (else on process
 * nodes, saying why); `npm stop` removes it all, the S3 server included.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeClient } from '@kanri/client';
import { LABEL, names, PostgresBackupResource, PostgresClusterResource } from '@kanri/postgres';
import { isProcessAlive, realNodesUnsupportedReason, waitFor } from '@kanri/testenv';
import pg from 'pg';
import { requestedNodes } from '../src/nodes.js';

const run = promisify(execFile);
const unsupported = await realNodesUnsupportedReason();
/** What `up` must choose: KANRI_DEMO_NODES when set, else real nodes wherever the machine runs them. */
const forced = requestedNodes();
const onRealNodes = forced === 'real' || (forced === 'auto' && !unsupported);
const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
let stateDir: string | undefined;

after(async () => {
  if (stateDir) {
    await run(process.execPath, [main, 'down'], { env: { ...process.env, KANRI_STATE_DIR: stateDir } }).catch(() => {});
    await rm(stateDir, { recursive: true, force: true });
  }
});

/** Majors other than the demo's 16, run side by side in a namespace of their own. */
const OTHER_MAJORS = [14, 17] as const;
const VERSIONS_NAMESPACE = 'versions';

type Obj = { apiVersion: string; kind: string; metadata: { name: string } } & Record<string, unknown>;

/**
 * Creates a one-instance cluster of each of OTHER_MAJORS beside the demo's, as a user would with
 * the image tags the demo made available, and returns each one's `server_version_num` read over
 * SQL: through its `-primary` Service's ClusterIP on real nodes (kube-proxy), its Pod's address on
 * process nodes (no kube-proxy).
 */
async function otherMajorsSideBySide(kube: KubeClient, real: boolean): Promise<Record<number, number>> {
  await kube.resource<Obj>('v1', 'Namespace').create({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: VERSIONS_NAMESPACE },
  });
  const clusters = kube.resource<
    Obj & { status?: { conditions?: { type: string; status: string; message?: string }[] } }
  >(PostgresClusterResource.apiVersion, 'PostgresCluster');
  for (const major of OTHER_MAJORS) {
    await clusters.create(
      {
        apiVersion: PostgresClusterResource.apiVersion,
        kind: 'PostgresCluster',
        metadata: { name: `v${major}` },
        spec: {
          postgresVersion: major,
          instances: [
            {
              replicas: 1,
              dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
            },
          ],
          users: [{ name: 'app', databases: ['app'] }],
        },
      },
      { namespace: VERSIONS_NAMESPACE },
    );
  }
  const versions: Record<number, number> = {};
  for (const major of OTHER_MAJORS) {
    const cluster = `v${major}`;
    let last = '';
    await waitFor(
      `PostgresCluster ${VERSIONS_NAMESPACE}/${cluster} to be Ready`,
      async () => {
        const ready = (await clusters.get(cluster, { namespace: VERSIONS_NAMESPACE })).status?.conditions?.find(
          (c) => c.type === 'Ready',
        );
        last = ready?.message ?? '';
        return ready?.status === 'True';
      },
      240_000,
      1000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; its Ready condition said: ${last}`);
    });
    const secret = (await kube.resource<Obj>('v1', 'Secret').get(names.userSecret(cluster, 'app'), {
      namespace: VERSIONS_NAMESPACE,
    })) as Obj & { data: Record<string, string> };
    const password = Buffer.from(secret.data.password ?? '', 'base64').toString();
    let host: string | undefined;
    if (real) {
      const service = (await kube.resource<Obj>('v1', 'Service').get(names.primaryService(cluster), {
        namespace: VERSIONS_NAMESPACE,
      })) as Obj & { spec?: { clusterIP?: string } };
      host = service.spec?.clusterIP;
    } else {
      const pods = await kube
        .resource<Obj & { status?: { podIP?: string } }>('v1', 'Pod')
        .list({ namespace: VERSIONS_NAMESPACE, labelSelector: `${LABEL.cluster}=${cluster}` });
      host = pods.items[0]?.status?.podIP;
    }
    assert.ok(host, `an address for ${cluster}`);
    // Ready comes before the primary's pass over spec.users has made the role and database: a
    // fresh cluster's app may briefly be refused (database "app" does not exist), as any client is.
    const db = await waitFor(
      `user app to log in to ${cluster}`,
      async () => {
        const client = new pg.Client({
          host,
          port: 5432,
          user: 'app',
          password,
          database: 'app',
          connectionTimeoutMillis: 5000,
        });
        try {
          await client.connect();
          return client;
        } catch (error) {
          await client.end().catch(() => {});
          if (/does not exist|authentication failed/.test(String(error))) return undefined;
          throw error;
        }
      },
      60_000,
      1000,
    );
    try {
      versions[major] = Number((await db.query('show server_version_num')).rows[0].server_version_num);
    } finally {
      await db.end();
    }
  }
  return versions;
}

interface Backup {
  metadata: { name: string };
  spec: { cluster: string; type: string };
  status?: { phase?: string; label?: string; sizeBytes?: number };
}

it('up prints kubectl get pgc, the first backup and a psql line that connects; down stops every process and removes its files', {
  timeout: 900_000,
}, async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'kanri-demo-test-'));
  const env = { ...process.env, KANRI_STATE_DIR: stateDir };
  const { stdout } = await run(process.execPath, [main, 'up'], { env, timeout: 540_000 });
  assert.match(stdout, /hippo\s+True\s+3\s+3\s+hippo-instance1-\d/);
  if (onRealNodes) assert.match(stdout, /The instances run on real nodes/);
  else if (forced === 'process') assert.match(stdout, /The instances run on process nodes\.$/m);
  else assert.ok(stdout.includes(`process nodes (not real nodes: ${unsupported})`), stdout);
  // The backup printed is a real one: its PostgresBackup succeeded, with its label and a size.
  const printed = /Backup (\S+): full, label (\S+), .* \((\d+) bytes\)/.exec(stdout);
  assert.ok(printed, `a backup line in:\n${stdout}`);
  const [, name, label, bytes] = printed as unknown as [string, string, string, string];
  const window = /Recovery window: (\S+) … (\S+)/.exec(stdout);
  assert.ok(window && !Number.isNaN(Date.parse(window[1] ?? '')) && !Number.isNaN(Date.parse(window[2] ?? '')), stdout);
  assert.match(stdout, /kubectl get pgbackup/);
  assert.doesNotMatch(stdout, /MissingClusterDNS/);
  const demoDir = join(stateDir, 'postgres-demo');
  const kube = await KubeClient.load({ kubeconfig: join(demoDir, 'kubeconfig') });
  try {
    const backup = await kube
      .resource<Backup & { apiVersion: string; kind: string }>(
        PostgresBackupResource.apiVersion,
        PostgresBackupResource.kind,
      )
      .get(name, { namespace: 'default' });
    assert.equal(backup.spec.cluster, 'hippo');
    assert.equal(backup.spec.type, 'full');
    assert.equal(backup.status?.phase, 'Succeeded');
    assert.equal(backup.status?.label, label);
    assert.match(label, /^\d{8}-\d{6}F$/);
    assert.ok((backup.status?.sizeBytes ?? 0) > 0, `size ${backup.status?.sizeBytes}`);
    assert.equal(backup.status?.sizeBytes, Number(bytes));
    // Where the machine allows, the instances are containers of the built image, run by real kubelets.
    const pods = await kube
      .resource<{
        apiVersion: string;
        kind: string;
        metadata: { name: string };
        spec?: { nodeName?: string };
        status?: { containerStatuses?: { containerID?: string; image?: string }[] };
      }>('v1', 'Pod')
      .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=hippo` });
    assert.equal(pods.items.length >= 3, true, `${pods.items.length} instance Pods`);
    for (const pod of pods.items) {
      const container = pod.status?.containerStatuses?.[0];
      if (!onRealNodes) assert.match(pod.spec?.nodeName ?? '', /^process-node-/, pod.metadata.name);
      else {
        assert.match(pod.spec?.nodeName ?? '', /^real-node-/, pod.metadata.name);
        assert.match(container?.containerID ?? '', /^containerd:\/\//, pod.metadata.name);
        assert.equal(container?.image, 'ghcr.io/kanri-dev/postgres:16', pod.metadata.name);
      }
    }
    // Real nodes have a cluster DNS: no kubelet falls back to the host's resolver for a Pod.
    const events = await kube
      .resource<{ apiVersion: string; kind: string; reason?: string; message?: string }>('v1', 'Event')
      .list({});
    assert.deepEqual(
      events.items.filter((e) => e.reason === 'MissingClusterDNS').map((e) => e.message),
      [],
      'no MissingClusterDNS Event',
    );
  } finally {
    await kube.close();
  }
  const psql = /PGPASSFILE=(\S+) psql -h (\S+) -p (\d+) -U app app/.exec(stdout);
  assert.ok(psql, `a psql line in:\n${stdout}`);
  const [, pgpass, host, port] = psql as unknown as [string, string, string, string];
  const password = (await readFile(pgpass, 'utf8')).trim().split(':').slice(4).join(':');
  assert.equal(stdout.includes(password), false, 'the password is not printed');
  const db = new pg.Client({
    host,
    port: Number(port),
    user: 'app',
    password,
    database: 'app',
    connectionTimeoutMillis: 5000,
  });
  await db.connect();
  try {
    assert.deepEqual((await db.query('select current_user as u, pg_is_in_recovery() as r')).rows, [
      { u: 'app', r: false },
    ]);
  } finally {
    await db.end();
  }
  // Every major admission takes runs on the demo's nodes too, not only the demo's 16 (issue 44).
  const versionsKube = await KubeClient.load({ kubeconfig: join(demoDir, 'kubeconfig') });
  try {
    const versions = await otherMajorsSideBySide(versionsKube, onRealNodes);
    console.log(`server_version_num: ${OTHER_MAJORS.map((m) => `v${m} ${versions[m]}`).join(', ')}`);
    for (const major of OTHER_MAJORS)
      assert.equal(Math.floor((versions[major] ?? 0) / 10_000), major, `v${major}: ${versions[major]}`);
  } finally {
    await versionsKube.close();
  }
  const state = JSON.parse(await readFile(join(demoDir, 'state.json'), 'utf8')) as { pid: number; s3Pid: number };
  assert.ok(isProcessAlive(state.s3Pid), 'the S3 server runs');
  // Running `up` again reports the running demo instead of starting another.
  const again = await run(process.execPath, [main, 'up'], { env, timeout: 60_000 });
  assert.match(again.stdout, /hippo\s+True/);
  await run(process.execPath, [main, 'down'], { env, timeout: 120_000 });
  assert.equal(isProcessAlive(state.pid), false);
  assert.equal(isProcessAlive(state.s3Pid), false, 'down stopped the S3 server');
  assert.equal(existsSync(join(stateDir, 'postgres-demo')), false);
});
