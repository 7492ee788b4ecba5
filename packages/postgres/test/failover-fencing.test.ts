/**
 * Fencing, candidate choice and the lag limit, with short HA settings (lease 6 s, renew deadline
 * 4 s, retry 1 s). Each process node reaches the API server through its own proxy, so the test can
 * cut the primary's host alone off the API server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import { lsnDistance, parseLsn } from '../src/agent/plan/lsn.js';
import { ANNOTATION } from '../src/index.js';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseOf,
  nodeOf,
  PACED_WRITES,
  podsOf,
  reportOf,
  SequenceWriter,
  SplitBrainWatcher,
  sql,
  startFailoverEnv,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';
import { dataDirState, REWOUND_DECISION, rejoinEvents, volumeDirOf } from './support/rejoin-checks.js';

const HA = { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1 };

describe('fencing, candidate choice and the lag limit', { timeout: 30 * 60_000 }, () => {
  let env: FailoverEnv;

  const setUp = async (name: string, replicas: number, ha: Record<string, unknown> = HA) => {
    await clusters(env.client).create(failoverCluster(name, replicas, ha));
    const { primary, pods } = await waitHealthy(env.client, name, replicas);
    const ipOf = new Map(pods.map((p) => [p.metadata?.name ?? '', p.status?.podIP ?? '']));
    const password = await superuserPassword(env.client, name);
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE brain (pod text, at timestamptz DEFAULT now())');
    return { primary, ipOf, password };
  };
  const tearDown = async (name: string) => {
    await clusters(env.client).delete(name, { namespace: 'default' });
    await waitFor(`${name}'s Pods to be gone`, async () => (await podsOf(env.client, name)).length === 0, 120_000, 500);
  };
  const reportFor = async (cluster: string, pod: string) =>
    reportOf((await podsOf(env.client, cluster)).find((p) => p.metadata?.name === pod));

  before(async () => {
    env = await startFailoverEnv({ apiProxy: true });
    env.startOperator();
  });
  after(async () => {
    await env?.stop();
  });

  it('a primary cut off from the API server stops taking writes before its Lease can expire; a replica takes over; it rejoins', async () => {
    const name = 'fence';
    // Without the failsafe mode, which would keep a primary that its replicas vouch for (failover-failsafe.test.ts).
    const { primary, ipOf, password } = await setUp(name, 3, { ...HA, failsafeMode: false });
    const writer = new SequenceWriter(env.cp, name, password, PACED_WRITES);
    const watcher = new SplitBrainWatcher(
      [...ipOf].map(([pod, ip]) => ({ name: pod, ip })),
      password,
    );
    writer.start();
    watcher.start();
    try {
      const volume = await volumeDirOf(env.client, primary);
      const dirBefore = await dataDirState(volume);
      await waitFor('writes to flow', () => writer.acks.length > 20, 60_000, 50);
      const proxy = nodeOf(env.cp, primary).apiProxy;
      assert.ok(proxy);
      const cutAt = performance.now();
      proxy.refuseNew(true);
      proxy.stallOpenConnections();
      let takenAt = 0;
      let holder = primary;
      try {
        await waitFor(
          'a replica to take the Lease',
          async () => {
            holder = (await leaseOf(env.client, name)).spec?.holderIdentity ?? '';
            takenAt = performance.now();
            return holder !== primary;
          },
          60_000,
          50,
        );
        await waitFor(
          'a write on the new primary',
          () => writer.acks.some((a) => a.host === ipOf.get(holder)),
          60_000,
          50,
        );
      } finally {
        proxy.refuseNew(false);
        proxy.dropAll();
      }
      const lastOld = watcher.accepted.filter((a) => a.pod === primary).at(-1);
      const firstNew = watcher.accepted.find((a) => a.pod === holder && a.start > cutAt);
      assert.ok(lastOld && firstNew);
      const fencedAfter = lastOld.end - cutAt;
      console.log(
        `# fencing (lease 6 s, renew deadline 4 s): last write accepted by the cut-off primary ${(fencedAfter / 1000).toFixed(2)} s after the cut; Lease taken by ${holder} ${((takenAt - cutAt) / 1000).toFixed(2)} s after; first write on it ${((firstNew.start - cutAt) / 1000).toFixed(2)} s after`,
      );
      assert.ok(lastOld.end < firstNew.start, 'the old primary stopped before the new one took writes');
      assert.ok(lastOld.end < takenAt, 'the old primary stopped before its Lease was taken over');
      const report = await waitFor(
        `${primary} to rejoin as a replica once it reaches the API server again`,
        async () => {
          const r = await reportFor(name, primary);
          return r?.role === 'replica' && r.ready ? r : undefined;
        },
        120_000,
        250,
      );
      console.log(`# fenced primary rejoined: ${report.rejoin}`);
      // pg_rewind succeeded in place: not "pg_rewind failed", then a re-clone.
      assert.match(report.rejoin ?? '', REWOUND_DECISION);
      const dirAfter = await dataDirState(volume);
      assert.equal(dirAfter.inode, dirBefore.inode, 'the same data directory, rewound in place');
      assert.equal(dirAfter.setAsideInode, dirBefore.setAsideInode, 'no data directory was set aside');
      const events = await waitFor('the Rewound Event', async () => {
        const e = await rejoinEvents(env.client, name, primary);
        return e.rewound.length > 0 ? e : undefined;
      });
      assert.deepEqual([...events.failed, ...events.recloned], [], 'no RewindFailed or Recloned Event');
      await watcher.stop();
      assert.deepEqual(watcher.blindSpans(), [], 'the watcher probed every instance throughout');
      assert.deepEqual(watcher.violations(), []);
    } finally {
      await writer.stop();
      await watcher.stop();
    }
    await tearDown(name);
  });

  it('promotes the more advanced replica (the other one paused replay), with the operator down; an operator restart changes nothing', async () => {
    const name = 'choice';
    const { primary, ipOf, password } = await setUp(name, 3);
    const [paused, other] = [...ipOf.keys()].filter((p) => p !== primary).sort() as [string, string];
    await sql(ipOf.get(paused) as string, password, 'SELECT pg_wal_replay_pause()');
    await sql(ipOf.get(primary) as string, password, 'INSERT INTO seq SELECT generate_series(1, 1000)');
    await waitFor(
      `${other} to replay the rows`,
      async () => (await sql(ipOf.get(other) as string, password, 'SELECT 1 FROM seq WHERE n = 1000')).length === 1,
      30_000,
      100,
    );
    await env.stopOperator();
    const node = nodeOf(env.cp, primary);
    try {
      await node.crash();
      const holder = await waitFor(
        'a new Lease holder',
        async () => {
          const h = (await leaseOf(env.client, name)).spec?.holderIdentity;
          return h && h !== primary ? h : undefined;
        },
        60_000,
        100,
      );
      assert.equal(holder, other, 'the replica that had replayed more was chosen');
      type Event = { reason?: string; note?: string };
      const events = async () =>
        (await env.client.resource('events.k8s.io/v1', 'Event').list({ namespace: 'default' })).items as Event[];
      // The winner's Event names whom it outranked and why. The loser's own "waiting" Event is not
      // asserted: when the winner takes the Lease first, the loser never has to decide.
      const promoted = await waitFor(
        `${other}'s Promoted Event`,
        async () => (await events()).find((e) => e.reason === 'Promoted' && e.note?.startsWith(other)),
        30_000,
        200,
      );
      console.log(`# candidate choice: ${promoted.note}`);
      assert.match(promoted.note ?? '', /took over the leader Lease/);
      const position = (pod: string) =>
        new RegExp(`${pod === other ? '\\(' : `ahead of ${pod} `}received (\\S+), replayed (\\S+?)[,)]`);
      const [, otherReceived, otherReplayed] = (promoted.note ?? '').match(position(other)) ?? [];
      const [, pausedReceived, pausedReplayed] = (promoted.note ?? '').match(position(paused)) ?? [];
      assert.ok(otherReplayed && pausedReplayed, `both positions in "${promoted.note}"`);
      assert.equal(pausedReceived, otherReceived, 'a paused replica still receives WAL');
      assert.ok(lsnDistance(pausedReplayed, otherReplayed) > 0, `${other} had replayed more than ${paused}`);
      await sql(ipOf.get(paused) as string, password, 'SELECT pg_wal_replay_resume()');
      await node.recover();
      await waitHealthy(env.client, name, 3);
    } finally {
      // Later tests need the operator and every node, whatever happened here.
      env.startOperator();
      await node.recover();
    }
    await sleep(10_000);
    assert.equal(
      (await leaseOf(env.client, name)).spec?.holderIdentity,
      other,
      'an operator restart causes no failover',
    );
    await tearDown(name);
  });

  it('never promotes a replica beyond maximumLagOnFailover: the cluster waits and says why', async () => {
    const name = 'lag';
    const { primary, ipOf, password } = await setUp(name, 2, { ...HA, maximumLagOnFailover: 1024 });
    const replica = [...ipOf.keys()].find((p) => p !== primary) as string;
    // Cut the replica's WAL receiver (postgresql.auto.conf wins over the agent's settings), then write.
    await sql(ipOf.get(replica) as string, password, "ALTER SYSTEM SET primary_conninfo = ''");
    await sql(ipOf.get(replica) as string, password, 'SELECT pg_reload_conf()');
    await waitFor(
      'the WAL receiver to stop',
      async () => (await sql(ipOf.get(replica) as string, password, 'SELECT 1 FROM pg_stat_wal_receiver')).length === 0,
      30_000,
      200,
    );
    await sql(ipOf.get(primary) as string, password, 'INSERT INTO seq SELECT generate_series(1, 5000)');
    const [written] = await sql<{ lsn: string }>(
      ipOf.get(primary) as string,
      password,
      'SELECT pg_current_wal_lsn()::text AS lsn',
    );
    // The primary writes its LSN into its report every 3 s: the replica judges its lag from that.
    await waitFor(
      "the primary's report to carry its new LSN",
      async () => (parseLsn((await reportFor(name, primary))?.receivedLsn) ?? 0) >= (parseLsn(written?.lsn) ?? 1),
      30_000,
      200,
    );
    const node = nodeOf(env.cp, primary);
    await node.crash();
    const report = await waitFor(
      'the replica to say why it does not take over',
      async () => {
        const r = await reportFor(name, replica);
        return r?.failover?.includes('no replica within lag limit') ? r : undefined;
      },
      60_000,
      250,
    );
    console.log(`# lag limit: ${replica} reports "${report.failover}"; its readiness message: "${report.message}"`);
    assert.match(
      report.message ?? '',
      /no primary \(the leader Lease of .* expired\): waiting: no replica within lag limit/,
    );
    assert.match(report.failover ?? '', new RegExp(`${replica} lags [0-9.]+ (kiB|MiB) > 1 kiB`));
    await sleep(6_000);
    assert.equal((await leaseOf(env.client, name)).spec?.holderIdentity, primary, 'nobody took over');
    await waitFor(
      'an Event that says why',
      async () =>
        (
          (await env.client.resource('events.k8s.io/v1', 'Event').list({ namespace: 'default' })).items as {
            reason?: string;
            note?: string;
          }[]
        ).some((e) => e.reason === 'FailoverWaiting' && e.note?.includes('no replica within lag limit')),
      30_000,
      200,
    );
    // The primary comes back and leads again; the replica streams again.
    await node.recover();
    await sql(ipOf.get(replica) as string, password, 'ALTER SYSTEM RESET primary_conninfo');
    await sql(ipOf.get(replica) as string, password, 'SELECT pg_reload_conf()');
    const healthy = await waitHealthy(env.client, name, 2);
    assert.equal(healthy.primary, primary);
    const lease = await leaseOf(env.client, name);
    assert.equal(lease.metadata?.annotations?.[ANNOTATION.syncStandbys], undefined);
    await tearDown(name);
  });
});
