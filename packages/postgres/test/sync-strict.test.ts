/**
 * README claim that synchronous replication is strict, against real PostgreSQL: on a 2-instance
 * cluster with `ha.synchronous.number: 1`, once the only replica's host crashes a commit on the
 * primary is not acknowledged (its backend waits for the standby), and it completes when the
 * replica is back and streaming.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '@kanri/testenv';
import pg from 'pg';
import { ANNOTATION } from '../src/contract/index.js';
import { type PostgresEnv, startPostgresEnv } from './harness.js';
import {
  clusters,
  failoverCluster,
  leaseOf,
  nodeOf,
  podsOf,
  reportOf,
  sql,
  superuserPassword,
  waitHealthy,
} from './support/failover-env.js';

const CLUSTER = 'strict';
const HA = { leaseDurationSeconds: 6, renewDeadlineSeconds: 4, retryPeriodSeconds: 1, synchronous: { number: 1 } };
/** How long the commit is watched not completing; a commit acknowledged by the primary alone takes milliseconds. */
const BLOCKED_FOR_MS = 8_000;

describe('strict synchronous mode', { timeout: 10 * 60_000 }, () => {
  let env: PostgresEnv;
  let writer: pg.Client | undefined;

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
    await clusters(env.client).create(failoverCluster(CLUSTER, 2, HA));
    await waitHealthy(env.client, CLUSTER, 2);
  });
  after(async () => {
    await writer?.end().catch(() => undefined);
    await env?.stop();
  });

  it('a commit waits while the only replica is down and completes once it is back', async () => {
    const { primary, pods } = await waitHealthy(env.client, CLUSTER, 2);
    const replica = pods.find((p) => p.metadata?.name !== primary);
    const replicaName = replica?.metadata?.name ?? '';
    const primaryIP = pods.find((p) => p.metadata?.name === primary)?.status?.podIP ?? '';
    const password = await superuserPassword(env.client, CLUSTER);
    await waitFor(
      `${replicaName} published as the synchronous standby`,
      async () => (await leaseOf(env.client, CLUSTER)).metadata?.annotations?.[ANNOTATION.syncStandbys] === replicaName,
      120_000,
      250,
    );
    await sql(primaryIP, password, 'CREATE TABLE commits (v text)');

    const node = nodeOf(env.cp, replicaName);
    await node.crash();
    try {
      await waitFor(
        `${primary} to see ${replicaName} gone`,
        async () => (await sql(primaryIP, password, 'SELECT 1 FROM pg_stat_replication')).length === 0,
        60_000,
        250,
      );
      writer = new pg.Client({ host: primaryIP, port: 5432, user: 'postgres', password, database: 'postgres' });
      writer.on('error', () => undefined);
      await writer.connect();
      const [{ pid } = { pid: 0 }] = (await writer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
      let acknowledgedAt: number | undefined;
      let failed: unknown;
      writer.query("INSERT INTO commits VALUES ('while the replica is down')").then(
        () => {
          acknowledgedAt = performance.now();
        },
        (error: unknown) => {
          failed = error;
        },
      );
      await sleep(BLOCKED_FOR_MS);
      assert.equal(acknowledgedAt, undefined, 'the commit was acknowledged without a synchronous standby');
      assert.equal(failed, undefined, 'the commit failed');
      const [waiting] = await sql<{ wait_event: string | null }>(
        primaryIP,
        password,
        'SELECT wait_event FROM pg_stat_activity WHERE pid = $1',
        [pid],
      );
      assert.equal(waiting?.wait_event, 'SyncRep', 'the backend waits for the synchronous standby');
      assert.equal((await leaseOf(env.client, CLUSTER)).spec?.holderIdentity, primary, 'no failover happened');

      const recoveredAt = performance.now();
      await node.recover();
      await waitFor(
        'the commit to complete once the replica is back',
        () => acknowledgedAt !== undefined || failed !== undefined,
        180_000,
        100,
      );
      assert.equal(failed, undefined, 'the commit failed');
      assert.ok((acknowledgedAt ?? 0) > recoveredAt);
    } finally {
      await node.recover();
    }
    const rows = await sql<{ v: string }>(primaryIP, password, 'SELECT v FROM commits');
    assert.deepEqual(rows, [{ v: 'while the replica is down' }]);
    // The standby that released the commit holds it too.
    const replicaIP = (await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === replicaName)?.status?.podIP;
    await waitFor(
      `the row on ${replicaName}`,
      async () => (await sql(replicaIP ?? '', password, 'SELECT v FROM commits')).length === 1,
      60_000,
      250,
    );
    const report = reportOf((await podsOf(env.client, CLUSTER)).find((p) => p.metadata?.name === replicaName));
    assert.equal(report?.role, 'replica');
  });
});
