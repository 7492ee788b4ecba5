/**
 * The operator's reconcile against a real API server (no nodes, so no agents: Pods stay Pending)
 * meets objects that are not where its cache says: a PVC it would create already exists but is
 * not its own (a claim retained from an earlier cluster of the same name), and a scale-down
 * victim whose PVC is already gone. Both are normal and must not fail the reconcile into backoff.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient, type KubeObject } from '@kanri/client';
import { Manager } from '@kanri/runtime';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { LABEL, PostgresBackupResource, PostgresClusterResource, postgresOperator } from '../src/index.js';
import { postgresController } from '../src/operator/postgres-controller.js';
import { clusterManifest, clusters, volume } from './harness.js';

const namespace = 'default';

describe('the PostgresCluster reconcile tolerates objects its cache does not know about', { timeout: 300_000 }, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let manager: Manager;
  let running: Promise<void>;
  const registry = new Registry();
  const reconcileErrors = async () => {
    const metric = await registry.getSingleMetric('controller_runtime_reconcile_errors_total')?.get();
    return metric?.values.reduce((sum, v) => sum + v.value, 0) ?? Number.NaN;
  };
  const pods = () => client.resource<Pod>('v1', 'Pod');
  const claims = () => client.resource<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim');
  const exists = (get: Promise<unknown>) =>
    get.then(
      () => true,
      () => false,
    );

  before(async () => {
    // The controllers create the default ServiceAccount, without which no Pod is admitted.
    cp = await startControlPlane({ controllers: true });
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    // Every CRD the operator installs: the controller waits for each kind it owns (PostgresBackup
    // too). The admission policies as well: without them the operator creates no instance Pods.
    for (const object of [...postgresOperator.crds(), ...postgresOperator.policies()]) {
      await client
        .resourceFor(object as unknown as KubeObject)
        .apply(object as unknown as KubeObject, { fieldManager: 'test', force: true });
    }
    await waitFor('the PostgresCluster CRD to be served', () => clusters(client).list({ namespace }));
    await waitFor('the PostgresBackup CRD to be served', () =>
      client.resource(PostgresBackupResource.apiVersion, PostgresBackupResource.kind).list({ namespace }),
    );
    manager = new Manager(client, {
      name: 'postgres-operator',
      namespace,
      bindAddress: false,
      handleSignals: false,
      registry,
      logger: pino({ level: 'silent' }),
    }).add(postgresController);
    running = manager.start();
  });
  after(async () => {
    manager?.stop();
    await running;
    await client?.close();
    await cp?.stop();
  });

  it('creates the instance Pod although its PVC already exists and is not the cluster’s (409 on create)', async () => {
    // A claim of the name with no owner and no cluster label is someone else's: the cluster
    // neither mounts it nor creates the Pod, and says so.
    await claims().create({ metadata: { name: 'kept-i-0-pgdata', namespace }, spec: volume });
    await clusters(client).create(clusterManifest('kept', 1));
    await waitFor('the ForeignObjects condition of kept', async () => {
      const cluster = await clusters(client).get('kept', { namespace });
      const condition = cluster.status?.conditions?.find((c) => c.type === 'ForeignObjects');
      return condition?.status === 'True' && condition.message?.includes('PersistentVolumeClaim kept-i-0-pgdata');
    });
    assert.equal(await exists(pods().get('kept-i-0', { namespace })), false, 'no Pod mounts a foreign claim');
    // Retained from an earlier cluster named "kept" deleted with --cascade=orphan: no owner, so the
    // operator's cache lists it under no cluster, but the earlier cluster's label hands it over.
    await claims().patch(
      'kept-i-0-pgdata',
      { metadata: { labels: { [LABEL.cluster]: 'kept' } } },
      { namespace, type: 'merge' },
    );
    await waitFor('Pod kept-i-0', () => exists(pods().get('kept-i-0', { namespace })), 60_000, 200);
    await waitFor('the ForeignObjects condition of kept to clear', async () => {
      const cluster = await clusters(client).get('kept', { namespace });
      return !cluster.status?.conditions?.some((c) => c.type === 'ForeignObjects' && c.status === 'True');
    });
    assert.equal(await reconcileErrors(), 0);
  });

  it('scales down a replica whose PVC is already gone (404 on delete) without failing', async () => {
    const before = await reconcileErrors();
    const cluster = await clusters(client).create(clusterManifest('gone', 2, { paused: true }));
    // Two instance Pods with no PVCs, made while the operator leaves the cluster alone.
    for (const name of ['gone-i-5', 'gone-i-6']) {
      await pods().create({
        metadata: {
          name,
          namespace,
          labels: { [LABEL.cluster]: 'gone', [LABEL.instanceSet]: 'i', [LABEL.instance]: name },
          ownerReferences: [
            {
              apiVersion: PostgresClusterResource.apiVersion,
              kind: 'PostgresCluster',
              name: 'gone',
              uid: cluster.metadata?.uid ?? '',
              controller: true,
            },
          ],
        },
        spec: { containers: [{ name: 'postgres', image: 'ghcr.io/kanri-dev/postgres' }] },
      });
    }
    await clusters(client).patch(
      'gone',
      { spec: { paused: false, instances: [{ name: 'i', replicas: 1, dataVolumeClaimSpec: volume }] } },
      { namespace, type: 'merge' },
    );
    // The least useful replica, gone-i-6, goes; its PVC never existed.
    await waitFor('gone-i-6 removed', async () => !(await exists(pods().get('gone-i-6', { namespace }))), 60_000, 200);
    await waitFor('the status of gone', async () => {
      const current = await clusters(client).get('gone', { namespace });
      return current.status?.conditions !== undefined;
    });
    assert.ok(await exists(claims().get('gone-i-5-pgdata', { namespace })), 'the kept instance got its PVC');
    assert.equal(await reconcileErrors(), before);
  });
});
