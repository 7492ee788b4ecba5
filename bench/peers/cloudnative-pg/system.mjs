// CloudNativePG 1.30.0 as a system of `npm run bench:peers` (contract: ../system.mjs). Its
// manager is built from the Go module (go/go.mod pins it), its operator and operand images with
// buildah from the Dockerfiles here, and it is installed from its released manifest (vendored
// beside this file), rewritten only to name the images built here.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildImages, cacheRoot } from '@kanri/testenv';
import { queryOnce } from '../../failover/writer.mjs';
import {
  BACKUP_PREFIX,
  BARMAN_VERSION,
  backupManifest,
  CNPG_VERSION,
  clusterManifest,
  MANIFEST_FILE,
  MANIFEST_SHA256,
  OPERATOR_DEPLOYMENT,
  OPERATOR_IMAGE,
  OPERATOR_NAMESPACE,
  operatorManifest,
  PG_WHEEL,
  POSTGRES_IMAGES,
  promotePatch,
  S3_SECRET,
  toYamlStream,
} from './manifests.mjs';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const GO_MODULE = join(HERE, 'go');
const MANAGER_PACKAGE = 'github.com/cloudnative-pg/cloudnative-pg/cmd/manager';
const CLUSTER_API = 'postgresql.cnpg.io/v1';
/** A cold build printed nothing for minutes: say it is still going. */
const PROGRESS_EVERY_MS = 30_000;

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where the manager binary is cached, per version. */
export function managerPath() {
  return join(cacheRoot(), `cloudnative-pg-v${CNPG_VERSION}`, 'manager');
}

/**
 * Builds CNPG's manager from the pinned module unless it is cached. Static (CGO_ENABLED=0), as
 * CNPG's own release builds it; `manager version` reports 1.30.0 without ldflags (pkg/versions
 * has it as buildVersion's default).
 *
 * @param {(message: string) => void} log
 */
