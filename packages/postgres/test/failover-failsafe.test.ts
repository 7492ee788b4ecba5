/**
 * The failsafe mode (on by default, `spec.ha.failsafeMode`), end to end with real PostgreSQL and the
 * default HA timings (lease 15 s, renew deadline 10 s, retry 2 s), under write load through
 * `<name>-primary` and a watcher that tries a write on every instance directly every 50 ms:
 * - the real kube-apiserver stopped for 120 s: the primary keeps taking writes (every replica
 *   vouches for it), nobody is promoted, and the Lease is renewed once the API server is back;
 * - the primary cut off from the API server (its node's proxy) and from one replica (that agent
 *   stopped with SIGSTOP): not every member vouches, so it fences and the other replica takes over;
 * - the mode turned off: a stopped API server stops the primary at its renew deadline, as before.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import { PeerClient } from '../src/agent/peers/peer-client.js';
import { type FailsafeAnswer, PEER_FAILSAFE_PATH } from '../src/contract/index.js';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseOf,
  nodeOf,
  PACED_WRITES,
  podsOf,
  SequenceWriter,
  SplitBrainWatcher,
  sql,
  startFailoverEnv,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';
import { instanceProcesses } from './support/instance-processes.js';
import { peerIdentityOf } from './support/peer-identity.js';

const CLUSTER = 'safe';
const OUTAGE_MS = 120_000;
const LEASE_MS = 15_000;

type Event = { reason?: string; note?: string; regarding?: { name?: string } };

describe('failsafe mode: API-server outages', { timeout: 30 * 60_000 }, () => {
  let env: FailoverEnv;
  let password: string;
  let writer: SequenceWriter;
  let watcher: SplitBrainWatcher;
  const ipOf = new Map<string, string>();

  const events = async () =>
    ((await env.client.resource('events.k8s.io/v1', 'Event').list({ namespace: 'default' })).items as Event[]).filter(
      (e) => e.regarding?.name === CLUSTER,
    );
  const agentLog = (pod: string) => {
    const container = nodeOf(env.cp, pod)
      .containers()
      .find((c) => c.pod === pod && !c.init);
    return container ? readFileSync(container.logFile, 'utf8') : '';
  };
  // The agent alone (the keeper's child), not the keeper: a stalled agent cannot vouch, while
  // its keeper and postgres run on, as when only the agent's event loop is stuck.
  const agentPid = async (pod: string) =>
    (await instanceProcesses(env.cp, pod, ipOf.get(pod) as string, password)).agent;
  const startedAt = (pod: string) =>
    sql<{ t: string }>(ipOf.get(pod) as string, password, 'SELECT pg_postmaster_start_time()::text AS t').then(
      ([row]) => row?.t,
    );
  /** What an agent answers a made-up primary: its refusal says whether it has the failsafe mode on. */
  // Asked as a peer: the peer API takes only the cluster's peer certificate (mutual TLS).
  const failsafeAnswer = async (pod: string): Promise<FailsafeAnswer> => {
    // Asked as the made-up primary itself: a member may ask only for itself.
    const peers = new PeerClient();
    peers.setTls(await peerIdentityOf(env.client, CLUSTER, 'nobody-at-all'));
    try {
      const response = await peers.call({ name: pod, ip: ipOf.get(pod) as string }, PEER_FAILSAFE_PATH, {
        method: 'POST',
        body: { leader: 'nobody-at-all' },
        signal: AbortSignal.timeout(5_000),
      });
      return response.json as FailsafeAnswer;
    } finally {
      peers.close();
    }
  };
  const acceptedBy = (pod: string, from: number, to = Number.POSITIVE_INFINITY) =>
    watcher.accepted.filter((a) => a.pod === pod && a.start >= from && a.end <= to);

  before(async () => {
    env = await startFailoverEnv({ apiProxy: true });
    env.startOperator();
    await clusters(env.client).create(failoverCluster(CLUSTER, 3));
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 3);
    for (const pod of pods) ipOf.set(pod.metadata?.name ?? '', pod.status?.podIP ?? '');
    password = await superuserPassword(env.client, CLUSTER);
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE brain (pod text, at timestamptz DEFAULT now())');
    writer = new SequenceWriter(env.cp, CLUSTER, password, PACED_WRITES);
    writer.start();
    watcher = new SplitBrainWatcher(
      [...ipOf].map(([name, ip]) => ({ name, ip })),
      password,
    );
    watcher.start();
  });

  after(async () => {
    try {
      await writer?.stop();
      await watcher?.stop();
      if (watcher) {
        assert.deepEqual(watcher.blindSpans(), [], 'the watcher probed every instance throughout');
        assert.deepEqual(watcher.violations(), [], 'never two instances taking writes at once');
      }
    } finally {
      await env?.stop();
    }
  });

  it('keeps the primary taking writes through a 120 s kube-apiserver outage; no promotion; the Lease is renewed after', async (t) => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 3);
    const before = await leaseOf(env.client, CLUSTER);
    const postmasterStarted = await startedAt(primary);
    await waitFor('writes to flow', () => writer.acks.length > 20, 60_000, 50);
    const eventsBefore = await events();
    const logBefore = new Map([...ipOf.keys()].map((pod) => [pod, agentLog(pod).length]));

    // The last renewal this test can see; a later one before the kill only moves the real expiry later.
    const renewTime = (await leaseOf(env.client, CLUSTER)).spec?.renewTime;
    assert.ok(renewTime, 'the Lease records its renewal');
    const downAt = performance.now();
    await env.cp.killComponent('kube-apiserver', 'SIGKILL');
    await sleep(OUTAGE_MS);
    const upAt = performance.now();
    const upAtEpochMs = Date.now();
    await env.cp.startComponent('kube-apiserver');

    // Writes went on through the whole outage, on the primary only, directly and through the Service.
    const during = acceptedBy(primary, downAt, upAt);
    const gaps = during.slice(1).map((a, i) => a.start - (during[i]?.end ?? a.start));
    t.diagnostic(
      `${during.length} direct writes on ${primary} during the outage, longest gap ${Math.round(Math.max(0, ...gaps))} ms; ${writer.acks.filter((a) => a.at > downAt && a.at < upAt).length} through the Service`,
    );
    assert.ok(acceptedBy(primary, upAt - 10_000, upAt).length > 0, 'still taking writes at the end of the outage');
    assert.ok(Math.max(...gaps) < LEASE_MS, 'never stopped long enough for a fence and a restart');
    assert.ok(
      writer.acks.some((a) => a.at > upAt - 10_000 && a.at < upAt),
      'the client kept writing',
    );
    for (const pod of ipOf.keys())
      if (pod !== primary) assert.equal(acceptedBy(pod, downAt).length, 0, `${pod} took no write`);
    assert.equal(await startedAt(primary), postmasterStarted, 'postgres was never stopped');

    const renewed = await waitFor(
      'the Lease to be renewed by the same holder',
      async () => {
        const lease = await leaseOf(env.client, CLUSTER).catch(() => undefined);
        const renewTime = (lease?.spec as { renewTime?: string } | undefined)?.renewTime;
        return lease && renewTime && Date.parse(renewTime) >= upAtEpochMs - 1_000 ? lease : undefined;
      },
      60_000,
      250,
    );
    assert.equal(renewed.spec?.holderIdentity, primary, 'no promotion');
    const transitions = (l: typeof before) => (l.spec as { leaseTransitions?: number }).leaseTransitions;
    assert.equal(transitions(renewed), transitions(before));
    const ended = await waitFor(
      'the FailsafeEnded Event',
      async () => (await events()).find((e) => e.reason === 'FailsafeEnded'),
      60_000,
      500,
    );
    t.diagnostic(`Event: ${ended.note}`);
    assert.match(ended.note ?? '', new RegExp(`^${primary} renewed the leader Lease again after`));
    const newEvents = (await events()).filter((e) => !eventsBefore.includes(e));
    assert.deepEqual(
      newEvents.filter((e) => e.reason === 'Fenced' || e.reason === 'Promoted'),
      [],
      'nobody fenced or was promoted',
    );
    assert.match(
      agentLog(primary),
      /FAILSAFE: the API server cannot be reached; every member vouched for this primary/,
    );
    for (const pod of ipOf.keys()) {
      if (pod === primary) continue;
      const since = agentLog(pod).slice(logBefore.get(pod));
      assert.match(since, /failsafe: vouched for the primary/, `${pod} vouched`);
      // Its view of the Lease ran out during the outage: only its vouch kept it from ranking.
      assert.doesNotMatch(since, /failover decision/, `${pod} never considered a failover`);
    }
    await waitHealthy(env.client, CLUSTER, 3);
  });

  it('fences a primary cut off from the API server and from one replica; the other replica takes over', async (t) => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 3);
    const [stalled, other] = [...ipOf.keys()].filter((p) => p !== primary).sort() as [string, string];
    const proxy = nodeOf(env.cp, primary).apiProxy;
    assert.ok(proxy);
    const stalledPid = await agentPid(stalled);
    const cutAt = performance.now();
    process.kill(stalledPid, 'SIGSTOP');
    let holder = primary;
    let takenAt = 0;
    try {
      proxy.refuseNew(true);
      proxy.stallOpenConnections();
      await waitFor(
        'a replica to take the Lease',
        async () => {
          holder = (await leaseOf(env.client, CLUSTER)).spec?.holderIdentity ?? '';
          takenAt = performance.now();
          return holder !== primary;
        },
        120_000,
        100,
      );
      await waitFor('a write on the new primary', () => acceptedBy(holder, cutAt).length > 0, 60_000, 50);
    } finally {
      proxy.refuseNew(false);
      proxy.dropAll();
      try {
        process.kill(stalledPid, 'SIGCONT');
      } catch {
        // Its liveness probe may have had it restarted: nothing to resume.
      }
    }
    assert.equal(holder, other, 'the replica that could be asked took over');
    const lastOld = acceptedBy(primary, 0).at(-1);
    const firstNew = acceptedBy(holder, cutAt)[0];
    assert.ok(lastOld && firstNew);
    t.diagnostic(
      `last write on the cut-off primary ${((lastOld.end - cutAt) / 1000).toFixed(1)} s after the cut; Lease taken ${((takenAt - cutAt) / 1000).toFixed(1)} s after; first write on ${holder} ${((firstNew.start - cutAt) / 1000).toFixed(1)} s after`,
    );
    assert.ok(lastOld.end < firstNew.start, 'the old primary stopped before the new one took writes');
    assert.ok(lastOld.end < takenAt, 'the old primary stopped before its Lease was taken over');
    const log = agentLog(primary);
    assert.match(log, /not every member vouched for this primary/);
    assert.match(log, new RegExp(`${stalled} did not answer`));
    assert.match(log, /FENCING/);
    await waitHealthy(env.client, CLUSTER, 3, 240_000);
  });

  it('with the failsafe mode off, a kube-apiserver outage stops the primary at its renew deadline, as before', async (t) => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 3);
    await clusters(env.client).patch(
      CLUSTER,
      { spec: { ha: { failsafeMode: false } } },
      { namespace: 'default', type: 'merge' },
    );
    for (const pod of ipOf.keys())
      await waitFor(
        `${pod} to see the failsafe mode off`,
        async () => (await failsafeAnswer(pod)).reason === 'failsafe mode is off',
        30_000,
        250,
      );
    // The last renewal this test can see; a later one before the kill only moves the real expiry later.
    const renewTime = (await leaseOf(env.client, CLUSTER)).spec?.renewTime;
    assert.ok(renewTime, 'the Lease records its renewal');
    const downAt = performance.now();
    await env.cp.killComponent('kube-apiserver', 'SIGKILL');
    let last: { serverAtMs: number; end: number } | undefined;
    let upAt: number;
    try {
      // The last write before the fence: once the API server is back, the same instance renews its
      // own Lease and takes writes again, and those say nothing about the fence.
      last = await waitFor(
        'the primary to stop taking writes',
        () => {
          const latest = acceptedBy(primary, downAt).at(-1);
          return latest && performance.now() - latest.end > 3_000 ? latest : undefined;
        },
        60_000,
        250,
      );
    } finally {
      upAt = performance.now();
      await env.cp.startComponent('kube-apiserver');
    }
    const expiresAtMs = Date.parse(renewTime) + LEASE_MS;
    t.diagnostic(
      `last write on ${primary} acknowledged ${((last.end - downAt) / 1000).toFixed(1)} s after the API server stopped (this process's clock), inserted ${((expiresAtMs - last.serverAtMs) / 1000).toFixed(1)} s before the Lease could expire (the server's)`,
    );
    // Fencing comes before the Lease could run out for anyone: the guarantee, not a speed. The
    // server's own clock, since an acknowledgement read late by a loaded test process says nothing
    // about when postgres committed.
    assert.ok(last.serverAtMs < expiresAtMs, 'stopped before its Lease could expire');
    const resumed = acceptedBy(primary, last.end + 1)[0];
    assert.ok(!resumed || resumed.start >= upAt, 'took no write again before the API server was back');
    assert.match(
      agentLog(primary),
      /"reason":"the leader Lease could not be renewed before the renew deadline \(failsafe: failsafe mode is off\)"/,
    );
    await waitHealthy(env.client, CLUSTER, 3, 240_000);
    await clusters(env.client).patch(
      CLUSTER,
      { spec: { ha: { failsafeMode: true } } },
      { namespace: 'default', type: 'merge' },
    );
    assert.ok((await podsOf(env.client, CLUSTER)).length === 3);
  });
});
