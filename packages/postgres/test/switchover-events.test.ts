/**
 * README claims about the switchover annotation's bookkeeping, end to end: a served request shows
 * as Events on the PostgresCluster (the operator's `SwitchoverRequested` and `SwitchoverCompleted`,
 * the primary's `Switchover`, the operator's `PrimaryChanged`) and the operator removes the
 * annotation once the primary changed; a request for a Pod that is no member of the cluster is
 * refused with a Warning Event that says why, and the primary stays; a value is served once only
 * while it stands, so `*` twice in a row switches twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import { ANNOTATION, EVENT_REASON } from '../src/contract/index.js';
import { type PostgresEnv, startPostgresEnv } from './harness.js';
import { clusterEvents, waitForClusterEvent } from './support/cluster-observers.js';
import { clusters, failoverCluster, leaseOf, waitHealthy } from './support/failover-env.js';

const CLUSTER = 'swap';
/** The operator's own Event reasons (the agents' are in the contract's EVENT_REASON). */
const OPERATOR_REASON = {
  requested: 'SwitchoverRequested',
  completed: 'SwitchoverCompleted',
  targetInvalid: 'SwitchoverTargetInvalid',
  primaryChanged: 'PrimaryChanged',
} as const;

const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('switchover: Events and the annotation', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  let switched: { from: string; to: string } | undefined;
  const annotate = (value: string | null) =>
    clusters(env.client).patch(
      CLUSTER,
      { metadata: { annotations: { [ANNOTATION.switchover]: value } } },
      { namespace: 'default', type: 'merge' },
    );
  const annotation = async () =>
    (await clusters(env.client).get(CLUSTER, { namespace: 'default' })).metadata?.annotations?.[ANNOTATION.switchover];

  before(async () => {
    // One instance per node (the failover tests' anti-affinity), so the two never share a host.
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
    await clusters(env.client).create(failoverCluster(CLUSTER, 2));
    await waitHealthy(env.client, CLUSTER, 2);
  });
  after(async () => {
    await env?.stop();
  });

  it('records the request, the handover and the new primary as Events, then clears the annotation', async () => {
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 2);
    const target = pods.map((p) => p.metadata?.name ?? '').find((n) => n !== primary) as string;
    await waitFor(
      'the operator to know the primary',
      async () => (await clusters(env.client).get(CLUSTER, { namespace: 'default' })).status?.primary === primary,
      60_000,
      250,
    );
    await annotate(target);

    await waitFor('the annotation to be cleared', async () => (await annotation()) === undefined, 120_000, 250);
    assert.equal((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, target);
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: OPERATOR_REASON.requested,
      note: new RegExp(`${escaped(primary)}.*${escaped(target)}`),
    });
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: EVENT_REASON.switchover,
      note: new RegExp(`from ${escaped(primary)} to ${escaped(target)}`),
    });
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: OPERATOR_REASON.completed,
      note: new RegExp(`${escaped(primary)}.*${escaped(target)}`),
    });
    const refusals = (await clusterEvents(env.client, CLUSTER)).filter(
      (e) => e.reason === EVENT_REASON.switchoverRefused || e.reason === OPERATOR_REASON.targetInvalid,
    );
    assert.deepEqual(refusals, [], 'no Warning about a switchover that was served');
    // The old primary rejoins, so the next test starts from a healthy pair.
    await waitHealthy(env.client, CLUSTER, 2);
    switched = { from: primary, to: target };
  });

  it('records that change of primary as a PrimaryChanged Event', async () => {
    assert.ok(switched, 'the switchover above happened');
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: OPERATOR_REASON.primaryChanged,
      note: new RegExp(`${escaped(switched.to)}.*${escaped(switched.from)}`),
    });
  });

  it('refuses a request for a Pod that is no member of the cluster with a Warning Event, and keeps the primary', async () => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 2);
    await annotate('not-a-member');
    const refused = await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Warning',
      reason: EVENT_REASON.switchoverRefused,
      note: /not-a-member/,
    });
    assert.match(refused.note, /not-a-member is not an instance of this cluster/);
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Warning',
      reason: OPERATOR_REASON.targetInvalid,
      note: /not-a-member/,
    });
    const lease = await leaseOf(env.client, CLUSTER);
    assert.equal(lease.spec?.holderIdentity, primary, 'the primary stays');
    assert.equal(lease.metadata?.annotations?.[ANNOTATION.switchoverServed], 'not-a-member', 'served once');
    await annotate(null);
    await waitFor(
      'the served request to be forgotten once withdrawn',
      async () =>
        (await leaseOf(env.client, CLUSTER)).metadata?.annotations?.[ANNOTATION.switchoverServed] === undefined,
      30_000,
      250,
    );
  });

  it('serves the same value again once the last request was cleared: `*` twice in a row switches twice', async () => {
    for (const round of [1, 2]) {
      const { primary } = await waitHealthy(env.client, CLUSTER, 2);
      await waitFor(
        'the operator to know the primary',
        async () => (await clusters(env.client).get(CLUSTER, { namespace: 'default' })).status?.primary === primary,
        60_000,
        250,
      );
      await annotate('*');
      await waitFor(
        `round ${round}: the annotation to be cleared`,
        async () => (await annotation()) === undefined,
        120_000,
        250,
      );
      assert.notEqual((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, primary, `round ${round} switched`);
    }
  });
});
