// The Kanri environment for the failover benchmark and the chaos script, as the end-to-end harness
// of @kanri/postgres builds it (packages/postgres/test/harness.ts): a control plane with process
// nodes running the instance agent (and through it PostgreSQL of the image tag's version), the PostgresCluster CRD, the
// operator's generated RBAC, and the operator as a child process under its ServiceAccount's
// identity. Unlike the harness it can put fault proxies in the way: one per node in front of the
// API server for the node's Pods (`apiProxy`, testenv's option), and one for the operator.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../packages/client/dist/src/index.js';
import {
  PGUpgradeResource,
  PostgresBackupResource,
  PostgresClusterResource,
  postgresOperator,
} from '../../packages/postgres/dist/src/index.js';
import {
  postgresVersionImages,
  runnableAs,
  runnableFileAs,
  startControlPlane,
  startFaultProxy,
  waitFor,
} from '../../packages/testenv/dist/src/index.js';
import { withParentDeathSignal } from './processes.mjs';

export const IMAGE = 'ghcr.io/kanri-dev/postgres';
const dist = fileURLToPath(new URL('../../packages/postgres/dist/src/', import.meta.url));

/**
 * @param nodes process nodes
 * @param apiProxy each node's Pods reach the API server through their own fault proxy
 * @param operatorProxy the operator reaches the API server through a fault proxy (`env.operatorProxy`)
 */
export async function startKanriEnv({ nodes = 3, apiProxy = false, operatorProxy = false } = {}) {
  const cp = await startControlPlane({
    controllers: true,
    processNodes: {
      count: nodes,
      apiProxy,
      images: await postgresVersionImages(IMAGE, {
        entrypoint: [
          runnableFileAs('postgres', process.execPath),
          runnableAs('postgres', join(dist, 'agent', 'main.js')),
        ],
        user: 'postgres',
      }),
    },
  });
  let proxy;
  let logDir;
  let client;
  try {
    logDir = await mkdtemp(join(tmpdir(), 'kanri-bench-failover-'));
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    const apply = (o) => client.resourceFor(o).apply(o, { fieldManager: 'bench-installer', force: true });
    // Every CRD the operator watches: without one its informer never syncs and it reconciles
    // nothing (as packages/postgres/test/harness.ts installs them). PGUpgrade's was missing here
    // from issue 15 on, and every Kanri bench start timed out waiting for the superuser Secret.
    const crds = [PostgresClusterResource, PostgresBackupResource, PGUpgradeResource];
    for (const resource of crds) await apply(resource.crd);
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: postgresOperator.namespace } });
    for (const object of [...postgresOperator.rbac(), ...postgresOperator.admissionPolicies]) await apply(object);
    await waitFor('the PostgresCluster CRD to be served', () =>
      client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster').list({ namespace: 'default' }),
    );
    for (const resource of crds.slice(1))
      await waitFor(`the ${resource.kind} CRD to be served`, () =>
        client.resource(resource.apiVersion, resource.kind).list({ namespace: 'default' }),
      );
    // RBAC binds the ServiceAccount by user name, so a client certificate with that name is the operator.
    const identity = await cp.addUser({
      name: `system:serviceaccount:${postgresOperator.namespace}:${postgresOperator.name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${postgresOperator.namespace}`],
    });
    let operatorKubeconfig = identity.kubeconfigPath;
    if (operatorProxy) {
      proxy = await startFaultProxy(cp.server);
      // The same kubeconfig with the proxy's URL: the API server's certificate is for 127.0.0.1, as is the proxy.
      const text = await readFile(identity.kubeconfigPath, 'utf8');
      operatorKubeconfig = join(logDir, 'operator.kubeconfig');
      await writeFile(operatorKubeconfig, text.split(cp.server).join(proxy.url), { mode: 0o600 });
    }

    let operator;
    let runs = 0;
    const stopOperator = async (signal = 'SIGTERM') => {
      const child = operator;
      operator = undefined;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    };
    return {
      cp,
      client,
      logDir,
      operatorProxy: proxy,
      get operatorPid() {
        return operator?.pid;
      },
      startOperator() {
        const log = createWriteStream(join(logDir, `operator-${runs++}.log`));
        const [cmd, argv] = withParentDeathSignal(process.execPath, [join(dist, 'operator', 'main.js')]);
        operator = spawn(cmd, argv, {
          env: { ...process.env, KUBECONFIG: operatorKubeconfig, KANRI_BIND_ADDRESS: '127.0.0.1:0' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        operator.stdout?.pipe(log);
        operator.stderr?.pipe(log);
      },
      stopOperator,
      async stop() {
        await stopOperator('SIGKILL');
        await client.close();
        await proxy?.close();
        await cp.stop();
        await rm(logDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await client?.close().catch(() => {});
    await proxy?.close().catch(() => {});
    await cp.stop().catch(() => {});
    if (logDir) await rm(logDir, { recursive: true, force: true });
    throw error;
  }
}
