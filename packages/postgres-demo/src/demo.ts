/**
 * The README's main command. `up` starts, in a background supervisor, a local control plane with
 * real nodes where the machine allows (else process nodes, saying why: nodes.ts), installs the
 * PostgresCluster CRD and the operator's RBAC, runs the operator under that identity, creates a
 * 3-instance cluster of real PostgreSQL backed up with pgBackRest to a local S3 server, takes its
 * first full backup and reports how to reach it.
 * `down` stops the supervisor, which stops every process it started and removes its files.
 *
 * On real nodes the instances run the image built from packages/postgres/Dockerfile, on the
 * nodes' bridge; process nodes stand in for kubelet, each instance Pod running the agent and
 * postgres as local processes on its own loopback address. Nothing leaves the machine.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { KubeClient, type KubeObject } from '@kanri/client';
import { names, type PostgresCluster, PostgresClusterResource, postgresOperator } from '@kanri/postgres';
import { type ControlPlane, isProcessAlive, serviceAddress, startControlPlane, waitFor } from '@kanri/testenv';
import { pino } from 'pino';
import { BUCKET, buildBackupsSpec, buildS3CredsSecret, describeBackups, takeFirstBackup } from './backups.js';
import { demoNodes, type NodeKind } from './nodes.js';

const CLUSTER = 'hippo';
const NAMESPACE = 'default';
const IMAGE = 'ghcr.io/kanri-dev/postgres';

interface DemoState {
  readonly pid: number;
  /** What the instances run on, and why not real nodes when they could not be used. */
  readonly nodes?: NodeKind;
  readonly fallbackReason?: string;
  /** The S3 server's, so that a test can check that `down` ended it too. */
  readonly s3Pid?: number;
  readonly kubeconfigPath?: string;
  readonly kubectl?: string;
  readonly ready?: boolean;
  readonly error?: string;
}

/** `$KANRI_STATE_DIR/postgres-demo`, else `~/.local/state/kanri/postgres-demo`. */
export function demoDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.KANRI_STATE_DIR ?? join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'kanri');
  return join(base, 'postgres-demo');
}

const stateFile = (dir: string) => join(dir, 'state.json');

async function readState(dir: string): Promise<DemoState | undefined> {
  try {
    return JSON.parse(await readFile(stateFile(dir), 'utf8')) as DemoState;
  } catch {
    return undefined;
  }
}

async function writeState(dir: string, state: DemoState): Promise<void> {
  await writeFile(`${stateFile(dir)}.tmp`, JSON.stringify(state));
  const { rename } = await import('node:fs/promises');
  await rename(`${stateFile(dir)}.tmp`, stateFile(dir));
}

/**
 * Where psql reaches the primary. On real nodes, the `-primary` Service's ClusterIP, through
 * kube-proxy, so it follows a failover; process nodes have no kube-proxy, so the address of the
 * Pod the Service selects.
 */
async function primaryAddress(admin: KubeClient, cp: ControlPlane, kind: NodeKind): Promise<string> {
  if (kind === 'process') return serviceAddress(cp, NAMESPACE, names.primaryService(CLUSTER), 5432);
  const service = await admin
    .resource<KubeObject & { spec?: { clusterIP?: string } }>('v1', 'Service')
    .get(names.primaryService(CLUSTER), { namespace: NAMESPACE });
  if (!service.spec?.clusterIP)
    throw new Error(`Service ${NAMESPACE}/${names.primaryService(CLUSTER)} has no ClusterIP`);
  return `${service.spec.clusterIP}:5432`;
}

