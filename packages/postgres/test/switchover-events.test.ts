/**
 * README claims about the switchover annotation's bookkeeping, end to end: a served request shows
 * as Events on the PostgresCluster (the operator's `SwitchoverRequested` and `SwitchoverCompleted`,
 * the primary's `Switchover`, the operator's `PrimaryChanged`) and the operator removes the
 * annotation, and the order it put on the primary's Pod, once the primary changed; a request for a
 * Pod that is no member of the cluster is refused once with a Warning Event that says why, the
 * primary stays and the request is removed; each request is served exactly once, so `*` twice in
 * a row switches twice and no more (the Lease's transitions count the changes of primary).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import { ANNOTATION, EVENT_REASON } from '../src/contract/index.js';
import { type PostgresEnv, startPostgresEnv } from './harness.js';
import { clusterEvents, waitForClusterEvent } from './support/cluster-observers.js';
import {
  clusters,
  failoverCluster,
  leaseOf,
  leaseTransitions,
  podsOf,
  reportOf,
  waitHealthy,
} from './support/failover-env.js';

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
  /** The Pods that carry a switchover order. */
  const ordered = async () =>
    (await podsOf(env.client, CLUSTER))
      .filter((p) => p.metadata?.annotations?.[ANNOTATION.switchoverOrder] !== undefined)
      .map((p) => p.metadata?.name);
  const operatorKnows = (primary: string) =>
    waitFor(
      'the operator to know the primary',
      async () => (await clusters(env.client).get(CLUSTER, { namespace: 'default' })).status?.primary === primary,
      60_000,
      250,
    );

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
    await operatorKnows(primary);
    await annotate(target);
    const order = await waitFor(
      'the order on the primary',
      async () =>
        (await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === primary)?.metadata?.annotations?.[
          ANNOTATION.switchoverOrder
        ],
      60_000,
      50,
    );
    assert.match(order, new RegExp(`^[a-z0-9-]+:${escaped(target)}$`));

    await waitFor('the annotation to be cleared', async () => (await annotation()) === undefined, 120_000, 250);
    assert.equal((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, target);
    await waitFor('the order to be cleared', async () => (await ordered()).length === 0, 30_000, 250);
    const token = order.slice(0, order.indexOf(':'));
    // The echo comes with the old primary's next report, which may follow the operator's clearing
    // (it clears on the change of primary it sees first).
    await waitFor(
      'the old primary to echo the token',
      async () =>
        reportOf((await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === primary))?.switchoverServed ===
        token,
      30_000,
      250,
    );
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

  it('refuses a request for a Pod that is no member of the cluster once, with a Warning Event, keeps the primary and removes the request', async () => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 2);
    await operatorKnows(primary);
    const transitions = await leaseTransitions(env.client, CLUSTER);
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
    await waitFor('the refused request to be removed', async () => (await annotation()) === undefined, 60_000, 250);
    await waitFor('its order to be removed', async () => (await ordered()).length === 0, 30_000, 250);
    // Two of the primary's task periods (5 s each): an order it still saw would be served again by now.
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const refusals = (await clusterEvents(env.client, CLUSTER)).filter(
      (e) => e.reason === EVENT_REASON.switchoverRefused && /not-a-member/.test(e.note),
    );
    assert.deepEqual(
      refusals.map((e) => e.count),
      [1],
      'refused once',
    );
    assert.equal((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, primary, 'the primary stays');
    assert.equal(await leaseTransitions(env.client, CLUSTER), transitions, 'no change of primary');
  });

  it('serves each request exactly once: `*` twice in a row switches twice, and no more', async () => {
    const transitions = await leaseTransitions(env.client, CLUSTER);
    for (const round of [1, 2]) {
      const { primary } = await waitHealthy(env.client, CLUSTER, 2);
      await operatorKnows(primary);
      await annotate('*');
      await waitFor(
        `round ${round}: the annotation to be cleared`,
        async () => (await annotation()) === undefined,
        120_000,
        250,
      );
      assert.notEqual((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, primary, `round ${round} switched`);
      assert.equal(await leaseTransitions(env.client, CLUSTER), transitions + round, `round ${round}: one change`);
    }
    // The old primary rejoined and the new one ran its tasks a few times: a request served twice
    // (the new primary switching back) would have shown by now.
    const { primary } = await waitHealthy(env.client, CLUSTER, 2);
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    assert.equal((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, primary);
    assert.equal(await leaseTransitions(env.client, CLUSTER), transitions + 2, 'two requests, two changes of primary');
    assert.deepEqual(await ordered(), [], 'no order left on any Pod');
  });
});
