/**
 * An instance Pod the scheduler left unschedulable on a claim that is bound now is recreated
 * (operator/instances/stuck-pods.ts). CI saw a replica stay Pending for five minutes that way: the scheduler
 * marked it unschedulable while its claim was unbound and did not retry once it was bound. That
 * race cannot be forced, so this test makes its trace: a Pod no node accepts (its affinity names
 * no node), whose PodScheduled condition is then written as the scheduler writes it for an unbound
 * claim, 30 s old. The operator must replace that Pod, say why in an Event, and leave alone a Pod
 * that is unschedulable for its own reasons.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import type { Event, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv } from './harness.js';

const CLUSTER = 'stuck';
const POD = `${CLUSTER}-i-0`;

describe('an instance Pod the scheduler left behind', { timeout: 5 * 60_000 }, () => {
  let env: PostgresEnv;
  const pods = () => env.client.resource<Pod & { metadata: object }>('v1', 'Pod');
  const unschedulable = async () => {
    const pod = await pods().get(POD, { namespace: 'default' });
    const condition = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    return condition?.status === 'False' && condition.reason === 'Unschedulable' ? pod : undefined;
  };

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1 });
    await env.startOperator();
    const manifest = clusterManifest(CLUSTER, 1) as PostgresCluster;
    const nowhere = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['none'] }] },
          ],
        },
      },
    };
    manifest.spec.instances = manifest.spec.instances.map((set) => ({ ...set, affinity: nowhere }));
    await clusters(env.client).create(manifest);
  });
  after(async () => {
    if (process.exitCode)
      console.error(
        (await env?.allLogs())
          ?.split('\n')
          .filter((l) => l.includes('postgres-operator'))
          .slice(-60)
          .join('\n'),
      );
    await env?.stop();
  });

  it('is left alone while it is unschedulable for a reason of its own', async () => {
    const first = await waitFor('the Pod to be unschedulable', unschedulable, 60_000, 250);
    await new Promise((resolve) => setTimeout(resolve, 25_000));
    const still = await pods().get(POD, { namespace: 'default' });
    assert.equal(still.metadata?.uid, first.metadata?.uid, 'not recreated: its affinity is the reason');
  });

  it('is recreated once its trace says an unbound claim, and the claim is bound', async () => {
    const stuck = await waitFor('the Pod to be unschedulable', unschedulable, 60_000, 250);
    const condition = {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: '0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.',
      lastTransitionTime: new Date(Date.now() - 30_000).toISOString(),
    };
    await pods().patchStatus(POD, { status: { conditions: [condition] } }, { namespace: 'default', type: 'strategic' });
    const replaced = await waitFor(
      'a new Pod in its place',
      async () => {
        const pod = await pods().get(POD, { namespace: 'default' });
        return pod.metadata?.uid !== stuck.metadata?.uid && pod;
      },
      60_000,
      250,
    );
    assert.ok(replaced);
    const events = await env.client
      .resource<Event & { metadata: object }>('v1', 'Event')
      .list({ namespace: 'default' });
    const event = events.items.find((e) => e.reason === 'RecreatingUnscheduledPod');
    assert.match(
      event?.message ?? events.items.map((e) => e.reason).join(','),
      /stuck-i-0 has been unschedulable for \d+ s .* are bound now/,
    );
  });
});