/** Runs in the background supervisor: owns the control plane and the operator until SIGTERM. */
export async function serve(dir: string): Promise<void> {
  const log = (line: string) => console.log(line);
  const stopping = new AbortController();
  process.once('SIGTERM', () => stopping.abort());
  process.once('SIGINT', () => stopping.abort());
  log('[1/6] Preparing the nodes: real ones where this machine can run them, else process nodes…');
  const nodes = await demoNodes(IMAGE, log);
  if (nodes.fallbackReason) log(`      Process nodes, not real ones: ${nodes.fallbackReason}`);
  log(`      Starting etcd, kube-apiserver, controllers, scheduler, an S3 server and ${nodes.summary}…`);
  const cp = await startControlPlane({ controllers: true, s3: true, ...nodes.options });
  const admin = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  let manager: Awaited<ReturnType<typeof postgresOperator.manager>> | undefined;
  let running: Promise<void> | undefined;
  const s3 = cp.s3;
  try {
    if (!s3) throw new Error('the control plane started no S3 server');
    // A stable path for the README's commands; the control plane's own directory is a temporary one.
    await copyFile(cp.kubeconfigPath, join(dir, 'kubeconfig'));
    const kubeconfigPath = join(dir, 'kubeconfig');
    const runningState: DemoState = {
      pid: process.pid,
      s3Pid: s3.pid,
      kubeconfigPath,
      kubectl: cp.binaries.kubectl,
      nodes: nodes.kind,
      ...(nodes.fallbackReason ? { fallbackReason: nodes.fallbackReason } : {}),
    };
    await writeState(dir, runningState);
    log(
      '[2/6] Installing the operator’s CRDs (PostgresCluster, PostgresBackup, PGUpgrade), generated RBAC and admission policies…',
    );
    const apply = (o: unknown) =>
      admin.resourceFor(o as KubeObject).apply(o as KubeObject, { fieldManager: 'kanri-demo', force: true });
    for (const crd of postgresOperator.crds()) await apply(crd);
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: postgresOperator.namespace } });
    for (const object of postgresOperator.rbac()) await apply(object);
    await waitFor('the CRD to be served', () =>
      admin.resource(PostgresClusterResource.apiVersion, 'PostgresCluster').list({ namespace: NAMESPACE }),
    );
    // Once PostgresClusters are served: a policy finds them as its params.
    for (const object of postgresOperator.policies()) await apply(object);
    log('[3/6] Running the operator as its ServiceAccount…');
    const identity = await cp.addUser({
      name: `system:serviceaccount:${postgresOperator.namespace}:${postgresOperator.name}`,
      groups: ['system:serviceaccounts'],
    });
    const operatorClient = await KubeClient.load({ kubeconfig: identity.kubeconfigPath });
    const logger = pino(
      { name: postgresOperator.name, level: process.env.KANRI_LOG_LEVEL ?? 'info' },
      pino.destination(join(dir, 'operator.log')),
    );
    manager = await postgresOperator.manager({
      client: operatorClient,
      bindAddress: '127.0.0.1:0',
      handleSignals: false,
      logger,
    });
    running = manager.start();
    log(`[4/6] Creating PostgresCluster ${CLUSTER} with 3 instances, backed up to s3://${BUCKET}…`);
    const started = Date.now();
    await s3.createBucket(BUCKET);
    await apply(buildS3CredsSecret(CLUSTER, NAMESPACE, s3));
    await apply({
      apiVersion: PostgresClusterResource.apiVersion,
      kind: 'PostgresCluster',
      metadata: { name: CLUSTER, namespace: NAMESPACE },
      spec: {
        postgresVersion: 16,
        instances: [
          {
            name: 'instance1',
            replicas: 3,
            dataVolumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
        users: [{ name: 'app', databases: ['app'] }],
        backups: buildBackupsSpec(CLUSTER, s3),
      },
    });
    let lastMessage = '';
    await waitFor(
      `PostgresCluster ${CLUSTER} to be Ready`,
      async () => {
        if (stopping.signal.aborted) throw new Error('stopped');
        const c = await admin
          .resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster')
          .get(CLUSTER, { namespace: NAMESPACE });
        const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
        if (ready?.message && ready.message !== lastMessage) {
          lastMessage = ready.message;
          log(`      ${lastMessage}`);
        }
        return ready?.status === 'True';
      },
      300_000,
      500,
    );
    log(`      Ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    log('[5/6] Taking the first full backup (kubectl annotate pgc hippo postgres.kanri.dev/pgbackrest-backup=…)…');
    const backupStarted = Date.now();
    await takeFirstBackup(admin, CLUSTER, NAMESPACE, log, stopping.signal);
    log(`      Backed up in ${((Date.now() - backupStarted) / 1000).toFixed(1)} s`);
    log('[6/6] Writing connection details…');
    const secret = await admin.resource('v1', 'Secret').get(names.userSecret(CLUSTER, 'app'), { namespace: NAMESPACE });
    const password = Buffer.from((secret as { data: Record<string, string> }).data.password ?? '', 'base64').toString();
    const [host, port] = (await primaryAddress(admin, cp, nodes.kind)).split(':');
    // The password goes to a 0600 pgpass file, never to the terminal or a log.
    // Any host: the README's commands also reach a restored primary and a point-in-time clone of hippo.
    await writeFile(join(dir, 'pgpass'), `*:${port}:app:app:${password}\n`, { mode: 0o600 });
    await writeFile(join(dir, 'psql'), `PGPASSFILE=${join(dir, 'pgpass')} psql -h ${host} -p ${port} -U app app\n`);
    // For a shell: `. <dir>/env`, then kubectl and psql need no flags but psql's -h (the primary moves).
    await writeFile(
      join(dir, 'env'),
      `export KUBECONFIG=${kubeconfigPath} PGPASSFILE=${join(dir, 'pgpass')} PGPORT=${port} PGUSER=app PGDATABASE=app\n`,
    );
    await writeState(dir, { ...runningState, ready: true });
    await new Promise<void>((resolve) => {
      if (stopping.signal.aborted) resolve();
      stopping.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  } catch (error) {
    await writeState(dir, { pid: process.pid, error: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    log('Stopping…');
    manager?.stop();
    await running?.catch(() => {});
    await admin.close();
    await cp.stop();
  }
}

/** `npm start`: starts the supervisor (unless running), follows its progress, prints how to connect. */
export async function up(dir = demoDir()): Promise<void> {
  const existing = await readState(dir);
  if (existing && isProcessAlive(existing.pid) && existing.ready) {
    await report(dir, existing);
    return;
  }
  if (existing && isProcessAlive(existing.pid)) {
    throw new Error(`a demo is starting or failed (PID ${existing.pid}); run \`npm stop\` first`);
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const logPath = join(dir, 'demo.log');
  const out = openSync(logPath, 'a');
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url).replace(/demo\.js$/, 'main.js'), 'serve'], {
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, KANRI_DEMO_DIR: dir },
  });
  closeSync(out);
  child.unref();
  let shown = 0;
  for (;;) {
    const text = await readFile(logPath, 'utf8').catch(() => '');
    const lines = text.split('\n');
    for (const line of lines.slice(shown, -1)) if (line.startsWith('[') || line.startsWith('  ')) console.log(line);
    shown = Math.max(shown, lines.length - 1);
    const state = await readState(dir);
    if (state?.ready) return report(dir, state);
    if (state?.error || child.exitCode !== null || (state && !isProcessAlive(state.pid))) {
      throw new Error(`the demo failed: ${state?.error ?? 'supervisor exited'}; see ${logPath}`);
    }
    await sleep(300);
  }
}

