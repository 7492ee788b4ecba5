import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '../src/index.js';
import { isProcessAlive } from '../src/managed-process.js';
import { type RestTarget, restRequest, restTargetFromKubeconfig } from '../src/rest.js';
import { waitFor } from './helpers.js';

interface PodList {
  items: { metadata: { name: string }; spec: { nodeName?: string }; status: { phase?: string; podIP?: string } }[];
}

describe('startControlPlane({ controllers: true, nodes: 2 })', () => {
  let cp: ControlPlane;
  let admin: RestTarget;
  const ns = 'workloads';
  before(async () => {
    cp = await startControlPlane({ controllers: true, nodes: 2 });
    admin = restTargetFromKubeconfig(cp.kubeconfig);
    const created = await restRequest(admin, 'POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns },
    });
    assert.equal(created.status, 201);
  });
  after(async () => {
    await admin?.dispatcher.close();
    const pids = cp?.processes.map((p) => p.pid) ?? [];
    await cp?.stop();
    for (const pid of pids) assert.equal(isProcessAlive(pid), false);
  });

  it('runs every component and two Ready nodes', async () => {
    assert.deepEqual(
      cp.processes.map((p) => p.name),
      ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'],
    );
    const nodes = await restRequest<{
      items: { metadata: { name: string }; status: { conditions: { type: string; status: string }[] } }[];
    }>(admin, 'GET', '/api/v1/nodes');
    const ready = nodes.body.items.filter((n) =>
      n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    assert.deepEqual(ready.map((n) => n.metadata.name).sort(), [...cp.nodeNames].sort());
    assert.equal(cp.nodeNames.length, 2);
  });

  it('brings a 3-replica StatefulSet to 3 Ready Pods with endpoints, and garbage-collects them with it', async () => {
    const labels = { app: 'db' };
    const sts = await restRequest(admin, 'POST', `/apis/apps/v1/namespaces/${ns}/statefulsets`, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: {
        replicas: 3,
        serviceName: 'db',
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: 'db', image: 'postgres:16' }] } },
      },
    });
    assert.equal(sts.status, 201);
    await waitFor(
      'the StatefulSet to report 3 ready replicas',
      async () => {
        const got = await restRequest<{ status: { readyReplicas?: number } }>(
          admin,
          'GET',
          `/apis/apps/v1/namespaces/${ns}/statefulsets/db`,
        );
        return got.body.status.readyReplicas === 3;
      },
      120_000,
    );
    const pods = await restRequest<PodList>(admin, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Ddb`);
    assert.deepEqual(pods.body.items.map((p) => p.metadata.name).sort(), ['db-0', 'db-1', 'db-2']);
    for (const pod of pods.body.items) {
      assert.equal(pod.status.phase, 'Running');
      assert.ok(cp.nodeNames.includes(pod.spec.nodeName ?? ''), `${pod.metadata.name} is on a kwok node`);
    }

    const service = await restRequest(admin, 'POST', `/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db' },
      spec: { selector: labels, ports: [{ port: 5432 }] },
    });
    assert.equal(service.status, 201);
    const podIPs = pods.body.items.map((p) => p.status.podIP).sort();
    assert.equal(new Set(podIPs).size, 3, `each Pod has its own IP: ${podIPs.join(', ')}`);
    await waitFor('the EndpointSlice controller to list the three Pod IPs', async () => {
      const slices = await restRequest<{ items: { endpoints?: { addresses: string[] }[] }[] }>(
        admin,
        'GET',
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Ddb`,
      );
      const addresses = slices.body.items.flatMap((s) => s.endpoints ?? []).flatMap((e) => e.addresses);
      return JSON.stringify(addresses.sort()) === JSON.stringify(podIPs);
    });

    const deleted = await restRequest(admin, 'DELETE', `/apis/apps/v1/namespaces/${ns}/statefulsets/db`, {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
    });
    assert.equal(deleted.status, 200);
    await waitFor(
      'the garbage collector to delete the Pods of the deleted StatefulSet',
      async () =>
        (await restRequest<PodList>(admin, 'GET', `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Ddb`)).body.items
          .length === 0,
      120_000,
    );
  });

  it('garbage-collects a dependent when its owner is deleted', async () => {
    const configmaps = `/api/v1/namespaces/${ns}/configmaps`;
    const owner = await restRequest<{ metadata: { uid: string } }>(admin, 'POST', configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner' },
    });
    assert.equal(owner.status, 201);
    const dependent = await restRequest(admin, 'POST', configmaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'dependent',
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.body.metadata.uid }],
      },
    });
    assert.equal(dependent.status, 201);
    assert.equal((await restRequest(admin, 'DELETE', `${configmaps}/owner`)).status, 200);
    await waitFor(
      'the dependent ConfigMap to be collected',
      async () => (await restRequest(admin, 'GET', `${configmaps}/dependent`)).status === 404,
    );
  });
});
