/**
 * The rejoin path for a former primary that pg_rewind cannot bring back. Its host loses power, a
 * replica takes over, and while the host is down its WAL is removed. pg_rewind reads that WAL:
 * first for the crash recovery it runs on an instance that was not shut down cleanly, then to
 * find the blocks changed since the fork. The same happens when a former primary ran on long
 * enough after the fork to recycle the WAL. The agent must keep the diverged data directory aside
 * (`pgdata.diverged`, never deleted), clone the new primary, say so, and stream from it.
 * On process nodes, or with KANRI_FAILOVER_NODES=real on real nodes (the node powered off).
 */
import assert from 'node:assert/strict';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '@kanri/testenv';
import {
  clusters,
  type FailoverEnv,
  failoverCluster,
  leaseOf,
  podIP,
  podsOf,
  reportOf,
  SequenceWriter,
  sql,
  startFailoverEnv,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';
import { dataDirState, RECLONED_DECISION, rejoinEvents, volumeDirOf } from './support/rejoin-checks.js';

const CLUSTER = 'reclone';
const HA = { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1 };

/** Removes every WAL segment file of a data directory; resolves how many there were. */
async function removeWal(pgdata: string): Promise<number> {
  const segments = (await readdir(join(pgdata, 'pg_wal'))).filter((f) => /^[0-9A-F]{24}$/.test(f));
  for (const segment of segments) await rm(join(pgdata, 'pg_wal', segment));
  return segments.length;
}

describe('a former primary that pg_rewind cannot bring back is re-cloned', { timeout: 15 * 60_000 }, () => {
  let env: FailoverEnv;
  let password: string;
  let writer: SequenceWriter;
  const ipOf = new Map<string, string>();

  before(async () => {
    env = await startFailoverEnv();
    env.startOperator();
    await clusters(env.client).create(failoverCluster(CLUSTER, 2, HA));
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 2);
    for (const pod of pods) ipOf.set(pod.metadata?.name ?? '', pod.status?.podIP ?? '');
    password = await superuserPassword(env.client, CLUSTER);
    await sql(ipOf.get(primary) as string, password, 'CREATE TABLE seq (n bigint PRIMARY KEY)');
    writer = new SequenceWriter(env.cp, CLUSTER, password);
    writer.start();
  });

  after(async () => {
    await writer?.stop();
    await env?.stop();
  });

  it('sets the diverged data directory aside, clones the new primary, says why and streams from it', async () => {
    const { primary } = await waitHealthy(env.client, CLUSTER, 2);
    const oldIP = ipOf.get(primary) as string;
    const systemId = async (host: string) =>
      (await sql<{ id: string }>(host, password, 'SELECT system_identifier::text AS id FROM pg_control_system()'))[0]
        ?.id;
    const cluster = await systemId(oldIP);
    const volume = await volumeDirOf(env.client, primary);
    const dirBefore = await dataDirState(volume);
    assert.ok(dirBefore.inode !== undefined && !dirBefore.setAside, `${primary}'s data directory, none set aside`);
    const acked = writer.acks.length;
    await waitFor('writes to flow', () => writer.acks.length > acked + 20, 60_000, 50);

    const node = await env.hostOf(primary);
    const crashedAt = performance.now();
    await node.crash();
    const first = await waitFor(
      'a write acknowledged by the new primary',
      () => writer.acks.find((a) => a.at > crashedAt && a.host !== oldIP),
      120_000,
      20,
    );
    const holder = (await leaseOf(env.client, CLUSTER)).spec?.holderIdentity ?? '';
    assert.notEqual(holder, primary);
    const removed = await removeWal(dirBefore.pgdata);
    assert.ok(removed > 0, `removed ${removed} WAL segments from ${primary}`);
    await node.recover();

    const report = await waitFor(
      `${primary} to come back as a replica`,
      async () => {
        const r = reportOf((await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === primary));
        return r?.role === 'replica' && r.ready && r.rejoin ? r : undefined;
      },
      300_000,
      250,
    );
    console.log(`# ${primary} without its WAL rejoined (${env.nodes} nodes): ${report.rejoin}`);
    assert.match(report.rejoin ?? '', RECLONED_DECISION);
    assert.ok(report.rejoin?.startsWith(`re-cloned from ${holder}:`), `cloned from the new primary ${holder}`);
    assert.ok(report.rejoin?.includes('pgdata.diverged'), 'the report says where the diverged data directory is');

    // The old data directory is kept, whole, under its new name; a new one took its place.
    const dirAfter = await dataDirState(volume);
    assert.equal(dirAfter.setAsideInode, dirBefore.inode, 'the diverged data directory is the former one, moved');
    assert.ok(dirAfter.inode !== undefined && dirAfter.inode !== dirBefore.inode, 'a new data directory');
    assert.ok((await stat(join(`${dirBefore.pgdata}.diverged`, 'PG_VERSION'))).isFile());

    const events = await waitFor('the RewindFailed and Recloned Events', async () => {
      const e = await rejoinEvents(env.client, CLUSTER, primary);
      return e.failed.length > 0 && e.recloned.length > 0 ? e : undefined;
    });
    assert.deepEqual(events.rewound, [], 'no Rewound Event');
    assert.match(events.failed[0]?.note ?? '', new RegExp(`pg_rewind from ${holder} failed`));

    // A clone of the same cluster, streaming from the new primary and replaying its writes. A real
    // node's Pod came back from the power loss with a new address.
    const newIP = await podIP(env.client, primary);
    assert.ok(newIP, `${primary} has a Pod IP`);
    assert.equal(await systemId(newIP), cluster);
    await waitFor(
      `${primary} to stream from ${holder}`,
      async () =>
        (
          await sql<{ state: string }>(
            first.host,
            password,
            'SELECT state FROM pg_stat_replication WHERE application_name = $1',
            [primary],
          )
        )[0]?.state === 'streaming',
      60_000,
      250,
    );
    const [{ m } = { m: '0' }] = await sql<{ m: string }>(first.host, password, 'SELECT max(n)::text AS m FROM seq');
    await waitFor(
      `${primary} to replay up to ${m}`,
      async () => (await sql(newIP, password, 'SELECT 1 FROM seq WHERE n = $1', [m])).length === 1,
      60_000,
      200,
    );
    const digest = `SELECT count(*)::text AS c, md5(string_agg(n::text, ',' ORDER BY n)) AS h FROM seq WHERE n <= ${Number(m)}`;
    assert.deepEqual(await sql(newIP, password, digest), await sql(first.host, password, digest));
  });
});
