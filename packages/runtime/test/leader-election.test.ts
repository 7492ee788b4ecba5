/**
 * Leader election against a real API server: one leader at a time, hand-over through the release
 * (in-process and on SIGTERM), take-over after a SIGKILL only once the lease ran out, and a
 * leader that cannot renew stepping down before anyone else may take over.
 *
 * The assertions are about order and cause, never speed (the machine is shared and loaded): a
 * watch of our own records every version of the Lease, and each candidate notes when its
 * callbacks ran. How long things took goes to the diagnostics only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatMicroTime, KubeClient } from '@kanri/client';
import { type ControlPlane, isProcessAlive, startControlPlane, startFaultProxy } from '@kanri/testenv';
import type { LeaderElectionOptions } from '../src/index.js';
import { Candidate, ChildCandidate, NAMESPACE, type Timings, waitFor } from './leader-candidates.js';
import { LeaseHistory } from './lease-history.js';

const MICROTIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

const FAST: Timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
/**
 * Candidates that poll once when they start and then not for at least 20 s, and whose lease lasts
 * a minute: one that leads less than 20 s after it started can only have been woken by its watch
 * seeing the release, never by a poll or by the lease running out.
 */
const SLOW_POLL: Timings = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 20_000 };
/** A leader that renews every 5 s: for the adopter, whose first write must be a renewal, not a campaign. */
const RENEW_5S: Timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 5_000 };
/**
 * For the stalled leader: a renew deadline well inside the lease, so that stepping down before the
 * lease runs out is a question of order with seconds to spare, not of milliseconds.
 */
