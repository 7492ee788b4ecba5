/**
 * Issue 16, finding 6: a password is generated only for a Secret the API server says is absent,
 * never on a miss in the operator's cache (which lags a create, and, filtered by label, never holds
 * a Secret made without Kanri's labels). Before, a cache miss generated a new password that the
 * next apply forced over the one running instances and applications used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ForbiddenError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane } from '@kanri/testenv';
import { LABEL, type PostgresCluster } from '../src/index.js';
import { readCredentials } from '../src/operator/credentials.js';

const cluster = {
  metadata: { name: 'db', namespace: 'default' },
  spec: { users: [{ name: 'app' }] },
} as unknown as PostgresCluster;
/** What a cache that has not seen the Secret answers. */
const missing = () => undefined;

describe('the cluster credentials', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  it('keep the password of a Secret the cache misses but the API server has, and generate only the absent ones', async () => {
    // The cluster's own (its label; issue 37 finding 10): only such a Secret lends its password.
    await client.resource<KubeObject>('v1', 'Secret').create({
      metadata: { name: 'db-superuser', namespace: 'default', labels: { [LABEL.cluster]: 'db' } },
      stringData: { password: 'in-use-by-the-instances' },
    } as KubeObject);
    const signal = AbortSignal.timeout(10_000);
    const first = await readCredentials(cluster, { get: missing, client, signal } as never);
    assert.equal(first.superuser, 'in-use-by-the-instances');
    assert.match(first.replication, /^[A-Za-z0-9_-]{32}$/, 'an absent Secret gets a generated password');
    assert.match(first.users.app ?? '', /^[A-Za-z0-9_-]{32}$/);
    const second = await readCredentials(cluster, { get: missing, client, signal } as never);
    assert.equal(second.superuser, 'in-use-by-the-instances', 'stable across reconciles');
  });

  it("take no password from a Secret that is not the cluster's: another cluster's, or one planted without its label", async () => {
    await client.resource<KubeObject>('v1', 'Secret').create({
      metadata: { name: 'db-replication', namespace: 'default' },
      stringData: { password: 'planted' },
    } as KubeObject);
    await client.resource<KubeObject>('v1', 'Secret').create({
      metadata: {
        name: 'db-pguser-app',
        namespace: 'default',
        labels: { [LABEL.cluster]: 'db-pguser' },
        ownerReferences: [
          {
            apiVersion: 'postgres.kanri.dev/v1',
            kind: 'PostgresCluster',
            name: 'db-pguser',
            uid: 'x',
            controller: true,
          },
        ],
      },
      stringData: { password: 'another-clusters' },
    } as KubeObject);
    const read = await readCredentials(cluster, { get: missing, client, signal: AbortSignal.timeout(10_000) } as never);
    assert.notEqual(read.replication, 'planted');
    assert.notEqual(read.users.app, 'another-clusters');
  });

  it('fail, rather than generate, when the API server cannot say whether the Secret exists', async () => {
    const stranger = await cp.addUser({ name: 'nobody' });
    const limited = await KubeClient.load({ kubeconfig: stranger.kubeconfigPath, maxAttempts: 1 });
    try {
      const error = await readCredentials(cluster, {
        get: missing,
        client: limited,
        signal: AbortSignal.timeout(10_000),
      } as never).catch((e: unknown) => e);
      assert.ok(error instanceof ForbiddenError, `refused, not generated: ${error}`);
    } finally {
      await limited.close();
    }
  });
});
