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

/**
 * The PostgresCluster bench:peers runs: `spec.instances` Pods, never two on one node nor on the
 * gateway node, the superuser reachable with a password (the writer and the watcher use it).
 */
export function kanriCluster(spec, image, nodes) {
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
    },
  };
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

  async operatorPods(env) {
    const pods = await env.client.resource('v1', 'Pod').list({ namespace: OPERATOR_NAMESPACE });
    return pods.items.map((p) => `${OPERATOR_NAMESPACE}/${p.metadata.name}`);
  },

  async createCluster(env, spec) {
    const { client } = env;
    const ns = { namespace: spec.namespace };
    const clusters = client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster');
    const pods = client.resource('v1', 'Pod');
    await clusters.create(kanriCluster(spec, KANRI_IMAGES[0], env.instanceNodes), ns);
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
        const next = KANRI_IMAGES.find((i) => i !== current);
        await clusters.patch(spec.name, { spec: { image: next } }, { ...ns, type: 'merge' });
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
