/**
 * The end-to-end harness: a real control plane with process nodes that run the instance agent
 * (and through it real PostgreSQL of the image tag's version: 14, 15, 15.19, 16 or 17), or with
 * real nodes that run the instance image built from packages/postgres/Dockerfile; the
 * PostgresCluster CRD, the operator's generated RBAC, and the operator itself as a child process
 * under its own ServiceAccount identity.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeClient, type KubeObject } from '@kanri/client';
import {
  type BuiltImage,
  buildImages,
  type ControlPlane,
  containerOutput,
  ensurePgBackRest,
  type ProcessNode,
  postgresVersionImages,
  runnableAs,
  runnableFileAs,
  serviceAddress,
  startControlPlane,
  waitFor,
  withParentDeathSignal,
} from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import pg from 'pg';
import {
  names,
  PGUpgradeResource,
  PostgresBackupResource,
  type PostgresCluster,
  PostgresClusterResource,
  postgresOperator,
} from '../src/index.js';

export const IMAGE = 'ghcr.io/kanri-dev/postgres';
const dist = fileURLToPath(new URL('../src/', import.meta.url));
const OPERATOR_MAIN = join(dist, 'operator', 'main.js');
const repo = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * How the tests build packages/postgres/Dockerfile's targets for real nodes: every build passes the
 * same arguments, so a second target finds the first's build stage cached. PGDG cannot be reached
 * from here: Debian's own PostgreSQL 15 and pgBackRest.
 */
export function dockerfileBuild(
  tag: string,
  target?: 'operator',
  buildArgs: Record<string, string> = { PG_SOURCE: 'debian', PG_MAJORS: '15', PG_MAJOR: '15' },
) {
  return {
    dockerfile: join(repo, 'packages', 'postgres', 'Dockerfile'),
    context: repo,
    tag,
    ...(target ? { target } : {}),
    buildArgs,
  };
}

/**
 * The images real-nodes.test.ts runs, the operator's and the instance's targets; run-tests.mjs
 * builds them before the timed files (support/build-real-node-images.ts).
 */
export function realNodeImageBuilds() {
  return [dockerfileBuild(postgresOperator.image, 'operator'), dockerfileBuild(`${IMAGE}:15`)] as const;
}

/** A machine an instance runs on, to lose and get back. */
export interface InstanceHost {
  readonly name: string;
  /** Power loss: every process of the host at once, nothing written to the API. */
  crash(): Promise<unknown>;
  /** The host is back and runs its Pods again (on a real node: in new sandboxes, with new Pod IPs). */
  recover(): Promise<void>;
}

export interface PostgresEnv {
  readonly cp: ControlPlane;
  /** Applies the operator's admission policies (already done unless `admissionPolicies: false`). */
  installPolicies(): Promise<void>;
  /** Admin client. */
  readonly client: KubeClient;
  readonly logDir: string;
  /** Starts the operator process; `env` adds to its environment (KANRI_CERTIFICATE_VALIDITY_SECONDS, say). */
  startOperator(options?: { env?: Readonly<Record<string, string>> }): Promise<void>;
  stopOperator(signal?: NodeJS.Signals): Promise<void>;
  /** How the running operator exited, if it did on its own (a crash); undefined while it runs. */
  operatorExit(): string | undefined;
  /** Which kind of node runs the instances. */
  readonly nodes: 'process' | 'real';
  /** The host of `pod` (in namespace default). */
  hostOf(pod: string): Promise<InstanceHost>;
  /** Every line `container` of `pod` (in namespace default) printed, over all its starts. */
  containerOutput(pod: string, container?: string): Promise<string[]>;
  /** Every log the test produced: operator, agents (the nodes' container logs). */
  allLogs(): Promise<string>;
  stop(): Promise<void>;
}

