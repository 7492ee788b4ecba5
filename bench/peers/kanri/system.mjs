// Kanri as a system of bench:peers: the operator installed by its generated Helm chart from the
// image packages/postgres/Dockerfile builds, and PostgresClusters of PostgreSQL 16 (PyPI's build,
// as the demo runs) with the timings every system shares (ha-timings.mjs).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { helmChart } from '../../../packages/api/dist/src/index.js';
import {
  ANNOTATION,
  API_VERSION,
  BACKUP_ANNOTATION,
  BACKUP_KIND,
  LABEL,
  names,
  PostgresClusterResource,
  postgresOperator,
} from '../../../packages/postgres/dist/src/index.js';
import { buildImages, ensureHelm, postgresImageBuildArgs, waitFor } from '../../../packages/testenv/dist/src/index.js';
import { kanriHa } from '../ha-timings.mjs';
import { instanceAffinity } from '../placement.mjs';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const IMAGE = 'ghcr.io/kanri-dev/postgres';
/** The instance image, and the tag the rolling-update row rolls to: the same build under a second name. */
export const KANRI_IMAGES = [`${IMAGE}:16`, `${IMAGE}:16-b`];
const OPERATOR_NAMESPACE = postgresOperator.namespace ?? 'postgres-operator';

/** The Secret each backup row's namespace holds: the S3 keys in pgBackRest's form, and the CA. */
const S3_SECRET = 'peers-s3';

/**
 * `spec.backups` for the S3 server of bench:peers: pgBackRest's repo1 there (path-style, the
 * server's CA from the Secret), full backups on request; compression as pgBackRest's defaults.
 *
 * @param {import('../system.mjs').PeerS3} s3
 */
export function kanriBackups(s3) {
  return {
    pgbackrest: {
      configuration: [{ secret: { name: S3_SECRET } }],
      global: {
        'repo1-storage-port': String(s3.port),
        'repo1-s3-uri-style': 'path',
        'repo1-storage-ca-file': '/etc/pgbackrest/conf.d/ca.crt',
      },
      repos: [{ name: 'repo1', s3: { bucket: s3.bucket, endpoint: s3.host, region: s3.region } }],
      manual: { repoName: 'repo1', options: ['--type=full'] },
    },
  };
}

/**
 * The PostgresCluster bench:peers runs: `spec.instances` Pods, never two on one node nor on the
 * gateway node, the superuser reachable with a password (the writer and the watcher use it).
 * With `spec.backups`, its WAL and backups go to `s3`; with `spec.restoreFrom`, it is a clone of
 * that cluster's repo1.
 *
 * @param {import('../system.mjs').ClusterSpec} spec
 * @param {string} image
 * @param {readonly string[]} nodes
 * @param {import('../system.mjs').PeerS3} [s3]
 */
export function kanriCluster(spec, image, nodes, s3) {
  if (spec.backups && !s3)
    throw new Error(`${spec.namespace}/${spec.name}: backups asked for, but the run has no S3 server`);
  return {
    apiVersion: PostgresClusterResource.apiVersion,
    kind: 'PostgresCluster',
    metadata: { name: spec.name, namespace: spec.namespace },
    spec: {
      postgresVersion: 16,
      image,
      enableSuperuserAccess: true,
      instances: [
        {
          name: 'i',
          replicas: spec.instances,
          dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: spec.storage } } },
          affinity: instanceAffinity(nodes, { [LABEL.cluster]: spec.name }),
        },
      ],
      ha: { ...kanriHa(), failsafeMode: true, ...(spec.synchronous ? { synchronous: { number: 1 } } : {}) },
      ...(spec.backups && s3 ? { backups: kanriBackups(s3) } : {}),
      ...(spec.restoreFrom
        ? { dataSource: { postgresCluster: { clusterName: spec.restoreFrom, repoName: 'repo1' } } }
        : {}),
    },
  };
}

