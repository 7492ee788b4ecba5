/**
 * The elector's failsafe hook against a real API server: a leader cut off from the API server that
 * `keepLeadingWithoutApi` vouches for leads on past its renew deadline (and renews as soon as the
 * API server answers again), while one that is refused steps down at the deadline, as without the hook.
 *
 * The API server is made unreachable the two ways it happens: requests on open connections hang
 * (a dead path) and new connections are refused, or everything is refused at once (a stopped server).
 * The other candidate plays the peers' side of the contract: it refuses to take the Lease for a
 * lease duration after the leader was last vouched for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, type FaultProxy, startControlPlane, startFaultProxy } from '@kanri/testenv';
import type { LeaderElectionOptions } from '../src/index.js';
import { Candidate, NAMESPACE, type Timings, waitFor } from './leader-candidates.js';
import { LeaseHistory } from './lease-history.js';

/** A renew deadline well inside the lease, so that order, not milliseconds, decides every assertion. */
const TIMINGS: Timings = { leaseDurationMs: 6_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

type Cut = (proxy: FaultProxy) => void;
const CUTS: Record<string, Cut> = {
  'open requests hang, new connections are refused': (proxy) => {
    proxy.stallOpenConnections();
    proxy.refuseNew(true);
  },
  'every connection is refused': (proxy) => {
    proxy.refuseNew(true);
    proxy.dropAll();
  },
};

describe('LeaderElector keepLeadingWithoutApi (failsafe)', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource('v1', 'Namespace').create({ metadata: { name: NAMESPACE } });
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await client?.close();
    await cp?.stop();
  });

  /** A leader reaching the API server through its own proxy, and a candidate reaching it directly. */
  const setUp = async (name: string, vouch: () => boolean) => {
    const proxy = await startFaultProxy(cp.server);
    // The default 30 s request timeout would outlast the renew deadline; the elector bounds each try itself too.
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url }, { timeoutMs: 1_000, maxAttempts: 1 });
    const asks: number[] = [];
    const deadlines: number[] = [];
    const hooks: Pick<LeaderElectionOptions, 'keepLeadingWithoutApi' | 'onLeadingUntil'> = {
      keepLeadingWithoutApi: async () => {
        asks.push(performance.now());
        return vouch();
      },
      onLeadingUntil: (deadline) => deadlines.push(deadline),
    };
    const leader = new Candidate(viaProxy, name, `${name}-leader`, TIMINGS, undefined, undefined, hooks);
    await waitFor('the proxied candidate to lead', () => leader.elector.isLeader);
    const history = await LeaseHistory.start(client, NAMESPACE, name);
    // The peers' side: no take-over for a lease duration after the leader was vouched for.
    const refusal = () => {
      const last = asks.at(-1);
      return last !== undefined && vouch() && performance.now() - last < TIMINGS.leaseDurationMs
        ? 'the leader was vouched for'
        : undefined;
    };
    const other = new Candidate(client, name, `${name}-other`, TIMINGS, undefined, refusal);
    cleanups.push(async () => {
      await Promise.all([leader.shutdown(), other.shutdown()]);
      await history.stop();
      await viaProxy.close();
      await proxy.close();
    });
    await waitFor('the other to see it lead', () => other.elector.leader === leader.identity);
    await waitFor('two renewals through the proxy', () => history.versions.length >= 3, 15_000);
    return { proxy, leader, other, history, asks, deadlines };
  };

  for (const [how, cut] of Object.entries(CUTS)) {
    it(`leads on while vouched for when ${how}, and renews once the API server answers again`, async (t) => {
      const name = `vouched-${Object.keys(CUTS).indexOf(how)}`;
      const { proxy, leader, other, history, asks, deadlines } = await setUp(name, () => true);
      assert.equal(asks.length, 0, 'not asked while renewals succeed');
      const cutAt = performance.now();
      cut(proxy);
      // A renewal already sent when the connections stalled may still land: count from a moment later.
      await sleep(TIMINGS.retryPeriodMs);
      const versionsBefore = history.versions.length;
      // Past the renew deadline several times over, and past the lease duration as others judge it.
      await sleep(TIMINGS.leaseDurationMs + 2 * TIMINGS.renewDeadlineMs);
      t.diagnostic(`asked ${asks.length} times in ${(performance.now() - cutAt).toFixed(0)} ms`);
      assert.equal(leader.elector.isLeader, true, 'still leading');
      assert.equal(leader.abortedAt, undefined, 'the leadership signal never aborted');
      assert.equal(history.versions.length, versionsBefore, 'no write got through meanwhile');
      assert.ok(asks.length >= 3, `asked once per renew deadline (${asks.length} times)`);
      assert.ok(asks.every((at) => at > cutAt));
      // Each extension reached onLeadingUntil (a watchdog fed from it stays fed).
      const lastDeadline = deadlines.at(-1) ?? 0;
      assert.ok(lastDeadline > cutAt + TIMINGS.leaseDurationMs, 'the deadline moved with the extensions');
      assert.ok(lastDeadline >= (asks.at(-1) ?? 0), 'counted from the vouching call');
      assert.equal(other.ledAt, undefined, 'the other refused to take the Lease');

      proxy.refuseNew(false);
      const backAt = performance.now();
      await waitFor(
        'a renewal once the API server answers',
        () => history.versions.length > versionsBefore,
        3 * TIMINGS.renewDeadlineMs,
      );
      const renewedAt = performance.now();
      t.diagnostic(`renewed ${(renewedAt - backAt).toFixed(0)} ms after the API server came back`);
      assert.deepEqual(history.holders(), [leader.identity]);
      assert.equal(leader.elector.isLeader, true);
      const asksThen = asks.length;
      await sleep(3 * TIMINGS.renewDeadlineMs);
      assert.equal(asks.length, asksThen, 'renewals succeed again: the peers are no longer asked');
      assert.equal(leader.abortedAt, undefined);
      assert.ok(history.versions.length >= versionsBefore + 3, 'renewing every retry period again');
      assert.equal(other.ledAt, undefined);
    });
  }

  it('steps down at the renew deadline when the peers do not vouch, before the Lease can expire', async (t) => {
    const { proxy, leader, other, history, asks, deadlines } = await setUp('refused', () => false);
    const cutAt = performance.now();
    CUTS['open requests hang, new connections are refused']?.(proxy);
    const abortedAt = await waitFor('the leader to step down', () => leader.abortedAt, 30_000);
    const deadline = deadlines.at(-1) ?? 0;
    t.diagnostic(`stepped down ${(abortedAt - cutAt).toFixed(0)} ms after the cut, deadline at +${deadline - cutAt}`);
    assert.equal(asks.length, 1, 'asked once, shortly before the deadline');
    const [asked] = asks as [number];
    assert.ok(
      asked < abortedAt && asked >= deadline - TIMINGS.retryPeriodMs - 50,
      'asked inside the last retry period',
    );
    // Timers may fire a little early; the step-down is at the deadline, not before the ask or after the Lease.
    assert.ok(abortedAt >= deadline - 50, `stepped down ${(deadline - abortedAt).toFixed(0)} ms before the deadline`);
    const last = history.lastHeldBy(leader.identity);
    assert.ok(last?.renewedAtEpochMs !== undefined);
    assert.ok((leader.abortedAtEpochMs ?? Number.POSITIVE_INFINITY) < last.renewedAtEpochMs + last.leaseDurationMs);
    const ledAt = await waitFor('the other to take over', () => other.ledAt, 30_000);
    assert.ok(abortedAt < ledAt);
    await history.reach(other.identity);
    assert.deepEqual(history.holders(), [leader.identity, other.identity]);
    proxy.refuseNew(false);
  });
});