export async function ensureManager(log) {
  const target = managerPath();
  if (
    await stat(target).then(
      (s) => s.isFile(),
      () => false,
    )
  )
    return target;
  await mkdir(join(target, '..'), { recursive: true });
  const partial = `${target}.${process.pid}.partial`;
  const started = performance.now();
  log(`cloudnative-pg: building the manager ${CNPG_VERSION} with go (minutes when cold)`);
  await new Promise((resolve, reject) => {
    const child = spawn('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', partial, MANAGER_PACKAGE], {
      cwd: GO_MODULE,
      env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const timer = setInterval(
      () => log(`cloudnative-pg: still building the manager (${Math.round((performance.now() - started) / 1000)} s)`),
      PROGRESS_EVERY_MS,
    );
    child.on('error', (error) => {
      clearInterval(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearInterval(timer);
      if (code === 0) resolve(undefined);
      else reject(new Error(`go build ${MANAGER_PACKAGE} failed (${signal ?? `exit ${code}`})`));
    });
  });
  await rename(partial, target);
  log(`cloudnative-pg: manager built in ${Math.round((performance.now() - started) / 1000)} s`);
  return target;
}

/** The released manifest, refused if it is not the one pinned. */
async function releasedManifest() {
  const text = await readFile(join(HERE, MANIFEST_FILE), 'utf8');
  const sha256 = createHash('sha256').update(text).digest('hex');
  if (sha256 !== MANIFEST_SHA256) throw new Error(`${MANIFEST_FILE} has SHA-256 ${sha256}, not ${MANIFEST_SHA256}`);
  return text;
}

/** Writes `text` to a temporary file for kubectl, runs `use`, removes it. */
async function withTempFile(/** @type {string} */ name, /** @type {string} */ text, use) {
  const dir = await mkdtemp(join(tmpdir(), 'kanri-cnpg-'));
  try {
    const file = join(dir, name);
    await writeFile(file, text);
    return await use(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Polls `check` every `everyMs` until it returns something other than undefined.
 *
 * @template T
 * @param {string} what
 * @param {() => Promise<T | undefined>} check
 * @param {number} timeoutMs
 * @returns {Promise<T>}
 */
async function until(what, check, timeoutMs, everyMs = 500) {
  const deadline = performance.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (performance.now() > deadline)
      throw new Error(`cloudnative-pg: timed out after ${timeoutMs} ms waiting for ${what}`, { cause: last });
    await sleep(everyMs);
  }
}

const isReady = (/** @type {any} */ pod) =>
  pod.status?.conditions?.some((/** @type {any} */ c) => c.type === 'Ready' && c.status === 'True') === true;

/** The S3 keys and region as the barmanObjectStore's selectors name them, and the server's CA. */
async function s3Secret(/** @type {import('../system.mjs').PeerEnv} */ env, /** @type {string} */ namespace, s3) {
  await env.client
    .resource('v1', 'Secret')
    .create(
      {
        metadata: { name: S3_SECRET, namespace },
        stringData: {
          ACCESS_KEY_ID: s3.accessKeyId,
          ACCESS_SECRET_KEY: s3.secretAccessKey,
          REGION: s3.region,
          'ca.crt': s3.caPem,
        },
      },
      { namespace },
    )
    .catch((/** @type {Error} */ error) => {
      if (!/AlreadyExists|already exists/.test(error.message)) throw error;
    });
}

/** @type {import('../system.mjs').PeerSystem} */
export const system = {
  name: 'cloudnative-pg',

  backupPrefix: (spec) => `${BACKUP_PREFIX}${spec.name}/`,

  async prepare({ log }) {
    const manager = await ensureManager(log);
    const operatorContext = await mkdtemp(join(tmpdir(), 'kanri-cnpg-operator-'));
    const operandContext = await mkdtemp(join(tmpdir(), 'kanri-cnpg-operand-'));
    try {
      await copyFile(manager, join(operatorContext, 'manager'));
      const operand = (/** @type {string} */ tag) => ({
        dockerfile: join(HERE, 'postgresql.Dockerfile'),
        context: operandContext,
        tag,
        buildArgs: {
          PG_MAJOR: PG_WHEEL.version.split('.')[0] ?? '',
          PG_WHEEL_VERSION: PG_WHEEL.version,
          PG_WHEEL_SHA256: PG_WHEEL.sha256,
          BARMAN_VERSION,
        },
      });
      const built = await buildImages([
        { dockerfile: join(HERE, 'operator.Dockerfile'), context: operatorContext, tag: OPERATOR_IMAGE },
        ...POSTGRES_IMAGES.map(operand),
      ]);
      for (const image of built)
        log(
          `cloudnative-pg: image ${image.tag} ${(image.bytes / 1e6).toFixed(0)} MB in ${(image.ms / 1000).toFixed(1)} s`,
        );
      return { imageArchives: built.map((i) => i.archive) };
    } finally {
      await rm(operatorContext, { recursive: true, force: true });
      await rm(operandContext, { recursive: true, force: true });
    }
  },

  async install(env) {
    const docs = operatorManifest(await releasedManifest(), {
      operatorImage: OPERATOR_IMAGE,
      postgresImage: POSTGRES_IMAGES[0],
    });
    // Server-side: the CRDs are larger than client-side apply's last-applied annotation allows.
    await withTempFile('cnpg.yaml', toYamlStream(docs), (file) =>
      env.kubectl('apply', '--server-side', '--force-conflicts', '-f', file),
    );
    env.log('cloudnative-pg: manifest applied, waiting for the operator');
    await env.kubectl(
      'rollout',
      'status',
      '--namespace',
      OPERATOR_NAMESPACE,
      `deployment/${OPERATOR_DEPLOYMENT}`,
      '--timeout=300s',
    );
    // Available is not enough: every Cluster write goes through CNPG's webhooks, whose certificate
    // the operator makes itself after it starts. A server-side dry run passes through them.
    const probe = clusterManifest(
      { name: 'webhook-probe', namespace: 'default', instances: 1, synchronous: false, storage: '1Gi' },
      { imageName: POSTGRES_IMAGES[0], instanceNodes: env.instanceNodes },
    );
    await withTempFile('probe.json', JSON.stringify(probe), (file) =>
      until(
        "CloudNativePG's webhooks",
        async () => (await env.kubectl('create', '--dry-run=server', '-f', file)) || 'ok',
        180_000,
        1_000,
      ),
    );
    env.log('cloudnative-pg: operator running, webhooks answering');
  },

  async createCluster(env, spec) {
    const { client } = env;
    const clusters = client.resource(CLUSTER_API, 'Cluster');
    const pods = client.resource('v1', 'Pod');
    const { namespace, name } = spec;
    if ((spec.backups || spec.restoreFrom) && env.s3) await s3Secret(env, namespace, env.s3);
    await clusters.create(
      clusterManifest(spec, { imageName: POSTGRES_IMAGES[0], instanceNodes: env.instanceNodes, s3: env.s3 }),
      { namespace },
    );
    /** @returns {Promise<any>} */
    const get = () => clusters.get(name, { namespace });
    const instancePods = async () =>
      (await pods.list({ namespace, labelSelector: `cnpg.io/cluster=${name},cnpg.io/podRole=instance` })).items;
    const writeTarget = async () => {
      const [service, secret] = await Promise.all([
        client.resource('v1', 'Service').get(`${name}-rw`, { namespace }),
        client.resource('v1', 'Secret').get(`${name}-superuser`, { namespace }),
      ]);
      const decode = (/** @type {string} */ key) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
      return {
        address: `${service.spec?.clusterIP}:5432`,
        user: decode('username') || 'postgres',
        password: decode('password'),
        database: 'postgres',
      };
    };
    /** The image the last rollImage asked for. @type {string | undefined} */
    let rolledTo;
    /** Ready as CNPG says it (every instance ready, phase healthy) and with its instances' Pods Ready. */
    const healthy = async (/** @type {string | undefined} */ image) => {
      const cluster = await get();
      const status = cluster.status ?? {};
      if (status.phase !== 'Cluster in healthy state' || status.readyInstances !== spec.instances) return undefined;
      if (status.currentPrimary !== status.targetPrimary) return undefined;
      const running = await instancePods();
      if (running.length !== spec.instances || !running.every(isReady)) return undefined;
      if (
        image &&
        (status.image !== image ||
          !running.every((p) => p.spec?.containers?.find((c) => c.name === 'postgres')?.image === image))
      )
        return undefined;
      return cluster;
    };
    return {
      async waitReady(timeoutMs) {
        const deadline = performance.now() + timeoutMs;
        await until(`Cluster ${namespace}/${name} healthy`, () => healthy(undefined), timeoutMs);
        // The -rw Service answers writes: through real-node-0's kube-proxy, as the driver's writer.
        const target = await writeTarget();
        await until(
          `a write through ${target.address}`,
          async () => {
            await queryOnce(target.address, target, 'CREATE TABLE IF NOT EXISTS kanri_bench_ready (at timestamptz)');
            await queryOnce(target.address, target, 'INSERT INTO kanri_bench_ready VALUES (now())');
            return true;
          },
          Math.max(1_000, deadline - performance.now()),
        );
      },
      writeTarget,
      async primary() {
        const current = (await get()).status?.currentPrimary;
        if (!current) throw new Error(`Cluster ${namespace}/${name} has no current primary yet`);
        const pod = await pods.get(current, { namespace });
        return { pod: current, node: pod.spec?.nodeName ?? '' };
      },
      async switchover() {
        const cluster = await get();
        const current = cluster.status?.currentPrimary;
        const healthyPods = [...(cluster.status?.instancesStatus?.healthy ?? [])].sort();
        const target = healthyPods.find((p) => p !== current);
        if (!target) throw new Error(`Cluster ${namespace}/${name} has no healthy replica to switch over to`);
        await clusters.patchStatus(name, promotePatch(cluster, target, new Date()), { namespace, type: 'merge' });
      },
      async rollImage() {
        const from = (await get()).spec?.imageName ?? POSTGRES_IMAGES[0];
        rolledTo = POSTGRES_IMAGES.find((i) => i !== from) ?? POSTGRES_IMAGES[0];
        await clusters.patch(name, { spec: { imageName: rolledTo } }, { namespace, type: 'merge' });
        return { from, to: rolledTo };
      },
      async waitRolled(timeoutMs) {
        const image = rolledTo ?? POSTGRES_IMAGES[1];
        await until(`Cluster ${namespace}/${name} on ${image}`, () => healthy(image), timeoutMs);
      },
      async instancePods() {
        return (await instancePods()).map((p) => p.metadata?.name ?? '').sort();
      },
      async backup(backupName) {
        const backups = client.resource(CLUSTER_API, 'Backup');
        await backups.create(backupManifest(namespace, name, backupName), { namespace });
        const done = await until(
          `Backup ${namespace}/${backupName} completed`,
          async () => {
            /** @type {any} */
            const b = await backups.get(backupName, { namespace });
            return b.status?.phase === 'completed' || b.status?.phase === 'failed' ? b : undefined;
          },
          30 * 60_000,
        );
        if (done.status.phase === 'failed') throw new Error(`Backup ${backupName} failed: ${done.status.error}`);
        return { systemMs: Date.parse(done.status.stoppedAt) - Date.parse(done.status.startedAt) };
      },
      async delete() {
        await clusters.delete(name, { namespace });
        // The Pods and claims are the Cluster's (ownerReferences): garbage collection removes them.
        await until(
          `Cluster ${namespace}/${name}'s Pods and volumes gone`,
          async () => {
            const claims = await client
              .resource('v1', 'PersistentVolumeClaim')
              .list({ namespace, labelSelector: `cnpg.io/cluster=${name}` });
            return (await instancePods()).length === 0 && claims.items.length === 0 ? true : undefined;
          },
          180_000,
        );
      },
    };
  },

  async operatorPods(env) {
    const list = await env.client
      .resource('v1', 'Pod')
      .list({ namespace: OPERATOR_NAMESPACE, labelSelector: 'app.kubernetes.io/name=cloudnative-pg' });
    return list.items.map((p) => `${OPERATOR_NAMESPACE}/${p.metadata?.name}`);
  },
};

export default system;
