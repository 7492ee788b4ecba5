/**
 * Issue 41: PGO's image-pull and placement fields work. A cluster with `imagePullPolicy`,
 * `imagePullSecrets`, and an instance set with `priorityClassName` and `topologySpreadConstraints`
 * becomes Ready, and its Pods carry each: the API server's Priority admission resolved the class
 * to its value (so the name reached it as a Pod field), and the scheduler placed the instances on
 * different nodes under a constraint that allows no skew.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { LABEL } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';

describe("PGO's image pull and placement fields", { timeout: 8 * 60_000 }, () => {
  let env: PostgresEnv;
  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
  });
  after(async () => {
    await env?.stop();
  });

  it('reach the instance Pods, which the API server and the scheduler honour', async () => {
    await env.client.resource<KubeObject & { value: number }>('scheduling.k8s.io/v1', 'PriorityClass').create({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'kanri-databases' },
      value: 100_000,
    });
    const spread = {
      maxSkew: 1,
      topologyKey: 'kubernetes.io/hostname',
      whenUnsatisfiable: 'DoNotSchedule',
      labelSelector: { matchLabels: { [LABEL.cluster]: 'placed' } },
    };
    const manifest = clusterManifest('placed', 2);
    await clusters(env.client).create({
      ...manifest,
      spec: {
        ...manifest.spec,
        imagePullPolicy: 'IfNotPresent',
        imagePullSecrets: [{ name: 'registry' }],
        instances: [
          {
            ...manifest.spec.instances[0],
            priorityClassName: 'kanri-databases',
            topologySpreadConstraints: [spread],
          },
        ],
      },
    } as typeof manifest);
    await waitReady(env.client, 'placed', 2);
    const pods = (
      await env.client.resource<Pod>('v1', 'Pod').list({
        namespace: 'default',
        labelSelector: `${LABEL.cluster}=placed,${LABEL.instance}`,
      })
    ).items;
    assert.equal(pods.length, 2);
    for (const pod of pods) {
      const name = pod.metadata?.name;
      assert.equal(pod.spec?.priorityClassName, 'kanri-databases', name);
      assert.equal(pod.spec?.priority, 100_000, `${name}: the Priority admission plugin resolved the class`);
      assert.deepEqual(pod.spec?.imagePullSecrets, [{ name: 'registry' }], name);
      assert.equal(pod.spec?.containers?.[0]?.imagePullPolicy, 'IfNotPresent', name);
      assert.deepEqual(pod.spec?.topologySpreadConstraints, [spread], name);
    }
    assert.equal(new Set(pods.map((p) => p.spec?.nodeName)).size, 2, 'one instance per node');
  });
});
