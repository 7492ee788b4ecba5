/**
 * README claim about the PodDisruptionBudget (`<name>-pdb`, one instance down at a time), end to
 * end: it selects exactly the cluster's instance Pods, kube-controller-manager's disruption
 * controller counts them, and the real API server's Eviction subresource lets one instance go but
 * refuses (429) a second while the first is down.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeClient, type KubeObject, TooManyRequestsError } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import { KIND, LABEL, names } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { instancePods } from './support/cluster-observers.js';

const CLUSTER = 'budget';
/** A second cluster in the same namespace, whose Pods the first one's budget must not count. */
const NEIGHBOUR = 'neighbour';

describe('PodDisruptionBudget', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  /** Evictions are refused with 429, which the default client retries; this one reports the first answer. */
  let evictor: KubeClient;
  const budget = () =>
    env.client
      .resource<PodDisruptionBudget & KubeObject>('policy/v1', 'PodDisruptionBudget')
      .get(names.pdb(CLUSTER), { namespace: 'default' });
  const evict = (pod: string) =>
    evictor.request({
      method: 'POST',
      path: `/api/v1/namespaces/default/pods/${pod}/eviction`,
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod, namespace: 'default' } },
    });

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    evictor = await KubeClient.load({ kubeconfig: env.cp.kubeconfigPath, maxAttempts: 1 });
    await env.startOperator();
    await clusters(env.client).create(clusterManifest(CLUSTER, 3));
    await clusters(env.client).create(clusterManifest(NEIGHBOUR, 1));
    await waitReady(env.client, CLUSTER, 3);
    await waitReady(env.client, NEIGHBOUR, 1);
  });
  after(async () => {
    await evictor?.close();
    await env?.stop();
  });

  it('is named <name>-pdb, owned by the cluster, selects exactly its instance Pods and allows one of them down', async () => {
    const pdb = await budget();
    assert.ok(pdb.metadata?.ownerReferences?.some((o) => o.kind === KIND && o.name === CLUSTER && o.controller));
    // Instance Pods only (the repo host of a cluster with a volume repo carries the cluster label too).
    assert.deepEqual(pdb.spec?.selector?.matchExpressions, [{ key: LABEL.instance, operator: 'Exists' }]);
    const selector = [
      ...Object.entries(pdb.spec?.selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
      LABEL.instance,
    ].join(',');
    assert.ok(pdb.spec?.selector?.matchLabels, 'the budget selects by label');
    const selected = (
      await env.client.resource<Pod>('v1', 'Pod').list({ namespace: 'default', labelSelector: selector })
    ).items;
    const instances = await instancePods(env.client, CLUSTER);
    assert.equal(instances.length, 3);
    assert.deepEqual(selected.map((p) => p.metadata?.name).sort(), instances.map((p) => p.metadata?.name).sort());
    assert.ok(instances.every((p) => p.metadata?.labels?.[LABEL.instance] === p.metadata?.name));
    // Judged by kube-controller-manager's disruption controller, whatever fields express it: it must
    // be able to count the 3 instances (not the neighbour's) and allow exactly one down.
    const counted = await waitFor(
      'the disruption controller to count the instances',
      async () => {
        const status = (await budget()).status;
        if (status?.expectedPods === 3 && status.currentHealthy === 3 && status.disruptionsAllowed === 1) return status;
        throw new Error(`budget status: ${JSON.stringify(status)}`);
      },
      60_000,
      250,
    );
    assert.equal(counted.desiredHealthy, 2);
  });

  it('the API server evicts one instance and refuses a second (429) while the first is down', async () => {
    const ready = await waitReady(env.client, CLUSTER, 3);
    await waitFor(
      'a disruption allowed',
      async () => {
        const status = (await budget()).status;
        // At least one: how many is the first test's business; this one asks the API server.
        if ((status?.disruptionsAllowed ?? 0) >= 1) return true;
        throw new Error(`budget status: ${JSON.stringify(status)}`);
      },
      60_000,
      250,
    );
    const primary = ready.status?.primary ?? '';
    const [first, second] = (await instancePods(env.client, CLUSTER))
      .map((p) => p.metadata?.name ?? '')
      .filter((n) => n !== primary)
      .sort();
    const secondUid = (await env.client.resource<Pod>('v1', 'Pod').get(second as string, { namespace: 'default' }))
      .metadata?.uid;

    await evict(first as string);
    for (const pod of [second as string, primary]) {
      await assert.rejects(evict(pod), TooManyRequestsError, `${pod} was evicted while ${first} is down`);
    }
    const kept = await env.client.resource<Pod>('v1', 'Pod').get(second as string, { namespace: 'default' });
    assert.equal(kept.metadata?.uid, secondUid);
    assert.equal(kept.metadata?.deletionTimestamp, undefined);
    // The evicted instance comes back on its volume, as any deleted instance Pod does.
    await waitReady(env.client, CLUSTER, 3, 180_000);
  });
});
