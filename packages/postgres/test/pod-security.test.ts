/**
 * Issue 16, acceptance 6: every Kanri Pod passes the `restricted` Pod Security Standard. A
 * namespace enforces it (the API server's PodSecurity admission refuses any Pod that does not
 * pass); a cluster there, with a user and a volume repo (so its instances and its repo host), must
 * come up Ready. The instance Pod builder serves restores and major upgrades too. A Pod that does
 * not pass is refused there, so the test cannot pass with the admission off.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ForbiddenError, type KubeObject } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { LABEL } from '../src/contract/index.js';
import type { PostgresCluster } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv } from './harness.js';

const NAMESPACE = 'restricted';
const CLUSTER = 'strict';
const volumeRepo = {
  name: 'repo1',
  volume: { volumeClaimSpec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
};

describe('the restricted Pod Security Standard', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  const pods = () => env.client.resource<Pod & KubeObject>('v1', 'Pod');

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2, pgbackrest: true });
    await env.client.resource('v1', 'Namespace').create({
      metadata: {
        name: NAMESPACE,
        labels: {
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    });
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs())?.split('\n').slice(-150).join('\n'));
    await env?.stop();
  });

  it('is enforced in the namespace: a Pod that does not pass is refused', async () => {
    const refused = await pods()
      .create({
        metadata: { name: 'loose', namespace: NAMESPACE },
        spec: { containers: [{ name: 'c', image: 'example/app:1' }] },
      })
      .catch((e: unknown) => e);
    assert.ok(refused instanceof ForbiddenError, `refused: ${refused}`);
    assert.match(refused.message, /violates PodSecurity "restricted:latest"/);
  });

  it('admits every Pod of a cluster with a user and a volume repo, which becomes Ready', async () => {
    const manifest = clusterManifest(CLUSTER, 2, {
      users: [{ name: 'app', databases: ['app'] }],
      backups: { pgbackrest: { repos: [volumeRepo] } },
    } as never) as PostgresCluster;
    manifest.metadata = { name: CLUSTER, namespace: NAMESPACE };
    await clusters(env.client).create(manifest);
    const ready = await waitFor(
      `${CLUSTER} Ready in ${NAMESPACE}`,
      async () => {
        const c = await clusters(env.client).get(CLUSTER, { namespace: NAMESPACE });
        const condition = c.status?.conditions?.find((x) => x.type === 'Ready');
        if (condition?.status !== 'True') throw new Error(condition?.message ?? 'no status');
        return c;
      },
      240_000,
      500,
    );
    assert.equal(ready.status?.readyInstances, 2);
    const running = (await pods().list({ namespace: NAMESPACE, labelSelector: `${LABEL.cluster}=${CLUSTER}` })).items;
    assert.deepEqual(running.map((p) => [p.metadata?.name, p.status?.phase]).sort(), [
      [`${CLUSTER}-i-0`, 'Running'],
      [`${CLUSTER}-i-1`, 'Running'],
      [`${CLUSTER}-repo-host`, 'Running'],
    ]);
  });
});