async function report(dir: string, state: DemoState): Promise<void> {
  const { execFile } = await import('node:child_process');
  const { promisify } = await import('node:util');
  const kubectl = state.kubectl ?? 'kubectl';
  const env = { ...process.env, KUBECONFIG: state.kubeconfigPath };
  const { stdout } = await promisify(execFile)(kubectl, ['get', 'pgc', '-n', NAMESPACE], { env });
  const on =
    state.nodes === 'real'
      ? 'real nodes (kubelet, containerd, kube-proxy; the instance image built from packages/postgres/Dockerfile)'
      : `process nodes${state.fallbackReason ? ` (not real nodes: ${state.fallbackReason})` : ''}`;
  console.log(`\nThe instances run on ${on}.`);
  console.log(`\n$ kubectl get pgc\n${stdout}`);
  const backups = await promisify(execFile)(kubectl, ['get', 'pgbackup', '-n', NAMESPACE], { env });
  console.log(`$ kubectl get pgbackup\n${backups.stdout}`);
  const client = await KubeClient.load({ kubeconfig: state.kubeconfigPath });
  try {
    for (const line of await describeBackups(client, CLUSTER, NAMESPACE)) console.log(line);
  } finally {
    await client.close();
  }
  console.log('\nConnect (the password is in a 0600 pgpass file):');
  console.log(`  ${(await readFile(join(dir, 'psql'), 'utf8')).trim()}`);
  console.log(`Inspect (\`. ${join(dir, 'env')}\` sets KUBECONFIG and psql's PGPASSFILE, PGPORT, PGUSER, PGDATABASE):`);
  console.log(`  export KUBECONFIG=${state.kubeconfigPath}`);
  console.log(`  ${kubectl} get pgc,pods,svc -n ${NAMESPACE}`);
  console.log(`  ${kubectl} get pgbackup -n ${NAMESPACE}`);
  console.log(`  ${kubectl} get pgc ${CLUSTER} -n ${NAMESPACE} -o jsonpath='{.status.archive}{"\\n"}'`);
  console.log('Tear everything down: npm stop');
}

/** `npm stop`: stops the supervisor and everything it started, and removes the demo's files. */
export async function down(dir = demoDir()): Promise<void> {
  const state = await readState(dir);
  if (state && isProcessAlive(state.pid)) {
    process.kill(state.pid, 'SIGTERM');
    await waitFor('the demo to stop', () => !isProcessAlive(state.pid), 120_000, 200);
    console.log(`Stopped the demo (PID ${state.pid}).`);
  } else {
    console.log('No demo is running.');
  }
  await rm(dir, { recursive: true, force: true });
}