export async function startPostgresEnv(
  options: {
    processNodes?: number;
    /**
     * Real nodes instead of process nodes, running the instance image `IMAGE:15` built from the
     * Dockerfile. Only with the options below that do not reach into a process node.
     */
    realNodes?: number;
    apiProxy?: boolean;
    s3?: boolean;
    pgbackrest?: boolean;
    /** More tags of IMAGE, each running the programs in the given directory (a deliberately broken install, say). */
    extraTags?: Readonly<Record<string, string>>;
    /** Install the operator for this namespace alone: Roles there, no ClusterRole, KANRI_WATCH_NAMESPACE. */
    watchNamespace?: string;
    /** Apply the operator's admission policies (default true); false leaves them to `installPolicies()`. */
    admissionPolicies?: boolean;
    /**
     * With realNodes: the instance image's build arguments instead of Debian's own packages, e.g.
     * `postgresImageBuildArgs('15')` for Debian 13's pgBackRest, whose TLS client accepts a repo
     * host's certificate that names its Pod IP (Debian 12's 2.45 does not: a volume repo needs it).
     */
    imageBuildArgs?: Record<string, string>;
  } = {},
): Promise<PostgresEnv> {
  if (options.realNodes) {
    const conflicting = (['processNodes', 'apiProxy', 's3', 'pgbackrest', 'extraTags'] as const).filter(
      (o) => options[o] !== undefined && options[o] !== false,
    );
    if (conflicting.length > 0) throw new Error(`startPostgresEnv: realNodes cannot go with ${conflicting.join(', ')}`);
    const [image] = (await buildImages([dockerfileBuild(`${IMAGE}:15`, undefined, options.imageBuildArgs)])) as [
      BuiltImage,
    ];
    return installOperator(
      await startControlPlane({ realNodes: { count: options.realNodes, imageArchives: [image.archive] } }),
      'real',
      options,
    );
  }
  // pgBackRest runs as the agent's user, which cannot read the cache under /root: a staged copy.
  const pgbackrest =
    options.s3 || options.pgbackrest ? runnableFileAs('postgres', await ensurePgBackRest()) : undefined;
  // One mapping per tag (…:16 runs a real 16); an unknown tag fails to pull, as on a real node.
  const versions = await postgresVersionImages(IMAGE, {
    // Node itself too: postgres runs the agent's archive command with it, and a Node.js
    // installed under /root (test-node.mjs's) is out of the postgres user's reach.
    entrypoint: [runnableFileAs('postgres', process.execPath), runnableAs('postgres', join(dist, 'agent', 'main.js'))],
    user: 'postgres',
    ...(pgbackrest ? { env: { KANRI_PGBACKREST: pgbackrest } } : {}),
  });
  const base = versions[`${IMAGE}:15`];
  const images = {
    ...versions,
    ...Object.fromEntries(
      Object.entries(options.extraTags ?? {}).flatMap(([tag, bin]) =>
        base ? [[`${IMAGE}:${tag}`, { ...base, env: { ...base.env, PG_BIN: bin } }]] : [],
      ),
    ),
  };
  const cp = await startControlPlane({
    controllers: true,
    ...(options.s3 ? { s3: true } : {}),
    processNodes: {
      count: options.processNodes ?? 2,
      // Each node's Pods reach the API server through the node's own fault proxy (cutting one host off).
      apiProxy: options.apiProxy ?? false,
      images,
    },
  });
  return installOperator(cp, 'process', options);
}

