/**
 * Leader election against a real API server: one leader at a time, hand-over within 2 s after a
 * release (in-process and on SIGTERM), take-over after a SIGKILL once the lease runs out, and a
 * leader that cannot renew stepping down before anyone else may take over.
 */
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { KubeClient } from '@kanri/client';
import { type ControlPlane, isProcessAlive, startControlPlane, startFaultProxy } from '@kanri/testenv';
import { type LeaderElectionOptions, LeaderElector } from '../src/leader/leader-election.js';
import type { LeaderChildConfig } from './fixtures/leader-child.js';

const NAMESPACE = 'leader-election';
const CHILD_SCRIPT = fileURLToPath(new URL('./fixtures/leader-child.js', import.meta.url));
const MICROTIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

interface Timings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}
const FAST: Timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
/**
 * Candidates that poll only every 5–11 s and whose lease lasts 15 s: a hand-over within 2 s of the
 * leader stopping can only come from the release being seen through the watch.
 */
const SLOW_POLL: Timings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 5_000 };

async function waitFor<T>(what: string, probe: () => T, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value as NonNullable<T>;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** An in-process candidate that records when (performance.now()) each callback ran. */
class Candidate {
  readonly identity: string;
  readonly stop = new AbortController();
  readonly elector: LeaderElector;
  readonly done: Promise<void>;
  readonly newLeaders: string[] = [];
  readonly warnings: string[] = [];
  ledAt: number | undefined;
  ledAtEpochMs: number | undefined;
  leadershipSignal: AbortSignal | undefined;
  abortedAt: number | undefined;
  stoppedAt: number | undefined;

  constructor(
    client: KubeClient,
    name: string,
    identity: string,
    timings: Timings,
    adopt?: LeaderElectionOptions['adopt'],
  ) {
    this.identity = identity;
    this.elector = new LeaderElector({
      client,
      namespace: NAMESPACE,
      name,
      identity,
      ...timings,
      ...(adopt ? { adopt } : {}),
      onStartedLeading: (signal) => {
        this.ledAt = performance.now();
        this.ledAtEpochMs = Date.now();
        this.leadershipSignal = signal;
        signal.addEventListener(
          'abort',
          () => {
            this.abortedAt = performance.now();
          },
          { once: true },
        );
      },
      onStoppedLeading: () => {
        this.stoppedAt = performance.now();
      },
      onNewLeader: (leader) => this.newLeaders.push(leader),
      logger: { info() {}, warn: (_obj, msg) => this.warnings.push(msg ?? '') },
    });
    this.done = this.elector.run(this.stop.signal);
  }

  async shutdown(): Promise<void> {
    this.stop.abort();
    await this.done;
  }
}

/** A candidate in a child process (fixtures/leader-child.ts), so it can be SIGKILLed or sent SIGTERM. */
class ChildCandidate {
  readonly child: ChildProcessByStdio<Writable, Readable, null>;
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exitedAt: number | undefined;

  constructor(config: LeaderChildConfig) {
    this.child = spawn(process.execPath, ['--enable-source-maps', CHILD_SCRIPT, JSON.stringify(config)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => this.lines.push(line));
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exitedAt = performance.now();
        resolve({ code, signal });
      }),
    );
  }

  get pid(): number {
    const pid = this.child.pid;
    if (pid === undefined) throw new Error('the leader child did not start');
    return pid;
  }

  line(prefix: string): string | undefined {
    return this.lines.find((line) => line.startsWith(prefix));
  }
}

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
  ): Candidate => {
    const started = new Candidate(via, name, identity, timings, adopt);
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
    await client?.close();
    await cp?.stop();
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
      const now = new Date().toISOString().replace('Z', '000Z');
      return { holderIdentity, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 3 };
    };
    const sentAtMs = performance.now();
    const written = await leases.create({ metadata: { name: 'adopted', namespace: NAMESPACE }, spec: spec('adopter') });
    const adopter = candidate('adopted', 'adopter', SLOW_POLL, client, { lease: written, sentAtMs });
    await waitFor('the adopter to lead', () => adopter.ledAt);
    // Renewals come every 5 s (SLOW_POLL): a campaign would have read and written the Lease already.
    const right = await leaseOf('adopted');
    assert.equal(right.metadata?.resourceVersion, written.metadata?.resourceVersion, 'no write before leading');
    assert.equal(right.spec?.leaseTransitions, 3);
    let renewed = right;
    for (
      const until = performance.now() + 15_000;
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

  it("hands over within 2 s when the leader is aborted: it releases, and the follower's watch sees it", async (t) => {
    const leader = candidate('handover', 'handover-leader', SLOW_POLL);
    await waitFor('the first candidate to lead', () => leader.elector.isLeader);
    const follower = candidate('handover', 'handover-follower', SLOW_POLL);
    await waitFor('the follower to see the leader', () => follower.elector.leader === leader.identity);
    // The follower's first poll is behind it and its next is at least 5 s away; its watch is open.
    await sleep(1_000);
    const transitions = (await leaseOf('handover')).spec?.leaseTransitions ?? -1;

    const stoppedAt = performance.now();
    leader.stop.abort();
    await leader.done;
    const resolvedIn = performance.now() - stoppedAt;
    const ledAt = await waitFor('the follower to lead', () => follower.ledAt, 10_000);
    const took = ledAt - stoppedAt;
    t.diagnostic(`hand-over after abort: ${took.toFixed(0)} ms (run() resolved after ${resolvedIn.toFixed(0)} ms)`);
    assert.ok(took < 2_000, `the follower led ${took.toFixed(0)} ms after the leader was aborted`);

    assert.equal(leader.elector.isLeader, false);
    assert.ok(leader.leadershipSignal?.aborted);
    assert.ok(leader.abortedAt !== undefined && leader.abortedAt <= ledAt, "the old leader's work was stopped first");
    assert.ok(leader.stoppedAt !== undefined, 'onStoppedLeading ran');
    const lease = await leaseOf('handover');
    assert.equal(lease.spec?.holderIdentity, follower.identity);
    assert.equal(lease.spec?.leaseTransitions, transitions + 1);
    assert.equal(lease.spec?.leaseDurationSeconds, 15);
    await follower.shutdown();
    const released = await leaseOf('handover');
    assert.equal(released.spec?.holderIdentity ?? '', '', 'a stopped leader leaves the Lease free');
    assert.equal(released.spec?.leaseDurationSeconds, 1);
  });

  it('hands over within 2 s when a leader process gets SIGTERM', async (t) => {
    const child = childCandidate('sigterm', 'sigterm-child', SLOW_POLL);
    await waitFor('the child to lead', () => child.line('LEADING'), 20_000);
    const parent = candidate('sigterm', 'sigterm-parent', SLOW_POLL);
    await waitFor('the parent to see the child lead', () => parent.elector.leader === 'sigterm-child');
    await sleep(1_000);

    const terminatedAt = performance.now();
    process.kill(child.pid, 'SIGTERM');
    const ledAt = await waitFor('the parent to lead', () => parent.ledAt, 10_000);
    const took = ledAt - terminatedAt;
    t.diagnostic(`hand-over after SIGTERM: ${took.toFixed(0)} ms`);
    assert.ok(took < 2_000, `the parent led ${took.toFixed(0)} ms after SIGTERM`);

    const { code } = await child.exited;
    assert.equal(code, 0);
    assert.ok(child.line('DONE'), 'the child finished run() normally');
    const abortedEpochMs = Number(child.line('ABORTED')?.split(' ')[1]);
    assert.ok(
      abortedEpochMs <= (parent.ledAtEpochMs ?? 0),
      "the child's leader signal aborted before the parent started leading",
    );
    assert.equal((await leaseOf('sigterm')).spec?.holderIdentity, parent.identity);
    await parent.shutdown();
  });

  it('takes over from a SIGKILLed leader process within leaseDuration + retryPeriod, never overlapping', async (t) => {
    const child = childCandidate('crash', 'crash-child', FAST);
    await waitFor('the child to lead', () => child.line('LEADING'), 20_000);
    const parent = candidate('crash', 'crash-parent', FAST);
    await waitFor('the parent to see the child lead', () => parent.elector.leader === 'crash-child');
    await sleep(1_000);
    assert.equal(parent.elector.isLeader, false, 'no take-over while the child renews');
    const transitions = (await leaseOf('crash')).spec?.leaseTransitions ?? -1;

    const killedAt = performance.now();
    process.kill(child.pid, 'SIGKILL');
    const ledAt = await waitFor('the parent to lead', () => parent.ledAt, 15_000);
    const took = ledAt - killedAt;
    t.diagnostic(`take-over after SIGKILL: ${took.toFixed(0)} ms (lease ${FAST.leaseDurationMs} ms)`);
    assert.ok(took < FAST.leaseDurationMs + FAST.retryPeriodMs + 1_000, `took ${took.toFixed(0)} ms`);
    // The child's last renewal came at most a retry period and a round trip before the kill, so a
    // parent that waits for the lease to run out cannot lead this early.
    assert.ok(took > FAST.leaseDurationMs - FAST.retryPeriodMs - 1_000, `took only ${took.toFixed(0)} ms`);

    const { signal } = await child.exited;
    assert.equal(signal, 'SIGKILL');
    assert.ok(child.exitedAt !== undefined && child.exitedAt < ledAt, 'the child was dead when the parent led');
    assert.equal(isProcessAlive(child.pid), false);
    const lease = await leaseOf('crash');
    assert.equal(lease.spec?.holderIdentity, parent.identity);
    assert.equal(lease.spec?.leaseTransitions, transitions + 1);
    await parent.shutdown();
  });

  it('steps down within renewDeadline when renewals stall, and survives the API being unreachable', async (t) => {
    const proxy = await startFaultProxy(cp.server);
    // The default 30 s request timeout would outlast the renew deadline; the elector bounds each try itself too.
    const viaProxy = new KubeClient({ ...client.connection, server: proxy.url }, { timeoutMs: 1_000, maxAttempts: 1 });
    try {
      const cut = candidate('stall', 'stall-cut', FAST, viaProxy);
      await waitFor('the proxied candidate to lead', () => cut.elector.isLeader);
      const other = candidate('stall', 'stall-other', FAST);
      await waitFor('the other to see it lead', () => other.elector.leader === cut.identity);
      await sleep(1_000);

      const stalledAt = performance.now();
      proxy.stallOpenConnections();
      proxy.refuseNew(true);
      const abortedAt = await waitFor('the cut-off leader to step down', () => cut.abortedAt, 10_000);
      const stepDown = abortedAt - stalledAt;
      t.diagnostic(`step-down ${stepDown.toFixed(0)} ms after the stall (renewDeadline ${FAST.renewDeadlineMs} ms)`);
      assert.ok(stepDown < FAST.renewDeadlineMs + 500, `stepped down ${stepDown.toFixed(0)} ms after the stall`);
      assert.equal(cut.elector.isLeader, false);
      assert.ok(cut.leadershipSignal?.aborted);
      assert.ok(cut.stoppedAt !== undefined, 'onStoppedLeading ran');

      const ledAt = await waitFor('the other to take over', () => other.ledAt, 10_000);
      t.diagnostic(`take-over ${(ledAt - stalledAt).toFixed(0)} ms after the stall`);
      assert.ok(ledAt > abortedAt, 'the old leader stepped down before the new one started');
      assert.ok(ledAt - stalledAt < FAST.leaseDurationMs + FAST.retryPeriodMs + 1_000);
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