/** The S3 keys as pgBackRest reads them from `configuration`, and the CA beside them. */
async function s3Secret(env, namespace, s3) {
  await env.client
    .resource('v1', 'Secret')
    .create(
      {
        // Every cluster of the namespace may project it: the source and the clusters restored from it.
        metadata: { name: S3_SECRET, namespace, annotations: { [ANNOTATION.allowedClusters]: '*' } },
        stringData: {
          's3.conf': `[global]\nrepo1-s3-key=${s3.accessKeyId}\nrepo1-s3-key-secret=${s3.secretAccessKey}\n`,
          'ca.crt': s3.caPem,
        },
      },
      { namespace },
    )
    .catch((error) => {
      if (!/AlreadyExists|already exists/.test(error.message)) throw error;
    });
}

/** @type {import('../system.mjs').PeerSystem} */
export const kanriSystem = {
  name: 'kanri',

  async prepare({ log }) {
    const buildArgs = postgresImageBuildArgs('16');
    const dockerfile = join(REPO, 'packages/postgres/Dockerfile');
    const built = await buildImages(
      [
        { dockerfile, context: REPO, tag: postgresOperator.image, target: 'operator', buildArgs },
        ...KANRI_IMAGES.map((tag) => ({ dockerfile, context: REPO, tag, buildArgs })),
      ],
      { onOutput: (line) => /STEP \d+\/\d+: (FROM|COPY|RUN)/.test(line) && log(`kanri image: ${line.slice(0, 100)}`) },
    );
    for (const b of built) log(`kanri image ${b.tag}: ${(b.bytes / 1e6).toFixed(0)} MB, ${(b.ms / 1000).toFixed(1)} s`);
    return { imageArchives: built.map((b) => b.archive) };
  },

  async install(env) {
    const helm = await ensureHelm();
    const dir = await mkdtemp(join(tmpdir(), 'kanri-peers-chart-'));
    try {
      for (const file of helmChart(postgresOperator)) {
        await mkdir(dirname(join(dir, file.path)), { recursive: true });
        await writeFile(join(dir, file.path), file.content);
      }
      await run(
        helm,
        [
          'install',
          'kanri',
          dir,
          '--namespace',
          OPERATOR_NAMESPACE,
          '--create-namespace',
          '--set',
          'image.pullPolicy=IfNotPresent',
          '--wait',
          '--timeout',
          '5m',
        ],
        { env: { ...process.env, KUBECONFIG: env.cp.kubeconfigPath } },
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    env.log('kanri: operator installed by its Helm chart');
  },

  // The operator places each cluster's repo at /pgbackrest/<namespace>/<name>-<uid>/repo1.
  backupPrefix: (spec) => `pgbackrest/${spec.namespace}/${spec.name}-`,

  async operatorPods(env) {
    const pods = await env.client.resource('v1', 'Pod').list({ namespace: OPERATOR_NAMESPACE });
    return pods.items.map((p) => `${OPERATOR_NAMESPACE}/${p.metadata.name}`);
  },

  async createCluster(env, spec) {
    const { client } = env;
    const ns = { namespace: spec.namespace };
    const clusters = client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster');
    const pods = client.resource('v1', 'Pod');
    if (spec.backups && env.s3) await s3Secret(env, spec.namespace, env.s3);
    await clusters.create(kanriCluster(spec, KANRI_IMAGES[0], env.instanceNodes, env.s3), ns);
    const instancePods = async () =>
      (await pods.list({ ...ns, labelSelector: `${LABEL.cluster}=${spec.name},${LABEL.instance}` })).items;
    const secret = async (key) => {
      const s = await client.resource('v1', 'Secret').get(names.superuserSecret(spec.name), ns);
      return Buffer.from(s.data?.[key] ?? '', 'base64').toString('utf8');
    };
    const imagesAre = (list, image) =>
      list.length === spec.instances &&
      list.every(
        (p) =>
          p.spec?.containers.find((c) => c.name === 'postgres')?.image === image &&
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
    return {
      async waitReady(timeoutMs) {
        await waitFor(
          `PostgresCluster ${spec.namespace}/${spec.name} Ready with ${spec.instances} instances`,
          async () => {
            const c = await clusters.get(spec.name, ns);
            const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
            return ready?.status === 'True' && c.status?.readyInstances === spec.instances;
          },
          timeoutMs,
          500,
        );
      },
      async writeTarget() {
        const service = await client.resource('v1', 'Service').get(names.primaryService(spec.name), ns);
        return {
          address: `${service.spec.clusterIP}:5432`,
          user: 'postgres',
          password: await secret('password'),
          database: 'postgres',
        };
      },
      async primary() {
        const lease = await client.resource('coordination.k8s.io/v1', 'Lease').get(names.leaderLease(spec.name), ns);
        const pod = lease.spec?.holderIdentity;
        if (!pod) throw new Error(`${spec.name}: no leader holds the Lease`);
        return { pod, node: (await pods.get(pod, ns)).spec?.nodeName };
      },
      async switchover() {
        await clusters.patch(
          spec.name,
          { metadata: { annotations: { [ANNOTATION.switchover]: '*' } } },
          {
            ...ns,
            type: 'merge',
          },
        );
      },
      async rollImage() {
        const current = (await clusters.get(spec.name, ns)).spec.image;
        const next = KANRI_IMAGES.find((i) => i !== current) ?? KANRI_IMAGES[0];
        await clusters.patch(spec.name, { spec: { image: next } }, { ...ns, type: 'merge' });
        return { from: current, to: next };
      },
      async waitRolled(timeoutMs) {
        const image = (await clusters.get(spec.name, ns)).spec.image;
        await waitFor(
          `${spec.name}: every instance on ${image} and Ready`,
          async () => {
            const c = await clusters.get(spec.name, ns);
            return c.status?.rollout?.phase === 'Idle' && imagesAre(await instancePods(), image);
          },
          timeoutMs,
          500,
        );
      },
      async instancePods() {
        return (await instancePods()).map((p) => p.metadata.name);
      },
      async backup(name) {
        const backups = client.resource(API_VERSION, BACKUP_KIND);
        const ofCluster = async () =>
          (await backups.list({ ...ns, labelSelector: `${LABEL.cluster}=${spec.name}` })).items;
        // The repo's stanza first: the operator takes no backup before it exists.
        await waitFor(
          `${spec.name}: the pgBackRest stanza`,
          async () => (await clusters.get(spec.name, ns)).status?.pgbackrest?.repos?.[0]?.stanzaCreated === true,
          600_000,
          1_000,
        );
        const known = new Set((await ofCluster()).map((b) => b.metadata.name));
        await clusters.patch(
          spec.name,
          { metadata: { annotations: { [BACKUP_ANNOTATION.backup]: name } } },
          { ...ns, type: 'merge' },
        );
        const done = await waitFor(
          `${spec.name}: the PostgresBackup for ${name} Succeeded`,
          async () => {
            const b = (await ofCluster()).find((x) => !known.has(x.metadata.name) && x.spec?.trigger === 'annotation');
            // waitFor takes a throw for "not yet": a failure is returned, and thrown below.
            return b?.status?.phase === 'Succeeded' || b?.status?.phase === 'Failed' ? b : undefined;
          },
          30 * 60_000,
          500,
        );
        if (done.status.phase === 'Failed')
          throw new Error(`backup ${done.metadata.name} failed: ${done.status.message}`);
        return { systemMs: Date.parse(done.status.completedAt) - Date.parse(done.status.startedAt) };
      },
      async delete() {
        await clusters.delete(spec.name, ns).catch(() => {});
        await waitFor(`${spec.name}'s Pods gone`, async () => (await instancePods()).length === 0, 120_000, 500);
        const claims = client.resource('v1', 'PersistentVolumeClaim');
        for (const c of (await claims.list({ ...ns, labelSelector: `${LABEL.cluster}=${spec.name}` })).items)
          await claims.delete(c.metadata.name, ns).catch(() => {});
      },
    };
  },
};