const STALL: Timings = { leaseDurationMs: 6_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

describe('LeaderElector against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  const candidates = new Set<Candidate>();
  const children = new Set<ChildCandidate>();

  const candidate = (
    name: string,
    identity: string,
    timings: Timings,
    via = client,
    adopt?: LeaderElectionOptions['adopt'],
    mayAcquire?: LeaderElectionOptions['mayAcquire'],
  ): Candidate => {
    const started = new Candidate(via, name, identity, timings, adopt, mayAcquire);
    candidates.add(started);
    return started;
  };
  const childCandidate = (name: string, identity: string, timings: Timings): ChildCandidate => {
    const started = new ChildCandidate({
      kubeconfig: cp.kubeconfigPath,
      namespace: NAMESPACE,
      name,
      identity,
      ...timings,
    });
    children.add(started);
    return started;
  };
  const leaseOf = (name: string) =>
    client.resource('coordination.k8s.io/v1', 'Lease').get(name, { namespace: NAMESPACE });
  const histories = new Set<LeaseHistory>();
  const historyOf = async (name: string) => {
    const history = await LeaseHistory.start(client, NAMESPACE, name);
    histories.add(history);
    return history;
  };

  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client.resource('v1', 'Namespace').create({ metadata: { name: NAMESPACE } });
  });
  after(async () => {
    for (const running of children) {
      if (running.exitedAt === undefined && isProcessAlive(running.pid)) process.kill(running.pid, 'SIGKILL');
      await running.exited;
    }
    await Promise.all([...candidates].map((running) => running.shutdown()));
    await Promise.all([...histories].map((history) => history.stop()));
    await client?.close();
    await cp?.stop();
  });

  it('takes no Lease while mayAcquire refuses (says why once), takes it once allowed, and never asks on renewal', async () => {
    let refusal: string | undefined = 'history behind the recorded one';
    const asked: (string | undefined)[] = [];
    const stale = candidate('refused', 'refused-a', FAST, client, undefined, (lease) => {
      asked.push(lease?.spec?.holderIdentity);
      return refusal;
    });
    // Missing, then free: asked each poll, taken never.
    await waitFor('three refused attempts', () => (asked.length >= 3 ? true : undefined));
    assert.equal(stale.ledAt, undefined);
    await assert.rejects(leaseOf('refused'), /not found/i, 'no Lease was created');
    assert.deepEqual(
      stale.warnings.filter((w) => w === 'not taking the lease'),
      ['not taking the lease'],
      'the refusal is said once, not every poll',
    );
    refusal = undefined;
    await waitFor('the candidate to lead once allowed', () => stale.ledAt);
    const askedWhileLeading = asked.length;
    await sleep(4 * FAST.retryPeriodMs);
    assert.equal(stale.elector.isLeader, true);
    assert.equal(asked.length, askedWhileLeading, 'renewals are not asked');
    assert.equal((await leaseOf('refused')).spec?.holderIdentity, 'refused-a');
    await stale.shutdown();
  });

  it('elects exactly one of two candidates, and isLeader agrees with the Lease', async () => {
    const a = candidate('pair', 'pair-a', FAST);
    const b = candidate('pair', 'pair-b', FAST);
    const leader = await waitFor('a leader', () => [a, b].find((c) => c.elector.isLeader));
    const follower = leader === a ? b : a;

    // Four renew periods: always exactly one leader, and the one the Lease names.
    const until = performance.now() + 2_000;
    while (performance.now() < until) {
      const lease = await leaseOf('pair');
      assert.equal([a, b].filter((c) => c.elector.isLeader).length, 1, 'exactly one leader');
      assert.equal(lease.spec?.holderIdentity, leader.identity);
      assert.equal(leader.elector.isLeader, true);
      await sleep(100);
    }
    const lease = await leaseOf('pair');
    assert.equal(lease.spec?.leaseDurationSeconds, 3);
    assert.equal(lease.spec?.leaseTransitions, 0);
    assert.match(lease.spec?.acquireTime ?? '', MICROTIME);
    assert.match(lease.spec?.renewTime ?? '', MICROTIME);
    assert.ok((lease.spec?.renewTime ?? '') > (lease.spec?.acquireTime ?? ''), 'the leader renews');
    assert.equal(follower.elector.leader, leader.identity);
    assert.equal(leader.elector.leader, leader.identity);
    assert.equal(follower.ledAt, undefined, 'the follower never led');
    assert.deepEqual(follower.newLeaders, [leader.identity]);
    assert.deepEqual(leader.newLeaders, [leader.identity]);
    await Promise.all([a.shutdown(), b.shutdown()]);
  });

  it('adopts a Lease its caller just wrote: leads without another write, then renews it; ignores one naming another holder', async () => {
    const leases = client.resource('coordination.k8s.io/v1', 'Lease');
    const spec = (holderIdentity: string) => {
      const now = formatMicroTime(new Date());
      return { holderIdentity, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 3 };
    };
    const sentAtMs = performance.now();
    const written = await leases.create({ metadata: { name: 'adopted', namespace: NAMESPACE }, spec: spec('adopter') });
    const adopter = candidate('adopted', 'adopter', RENEW_5S, client, { lease: written, sentAtMs });
    await waitFor('the adopter to lead', () => adopter.ledAt);
    // Renewals come every 5 s (RENEW_5S): a campaign would have read and written the Lease already.
    const right = await leaseOf('adopted');
    assert.equal(right.metadata?.resourceVersion, written.metadata?.resourceVersion, 'no write before leading');
    assert.equal(right.spec?.leaseTransitions, 3);
    let renewed = right;
    for (
      const until = performance.now() + 30_000;
      renewed.metadata?.resourceVersion === written.metadata?.resourceVersion;
    ) {
      assert.ok(performance.now() < until, 'the adopted Lease is renewed');
      await sleep(100);
      renewed = await leaseOf('adopted');
    }
    assert.equal(renewed.spec?.holderIdentity, 'adopter');
    assert.equal(adopter.elector.isLeader, true);

    const other = await leases.create({ metadata: { name: 'not-mine', namespace: NAMESPACE }, spec: spec('someone') });
    const impostor = candidate('not-mine', 'impostor', FAST, client, { lease: other, sentAtMs: performance.now() });
    await sleep(1_500);
    assert.equal(impostor.ledAt, undefined, 'a Lease naming another holder is not adopted');
    assert.equal((await leaseOf('not-mine')).spec?.holderIdentity, 'someone');
    await Promise.all([adopter.shutdown(), impostor.shutdown()]);
  });

  it("hands over when the leader is aborted: it stops its work, releases, and the follower's watch sees it", async (t) => {
    const leader = candidate('handover', 'handover-leader', SLOW_POLL);
    await waitFor('the first candidate to lead', () => leader.elector.isLeader);
    const history = await historyOf('handover');
    const follower = candidate('handover', 'handover-follower', SLOW_POLL);
    await waitFor('the follower to see the leader', () => follower.elector.leader === leader.identity);
    const transitions = (await leaseOf('handover')).spec?.leaseTransitions ?? -1;

    const stoppedAt = performance.now();
    leader.stop.abort();
    await leader.done;
    const ledAt = await waitFor('the follower to lead', () => follower.ledAt, 30_000);
    t.diagnostic(`hand-over after abort: ${(ledAt - stoppedAt).toFixed(0)} ms`);

    // Cause: the Lease went from the leader to nobody (its release) and only then to the follower.
    await history.reach(follower.identity);
    assert.deepEqual(history.holders(), [leader.identity, '', follower.identity]);
    // And the follower was woken by its watch: its first poll after start is ≥ 20 s away, the lease a minute.
    assert.ok(
      ledAt - follower.startedAt < SLOW_POLL.retryPeriodMs,
      `the follower led ${(ledAt - follower.startedAt).toFixed(0)} ms after it started, so a poll could have done it`,
    );
    // Order: the old leader's work was stopped, and its leadership over, before the new one began.
    assert.equal(leader.elector.isLeader, false);
    assert.ok(leader.leadershipSignal?.aborted);
    assert.ok(leader.abortedAt !== undefined && leader.abortedAt < ledAt, "the old leader's work was stopped first");
    assert.ok(leader.stoppedAt !== undefined && leader.stoppedAt < ledAt, 'onStoppedLeading ran before');
    const lease = await leaseOf('handover');
    assert.equal(lease.spec?.holderIdentity, follower.identity);
    assert.equal(lease.spec?.leaseTransitions, transitions + 1);
    assert.equal(lease.spec?.leaseDurationSeconds, SLOW_POLL.leaseDurationMs / 1_000);
    await follower.shutdown();
    const released = await leaseOf('handover');
    assert.equal(released.spec?.holderIdentity ?? '', '', 'a stopped leader leaves the Lease free');
    assert.equal(released.spec?.leaseDurationSeconds, 1);
  });

  it('hands over through the release when a leader process gets SIGTERM', async (t) => {
    const child = childCandidate('sigterm', 'sigterm-child', SLOW_POLL);
    await waitFor('the child to lead', () => child.line('LEADING'), 20_000);
    const history = await historyOf('sigterm');
    const parent = candidate('sigterm', 'sigterm-parent', SLOW_POLL);
    await waitFor('the parent to see the child lead', () => parent.elector.leader === 'sigterm-child');

    const terminatedAt = performance.now();
    process.kill(child.pid, 'SIGTERM');
    const ledAt = await waitFor('the parent to lead', () => parent.ledAt, 30_000);
    t.diagnostic(`hand-over after SIGTERM: ${(ledAt - terminatedAt).toFixed(0)} ms`);

    const { code } = await child.exited;
    assert.equal(code, 0);
    assert.ok(child.line('DONE'), 'the child finished run() normally');
    await history.reach(parent.identity);
    assert.deepEqual(history.holders(), ['sigterm-child', '', parent.identity], 'released, then taken');
    assert.ok(ledAt - parent.startedAt < SLOW_POLL.retryPeriodMs, "the parent's watch saw the release");
    const abortedEpochMs = Number(child.line('ABORTED')?.split(' ')[1]);
    assert.ok(
      abortedEpochMs <= (parent.ledAtEpochMs ?? 0),
      "the child's leader signal aborted before the parent started leading",
    );
    assert.equal((await leaseOf('sigterm')).spec?.holderIdentity, parent.identity);
    await parent.shutdown();
  });

  it('takes over from a SIGKILLed leader process only once its last renewal ran out, never overlapping', async (t) => {
    const child = childCandidate('crash', 'crash-child', FAST);
    await waitFor('the child to lead', () => child.line('LEADING'), 20_000);
    const history = await historyOf('crash');
    const parent = candidate('crash', 'crash-parent', FAST);
    await waitFor('the parent to see the child lead', () => parent.elector.leader === 'crash-child');
    // Several renewals of the child: the parent must not take over while they go on.
    await waitFor('three renewals by the child', () => history.versions.length >= 4, 15_000);
    assert.equal(parent.elector.isLeader, false, 'no take-over while the child renews');
    const transitions = (await leaseOf('crash')).spec?.leaseTransitions ?? -1;

    const killedAt = performance.now();
    process.kill(child.pid, 'SIGKILL');
    const ledAt = await waitFor('the parent to lead', () => parent.ledAt, 30_000);
    t.diagnostic(`take-over after SIGKILL: ${(ledAt - killedAt).toFixed(0)} ms (lease ${FAST.leaseDurationMs} ms)`);

    const { signal } = await child.exited;
    assert.equal(signal, 'SIGKILL');
    assert.ok(child.exitedAt !== undefined && child.exitedAt < ledAt, 'the child was dead when the parent led');
    assert.equal(isProcessAlive(child.pid), false);
    await history.reach(parent.identity);
    assert.deepEqual(history.holders(), ['crash-child', parent.identity], 'taken over, not released');
    // Safety: the parent waited a whole lease after the child's last renewal (both stamped on this machine's clock).
    const last = history.lastHeldBy('crash-child');
    assert.ok(last?.renewedAtEpochMs !== undefined);
    const waited = (parent.ledAtEpochMs ?? 0) - last.renewedAtEpochMs;
    t.diagnostic(`the parent led ${waited} ms after the child's last renewal`);
    assert.ok(waited >= last.leaseDurationMs, `led only ${waited} ms after the last renewal`);
    const lease = await leaseOf('crash');
    assert.equal(lease.spec?.holderIdentity, parent.identity);
    assert.equal(lease.spec?.leaseTransitions, transitions + 1);
    await parent.shutdown();
  });

  it('steps down before the lease runs out when renewals stall, and survives the API being unreachable', async (t) => {
    const proxy = await startFaultProxy(cp.server);
    // The default 30 s request timeout would outlast the renew deadline; the elector bounds each try itself too.
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url }, { timeoutMs: 1_000, maxAttempts: 1 });
    try {
      const cut = candidate('stall', 'stall-cut', STALL, viaProxy);
      await waitFor('the proxied candidate to lead', () => cut.elector.isLeader);
      const history = await historyOf('stall');
      const other = candidate('stall', 'stall-other', STALL);
      await waitFor('the other to see it lead', () => other.elector.leader === cut.identity);
      await waitFor('two renewals through the proxy', () => history.versions.length >= 3, 15_000);

      const stalledAt = performance.now();
      proxy.stallOpenConnections();
      proxy.refuseNew(true);
      const abortedAt = await waitFor('the cut-off leader to step down', () => cut.abortedAt, 30_000);
      t.diagnostic(
        `step-down ${(abortedAt - stalledAt).toFixed(0)} ms after the stall (renewDeadline ${STALL.renewDeadlineMs} ms)`,
      );
      assert.equal(cut.elector.isLeader, false);
      assert.ok(cut.leadershipSignal?.aborted);
      assert.ok(cut.stoppedAt !== undefined, 'onStoppedLeading ran');

      const ledAt = await waitFor('the other to take over', () => other.ledAt, 30_000);
      t.diagnostic(`take-over ${(ledAt - stalledAt).toFixed(0)} ms after the stall`);
      // Order: the cut-off leader's work ended, and its leadership, before the other began.
      assert.ok(abortedAt < ledAt, 'the old leader stepped down before the new one started');
      assert.ok(cut.stoppedAt < ledAt, 'onStoppedLeading ran before the new onStartedLeading');
      await history.reach(other.identity);
      assert.deepEqual(history.holders(), [cut.identity, other.identity]);
      // Fencing: the step-down came before the lease could run out after the last renewal that got
      // through, so nobody could take over while it still led; and the other waited for that.
      const last = history.lastHeldBy(cut.identity);
      assert.ok(last?.renewedAtEpochMs !== undefined);
      const expiresAt = last.renewedAtEpochMs + last.leaseDurationMs;
      assert.ok(
        (cut.abortedAtEpochMs ?? Number.POSITIVE_INFINITY) < expiresAt,
        `stepped down ${(cut.abortedAtEpochMs ?? 0) - last.renewedAtEpochMs} ms after the last renewal, lease ${last.leaseDurationMs} ms`,
      );
      assert.ok((other.ledAtEpochMs ?? 0) >= expiresAt, 'the other waited for the lease to run out');
      assert.ok(cut.warnings.includes('stopped leading'), cut.warnings.join('; '));
      assert.ok(
        cut.warnings.some((w) => w.includes('renew')),
        `failed renewals are logged: ${cut.warnings.join('; ')}`,
      );

      // Back online, the old leader follows the new one instead of fighting it; run() never rejected.
      proxy.refuseNew(false);
      await waitFor('the cut-off candidate to see the new leader', () => cut.elector.leader === other.identity);
      assert.equal(cut.elector.isLeader, false);
      assert.equal((await leaseOf('stall')).spec?.holderIdentity, other.identity);
      await Promise.all([cut.shutdown(), other.shutdown()]);
    } finally {
      await Promise.all([...candidates].map((running) => running.shutdown()));
      await viaProxy.close();
      await proxy.close();
    }
  });
});
