/**
 * Failover acceptance with the default HA settings (15 s lease): 10 times the primary's host loses
 * power (every process SIGKILLed, the Pod still Running in the API), on process nodes or, with
 * KANRI_FAILOVER_NODES=real, on real nodes (the node powered off). A replica takes over without
 * the operator's help within the README's bound (lease + 2 s; at the client on process nodes, at
 * the database on real nodes, see boundedFigure), a client writing through `<name>-primary`
 * resumes, no acknowledged commit is lost beyond the WAL the failover may give up
 * (`ha.maximumLagOnFailover`), and the old primary, powered on again, rejoins through pg_rewind
 * (its data directory kept, not re-cloned) with data equal to the new primary's. A watcher tries a
 * write on every instance every 50 ms throughout: never do two accept writes at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import { HA_DEFAULTS } from '../src/index.js';
import { asyncLoss, forkOf, lostCommits } from './support/commit-loss.js';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseOf,
  median,
  podAddresses,
  podIP,
  podsOf,
  reportOf,
  SequenceWriter,
  SplitBrainWatcher,
  sql,
  startFailoverEnv,
  superuserPassword,
  WRITER_CONNECT_TIMEOUT_MS,
  waitHealthy,
} from './support/failover-env.js';
import { dataDirState, REWOUND_DECISION, rejoinEvents, volumeDirOf } from './support/rejoin-checks.js';

const CLUSTER = 'rto';
const TRIALS = 10;
const LEASE_SECONDS = HA_DEFAULTS.leaseDurationSeconds;
/**
 * The README's RTO goal, a bound from the Lease timings rather than a speed: the crashed primary
 * renewed its Lease before the crash, so the replicas (which time the Lease from the renewal they
 * saw) find it expired at most `leaseDurationSeconds` after the crash. What follows gets 2 s: the
 * ranking (a peer that does not answer within 1 s is dropped), the Lease write, the promotion, the
 * role label and the client's next lookup and connection. Measured, these take 0.1–0.3 s.
 */
const RTO_BOUND_MS = (LEASE_SECONDS + 2) * 1000;
/**
 * Which figure the RTO bound applies to. On process nodes, the client's: a killed host's address
 * refuses connections at once, so the client's delay is Kanri's. On real nodes a powered-off Pod's
 * address answers nothing, and the client's attempt to it that began just before the promotion
 * runs out the client's own connection timeout before it looks the primary up again (measured in
 * 20 trials: the client's last failed attempt was such a timeout, 71–221 ms before its first
 * write, and the client lagged the database by 0.27–2.25 s). There the bound applies at the
 * database (the watcher's first write on the new primary, as real-nodes.test.ts measures), and the
 * client must follow within one connection timeout of it.
 */
function boundedFigure(nodes: FailoverEnv['nodes']): 'client' | 'database' {
  return nodes === 'process' ? 'client' : 'database';
}
/** Asynchronous replication may lose at most this much WAL in a failover (the promoted replica's lag). */
const MAXIMUM_LAG_BYTES = HA_DEFAULTS.maximumLagOnFailover;

