/**
 * Issue 37 (lower item): the operator runs no instance where its admission policies are missing.
 * The operator is installed without them: a new cluster gets the `AdmissionPolicies` condition
 * naming the missing policy, and no Pod; once they are installed, the cluster proceeds to Ready
 * with no restart of the operator.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';

describe('the operator where its admission policies are missing', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, admissionPolicies: false });
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs())?.split('\n').slice(-80).join('\n'));
    await env?.stop();
  });

  it('says which policy is missing, creates no Pod, and proceeds once they are installed', async () => {
    await clusters(env.client).create(clusterManifest('gated', 1));
    const condition = await waitFor(
      'the AdmissionPolicies condition',
      async () => {
        const c = await clusters(env.client).get('gated', { namespace: 'default' });
        const found = c.status?.conditions?.find((x) => x.type === 'AdmissionPolicies');
        if (!found) throw new Error(`conditions: ${JSON.stringify(c.status?.conditions ?? [])}`);
        return found;
      },
      60_000,
      250,
    );
    assert.equal(condition.status, 'False');
    assert.equal(condition.reason, 'PolicyMissing');
    assert.match(
      condition.message ?? '',
      /ValidatingAdmissionPolicy instance-pod-writes\.postgres\.kanri\.dev is not installed/,
    );
    // The operator has looked at the cluster (the condition); give it a few more passes.
    await sleep(5_000);
    const pods = await env.client.resource('v1', 'Pod').list({ namespace: 'default' });
    assert.deepEqual(
      pods.items.map((p) => p.metadata?.name),
      [],
      'no Pod without the policies',
    );

    await env.installPolicies();
    const ready = await waitReady(env.client, 'gated', 1);
    const inForce = ready.status?.conditions?.find((x) => x.type === 'AdmissionPolicies');
    assert.equal(inForce?.status, 'True');
    assert.equal(inForce?.reason, 'InForce');
  });
});