/** The CRDs, the operator's namespace, RBAC and identity on a started control plane; the env around them. */
async function installOperator(
  cp: ControlPlane,
  nodes: PostgresEnv['nodes'],
  options: { watchNamespace?: string; admissionPolicies?: boolean },
): Promise<PostgresEnv> {
  const { watchNamespace } = options;
  const logDir = await mkdtemp(join(tmpdir(), 'kanri-pg-logs-'));
  const client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  const apply = (o: Record<string, unknown>) =>
    client.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'test-installer', force: true });
  await apply(PostgresClusterResource.crd as unknown as Record<string, unknown>);
  await apply(PostgresBackupResource.crd as unknown as Record<string, unknown>);
  await apply(PGUpgradeResource.crd as unknown as Record<string, unknown>);
  await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: postgresOperator.namespace } });
  if (watchNamespace) await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: watchNamespace } });
  const rbac = postgresOperator.rbac(watchNamespace ? { watchNamespace } : {});
  for (const object of rbac) await apply(object);
  await waitFor('the PostgresCluster CRD to be served', () =>
    client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster').list({ namespace: 'default' }),
  );
  // After the CRD is served: one policy finds the operator's PostgresClusters as its params.
  const installPolicies = async () => {
    for (const object of postgresOperator.policies()) await apply(object);
  };
  if (options.admissionPolicies ?? true) await installPolicies();
  await waitFor('the PostgresBackup CRD to be served', () =>
    client.resource(PostgresBackupResource.apiVersion, PostgresBackupResource.kind).list({ namespace: 'default' }),
  );
  // RBAC binds the ServiceAccount by user name, so a client certificate with that name is the operator.
  const identity = await cp.addUser({
    name: `system:serviceaccount:${postgresOperator.namespace}:${postgresOperator.name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${postgresOperator.namespace}`],
  });

  let operator: ChildProcess | undefined;
  let runs = 0;
  let operatorExit: string | undefined;
  const stopOperator = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const child = operator;
    operator = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  };
  const podOf = (pod: string) => client.resource<Pod>('v1', 'Pod').get(pod, { namespace: 'default' });
  const realNodeOf = async (pod: string) => {
    const nodeName = (await podOf(pod)).spec?.nodeName;
    const node = cp.realNodes.find((n) => n.name === nodeName);
    if (!node) throw new Error(`no real node runs ${pod} (its node: ${nodeName ?? 'none'})`);
    return node;
  };
  const containerLines = async (pod: string, container = 'postgres') => {
    if (nodes === 'real') return containerOutput(await realNodeOf(pod), 'default', pod, container);
    const files = cp.processNodes
      .flatMap((n) => n.containers())
      .filter((c) => c.pod === pod && c.container === container && !c.init)
      .map((c) => c.logFile);
    const texts = await Promise.all([...new Set(files)].map((f) => readFile(f, 'utf8').catch(() => '')));
    return texts.flatMap((t) => t.split('\n'));
  };
  const allLogs = async () => {
    const files = [
      ...(await readdir(logDir)).map((f) => join(logDir, f)),
      ...cp.processNodes.flatMap((n) => n.containers().map((c) => c.logFile)),
    ];
    const texts = await Promise.all(files.map((f) => readFile(f, 'utf8').catch(() => '')));
    const podLogs = await Promise.all(
      cp.realNodes.map(async (n) =>
        (await readdir(n.podLogsDir, { recursive: true }).catch(() => [] as string[]))
          .filter((f) => f.endsWith('.log'))
          .map((f) => join(n.podLogsDir, f)),
      ),
    );
    const podTexts = await Promise.all(podLogs.flat().map((f) => readFile(f, 'utf8').catch(() => '')));
    return [...texts, ...podTexts].join('\n');
  };
  return {
    cp,
    installPolicies,
    client,
    logDir,
    nodes,
    async hostOf(pod) {
      if (nodes === 'process') return processNodeOf(cp, pod);
      const node = await realNodeOf(pod);
      return {
        name: node.name,
        crash: async () => {
          await node.powerOff();
        },
        recover: () => node.powerOn(),
      };
    },
    containerOutput: containerLines,
    async startOperator(options = {}) {
      const log = createWriteStream(join(logDir, `operator-${runs++}.log`));
      operator = spawn(...withParentDeathSignal(process.execPath, [OPERATOR_MAIN]), {
        env: {
          ...process.env,
          KUBECONFIG: identity.kubeconfigPath,
          KANRI_BIND_ADDRESS: '127.0.0.1:0',
          KANRI_LOG_LEVEL: 'debug',
          // As the chart does: an install for one namespace cannot read the cluster-scoped
          // policies, and its installer (this harness) vouches for them.
          ...(watchNamespace ? { KANRI_WATCH_NAMESPACE: watchNamespace, KANRI_ADMISSION_POLICIES: 'installed' } : {}),
          ...options.env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      operator.stdout?.pipe(log);
      operator.stderr?.pipe(log);
      operatorExit = undefined;
      const child = operator;
      child.once('exit', (code, signal) => {
        // stopOperator() clears `operator` before it signals: an exit it asked for is no crash.
        if (operator === child) operatorExit = `exited with code ${code} (signal ${signal})`;
      });
    },
    stopOperator,
    operatorExit: () => operatorExit,
    allLogs,
    async stop() {
      await stopOperator();
      // Every end-to-end test runs with the admission policies in force: a write of an agent's
      // (instance or repo host) or the operator's they refused is a bug in them or in its writer,
      // whatever the test checked.
      const guarded = postgresOperator
        .policyNames()
        .filter(
          (name) =>
            name.startsWith('instance-') ||
            name.startsWith('repo-host-') ||
            name.startsWith(`${postgresOperator.name}-`),
        );
      const refused = (await allLogs())
        .split('\n')
        .filter((line) => guarded.some((name) => line.includes(`ValidatingAdmissionPolicy '${name}'`)));
      await client.close();
      await cp.stop();
      await rm(logDir, { recursive: true, force: true });
      if (refused.length > 0)
        throw new Error(`the instance admission policies refused an agent's write:\n${refused.slice(0, 5).join('\n')}`);
    },
  };
}

/** The process node that runs `pod` now. */
export function processNodeOf(cp: ControlPlane, pod: string): ProcessNode {
  const node = cp.processNodes.find((n) => n.containers().some((c) => c.pod === pod && c.pid !== undefined));
  if (!node) throw new Error(`no process node runs ${pod}`);
  return node;
}

export const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };

export function clusterManifest(name: string, replicas: number, extra: Partial<PostgresCluster['spec']> = {}) {
  return {
    apiVersion: PostgresClusterResource.apiVersion,
    kind: 'PostgresCluster',
    metadata: { name, namespace: 'default' },
    spec: {
      postgresVersion: 15,
      instances: [{ name: 'i', replicas, dataVolumeClaimSpec: volume }],
      // The tests read and write through the superuser over the network (the default refuses it).
      enableSuperuserAccess: true,
      ...extra,
    },
  } as PostgresCluster;
}

export function clusters(client: KubeClient) {
  return client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
}

/** Waits until the cluster's Ready condition is True with `instances` ready; returns it. */
export async function waitReady(client: KubeClient, name: string, instances: number, timeoutMs = 180_000) {
  return waitFor(
    `PostgresCluster ${name} Ready with ${instances} instances`,
    async () => {
      const c = await clusters(client).get(name, { namespace: 'default' });
      const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
      if (ready?.status !== 'True' || c.status?.readyInstances !== instances) {
        throw new Error(`not ready: ${ready?.message ?? 'no status'}`);
      }
      return c;
    },
    timeoutMs,
    500,
  );
}

/** A pg client to an address `host:port` as `user`. */
export async function connect(address: string, user: string, password: string, database = 'postgres') {
  const [host, port] = address.split(':');
  const client = new pg.Client({ host, port: Number(port), user, password, database, connectionTimeoutMillis: 5000 });
  await client.connect();
  return client;
}

export async function secretValue(client: KubeClient, name: string, key: string): Promise<string> {
  const secret = await client.resource('v1', 'Secret').get(name, { namespace: 'default' });
  return Buffer.from((secret as { data: Record<string, string> }).data[key] ?? '', 'base64').toString('utf8');
}

/**
 * Runs `sql` as the superuser on the cluster's primary, through `<cluster>-primary` (its
 * EndpointSlice: there is no cluster DNS or kube-proxy here), and resolves the rows.
 */
export async function primarySql(env: PostgresEnv, cluster: string, sql: string): Promise<Record<string, unknown>[]> {
  const password = await secretValue(env.client, names.superuserSecret(cluster), 'password');
  const db = await connect(await serviceAddress(env.cp, 'default', `${cluster}-primary`, 5432), 'postgres', password);
  try {
    return (await db.query(sql)).rows;
  } finally {
    await db.end();
  }
}

export { serviceAddress };