describe('failover with default HA settings: RTO, commits lost (async), no split brain, pg_rewind', {
  timeout: 30 * 60_000,
}, () => {
  let env: FailoverEnv;
  let password: string;
  let writer: SequenceWriter;
  let watcher: SplitBrainWatcher;
  const ipOf = new Map<string, string>();

  before(async () => {
    env = await startFailoverEnv();
    env.startOperator();
    await clusters(env.client).create(failoverCluster(CLUSTER, 3));
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 3);
    for (const pod of pods) ipOf.set(pod.metadata?.name ?? '', pod.status?.podIP ?? '');
    password = await superuserPassword(env.client, CLUSTER);
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE brain (pod text, at timestamptz DEFAULT now())');
    writer = new SequenceWriter(env.cp, CLUSTER, password);
    writer.start();
    watcher = new SplitBrainWatcher(
      [...ipOf].map(([name, ip]) => ({ name, ip })),
      password,
      podAddresses(env.client),
    );
    watcher.start();
  });

  after(async () => {
    await writer?.stop();
    await watcher?.stop();
    await env?.stop();
  });

  it(`a replica takes over from a crashed primary, ${TRIALS} times; the old primary rejoins with pg_rewind`, async () => {
    const rtos: number[] = [];
    const dbRtos: number[] = [];
    const lost: number[] = [];
    const lostWal: number[] = [];
    const lateAcks: number[] = [];
    const rewinds: string[] = [];
    const lostSoFar = new Set<number>();
    for (let trial = 1; trial <= TRIALS; trial++) {
      const { primary, pods } = await waitHealthy(env.client, CLUSTER, 3);
      // A real node's Pods come back from a power loss with new addresses.
      for (const pod of pods) ipOf.set(pod.metadata?.name ?? '', pod.status?.podIP ?? '');
      const oldIP = ipOf.get(primary) as string;
      const volume = await volumeDirOf(env.client, primary);
      const dirBefore = await dataDirState(volume);
      assert.ok(dirBefore.inode !== undefined, `${primary} has a data directory at ${dirBefore.pgdata}`);
      const eventsBefore = await rejoinEvents(env.client, CLUSTER, primary);
      const acked = writer.acks.length;
      await waitFor('writes to flow', () => writer.acks.length > acked + 20, 60_000, 50);
      const node = await env.hostOf(primary);
      const crashedAt = performance.now();
      await node.crash();
      const first = await waitFor(
        'a write acknowledged by a new primary',
        () => writer.acks.find((a) => a.at > crashedAt && a.host !== oldIP),
        120_000,
        20,
      );
      const rto = first.at - crashedAt;
      rtos.push(rto);
      const holder = (await leaseOf(env.client, CLUSTER)).spec?.holderIdentity;
      assert.notEqual(holder, primary);
      assert.equal(ipOf.get(holder ?? ''), first.host, 'the write landed on the Lease holder');
      // Every acknowledged commit counts, those acknowledged while the host went down included.
      const all = [...writer.acks];
      lateAcks.push(all.filter((a) => a.at >= crashedAt && a.host === oldIP).length);
      // Commits lost in earlier trials stay lost: count only this crash's.
      const lostNow = (await lostCommits(first.host, password, all)).filter((a) => !lostSoFar.has(a.n));
      for (const a of lostNow) lostSoFar.add(a.n);
      lost.push(lostNow.length);
      // What asynchronous replication may lose: the crashed primary's WAL past the point where the
      // new primary's timeline forked, and no more than ha.maximumLagOnFailover of it.
      const loss = asyncLoss(lostNow, oldIP, (await forkOf(first.host, password)).lsn, MAXIMUM_LAG_BYTES);
      assert.deepEqual(loss.problems, [], `trial ${trial}: the commits lost keep to the asynchronous bound`);
      lostWal.push(loss.walBytes);

      await node.recover();
      const rejoined = await waitFor(
        `${primary} to rejoin as a replica`,
        async () => {
          const report = reportOf((await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === primary));
          return report?.role === 'replica' && report.ready && report.rejoin ? report : undefined;
        },
        180_000,
        250,
      );
      // pg_rewind ran and succeeded: not "pg_rewind failed", then a re-clone.
      const decision = rejoined.rejoin ?? '';
      assert.match(decision, REWOUND_DECISION);
      assert.ok(decision.includes(holder ?? '?'), `rewound from the new primary ${holder}: ${decision}`);
      const dirAfter = await dataDirState(volume);
      assert.equal(dirAfter.inode, dirBefore.inode, 'the same data directory, rewound in place');
      assert.equal(dirAfter.setAsideInode, dirBefore.setAsideInode, 'no data directory was set aside for a re-clone');
      const events = await waitFor('the Rewound Event', async () => {
        const e = await rejoinEvents(env.client, CLUSTER, primary);
        return e.rewound.length > eventsBefore.rewound.length ? e : undefined;
      });
      assert.equal(events.failed.length, eventsBefore.failed.length, 'no RewindFailed Event');
      assert.equal(events.recloned.length, eventsBefore.recloned.length, 'no Recloned Event');
      rewinds.push(decision);
      // The watcher must see each new primary take writes, or its verdict below covers nothing.
      await waitFor(`the split-brain watcher to see ${holder} accept writes`, () =>
        watcher.accepted.some((a) => a.pod === holder && a.start > crashedAt),
      );
      // The same failover seen at the database: the watcher's first write on the new primary
      // (it probes every instance directly every 50 ms), without the client's own delays.
      const atDatabase =
        Math.min(...watcher.accepted.filter((a) => a.pod === holder && a.start > crashedAt).map((a) => a.end)) -
        crashedAt;
      dbRtos.push(atDatabase);
      // Why the client's first write came when it did: its last failed attempt before it.
      const failures = writer.failures.filter((f) => f.at > crashedAt && f.at < first.at);
      const last = failures.at(-1);
      const client = last
        ? `${failures.length} failed attempts, the last (${last.message}, ${Math.round(last.ms)} ms, to ${last.host === oldIP ? 'the crashed primary' : (last.host ?? 'no address')}) ended ${Math.round(first.at - last.at)} ms before the first write`
        : 'no failed attempt';
      // Its data equals the new primary's up to a point both have.
      const rejoinedIP = await podIP(env.client, primary);
      assert.ok(rejoinedIP, `${primary} has a Pod IP`);
      const [{ m } = { m: '0' }] = await sql<{ m: string }>(first.host, password, 'SELECT max(n)::text AS m FROM seq');
      const digest = `SELECT count(*)::text AS c, md5(string_agg(n::text, ',' ORDER BY n)) AS h FROM seq WHERE n <= ${Number(m)}`;
      await waitFor(
        `${primary} to replay up to ${m}`,
        async () => (await sql(rejoinedIP, password, 'SELECT 1 FROM seq WHERE n = $1', [m])).length === 1,
        60_000,
        200,
      );
      assert.deepEqual(await sql(rejoinedIP, password, digest), await sql(first.host, password, digest));
      console.log(
        `# trial ${trial} (${env.nodes} nodes): ${primary} crashed on ${node.name}; ${holder} took over; RTO ${(rto / 1000).toFixed(2)} s (at the database ${(atDatabase / 1000).toFixed(2)} s; client: ${client}); commits lost ${lost.at(-1)} (${lostWal.at(-1)} bytes of WAL past the fork; ${lateAcks.at(-1)} acknowledged by ${primary} at or after the crash); ${decision}`,
      );
    }
    const med = median(rtos) / 1000;
    const max = Math.max(...rtos) / 1000;
    console.log(
      `# RTO (default settings, lease ${LEASE_SECONDS} s, ${TRIALS} crashes, ${env.nodes} nodes): median ${med.toFixed(2)} s, max ${max.toFixed(2)} s, min ${(Math.min(...rtos) / 1000).toFixed(2)} s; at the database median ${(median(dbRtos) / 1000).toFixed(2)} s, max ${(Math.max(...dbRtos) / 1000).toFixed(2)} s; bound ${RTO_BOUND_MS / 1000} s on the ${boundedFigure(env.nodes)}'s figure, margin ${((RTO_BOUND_MS - Math.max(...(boundedFigure(env.nodes) === 'client' ? rtos : dbRtos))) / 1000).toFixed(2)} s`,
    );
    console.log(
      `# commits lost (async): ${lost.reduce((a, b) => a + b, 0)} in ${TRIALS} crashes (${lost.join(', ')}); at most ${Math.max(...lostWal)} bytes of WAL (bound ${MAXIMUM_LAG_BYTES}); ${writer.acks.length} acknowledged, ${lateAcks.reduce((a, b) => a + b, 0)} of them by a primary at or after its crash`,
    );
    // The bound just printed, asserted on the same figures: every crash's loss was checked against
    // it, and the furthest lost commit lies within it.
    assert.equal(lostWal.length, TRIALS, 'every crash had its loss held to the bound');
    assert.ok(
      Math.max(...lostWal) <= MAXIMUM_LAG_BYTES,
      `at most ${Math.max(...lostWal)} bytes of WAL lost, bound ${MAXIMUM_LAG_BYTES}`,
    );
    console.log(
      `# rejoins: ${rewinds.filter((r) => /rewound/.test(r)).length} rewound, ${rewinds.filter((r) => /no rewind/.test(r)).length} needed none; 0 re-cloned`,
    );
    const over = (figures: number[], bound: number) =>
      figures.filter((ms) => ms > bound).map((ms) => `${(ms / 1000).toFixed(2)} s`);
    if (boundedFigure(env.nodes) === 'client') {
      assert.deepEqual(over(rtos, RTO_BOUND_MS), [], `every RTO within lease + 2 s = ${RTO_BOUND_MS / 1000} s`);
    } else {
      assert.deepEqual(
        over(dbRtos, RTO_BOUND_MS),
        [],
        `every RTO at the database within lease + 2 s = ${RTO_BOUND_MS / 1000} s`,
      );
      const clientBound = RTO_BOUND_MS + WRITER_CONNECT_TIMEOUT_MS;
      assert.deepEqual(
        over(rtos, clientBound),
        [],
        `every client RTO within the bound plus one connection timeout = ${clientBound / 1000} s`,
      );
    }
  });

  it('never had two instances accept writes at the same time', async () => {
    await watcher.stop();
    const violations = watcher.violations();
    console.log(
      `# split-brain watcher: ${watcher.probes} probes, ${watcher.accepted.length} accepted writes, ${violations.length} violations; failed probes: ${JSON.stringify([...watcher.errors])}`,
    );
    assert.ok(
      watcher.accepted.length > 100,
      `the watcher saw primaries accept writes; its failures: ${JSON.stringify([...watcher.errors])}`,
    );
    assert.deepEqual(watcher.blindSpans(), [], 'the watcher probed every instance throughout');
    assert.deepEqual(violations, []);
  });
});
