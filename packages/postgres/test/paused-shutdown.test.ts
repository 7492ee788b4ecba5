/**
 * README claims about `spec.paused` and `spec.shutdown`, end to end: while paused the operator
 * changes nothing (a deleted Service stays deleted, a scale-up creates no Pod) and converges once
 * unpaused; a shut-down cluster runs no instance but keeps its volumes, and comes back on the same
 * claims with the same database (system identifier and rows).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFound } from '@kanri/client';
import { isProcessAlive, waitFor } from '@kanri/testenv';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { names } from '../src/contract/index.js';
import {
  clusterManifest,
  clusters,
  connect,
  type PostgresEnv,
  secretValue,
  serviceAddress,
  startPostgresEnv,
  waitReady,
} from './harness.js';
import { claimOf, dataClaims, instancePids, instancePods } from './support/cluster-observers.js';
import { reportOf } from './support/failover-env.js';

const CLUSTER = 'calm';
/**
 * How long the paused cluster is watched for changes. The operator puts a deleted Service back in
 * well under a second (test/cluster.test.ts), so a change it was going to make shows up by then.
 */
const PAUSED_WATCH_MS = 10_000;

describe('spec.paused and spec.shutdown', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  const patchSpec = (spec: Record<string, unknown>) =>
    clusters(env.client).patch(CLUSTER, { spec }, { namespace: 'default', type: 'merge' });
  const primarySql = async (text: string) => {
    const password = await secretValue(env.client, names.superuserSecret(CLUSTER), 'password');
    const db = await connect(
      await serviceAddress(env.cp, 'default', names.primaryService(CLUSTER), 5432),
      'postgres',
      password,
    );
    try {
      return (await db.query(text)).rows;
    } finally {
      await db.end();
    }
  };
  const serviceExists = (name: string) =>
    env.client
      .resource('v1', 'Service')
      .get(name, { namespace: 'default' })
      .then(
        () => true,
        (error: unknown) => {
          if (isNotFound(error)) return false;
          throw error;
        },
      );

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
    await clusters(env.client).create(clusterManifest(CLUSTER, 2));
    await waitReady(env.client, CLUSTER, 2);
  });
  after(async () => {
    await env?.stop();
  });

  it('paused: a deleted Service is not put back and a scale-up creates no Pod; unpaused, both converge', async () => {
    await patchSpec({ paused: true });
    // Nothing shows that the operator has seen the pause (that is the point); its watch delivers in
    // milliseconds, so after this a change it makes comes from ignoring the flag, not from lag.
    await sleep(3_000);
    const podsBefore = (await instancePods(env.client, CLUSTER)).map((p) => p.metadata?.uid).sort();
    await env.client.resource('v1', 'Service').delete(names.replicasService(CLUSTER), { namespace: 'default' });
    await clusters(env.client).patch(CLUSTER, [{ op: 'replace', path: '/spec/instances/0/replicas', value: 3 }], {
      namespace: 'default',
      type: 'json',
    });
    await sleep(PAUSED_WATCH_MS);
    assert.equal(await serviceExists(names.replicasService(CLUSTER)), false, 'the deleted Service was put back');
    assert.deepEqual(
      (await instancePods(env.client, CLUSTER)).map((p) => p.metadata?.uid).sort(),
      podsBefore,
      'the Pods changed while paused',
    );

    await patchSpec({ paused: null });
    await waitFor('the Service to be put back', () => serviceExists(names.replicasService(CLUSTER)), 60_000, 250);
    const ready = await waitReady(env.client, CLUSTER, 3, 240_000);
    assert.equal(ready.status?.desiredInstances, 3);
  });

  it('shutdown: every instance stops and the volumes stay; unset, the same claims bring back the same database', async () => {
    await primarySql('CREATE TABLE kept (v text)');
    await primarySql("INSERT INTO kept VALUES ('before shutdown')");
    const before = await waitReady(env.client, CLUSTER, 3);
    const systemIdentifier = before.status?.systemIdentifier;
    assert.match(systemIdentifier ?? '', /^\d+$/);
    const claimUids = new Map((await dataClaims(env.client, CLUSTER)).map((c) => [c.metadata?.name, c.metadata?.uid]));
    assert.equal(claimUids.size, 3);
    const running = await instancePods(env.client, CLUSTER);
    const podIPs = running.map((p) => p.status?.podIP ?? '');
    const pids = instancePids(env.cp, CLUSTER);
    assert.ok(pids.length >= 3, `instance processes known: ${pids.join(', ')}`);

    await patchSpec({ shutdown: true });
    await waitFor(
      'every instance Pod to be gone',
      async () => (await instancePods(env.client, CLUSTER)).length === 0,
      120_000,
      500,
    );
    await waitFor('every instance process to exit', () => pids.every((pid) => !isProcessAlive(pid)), 60_000, 250);
    const password = await secretValue(env.client, names.superuserSecret(CLUSTER), 'password');
    for (const ip of podIPs) {
      await assert.rejects(connect(`${ip}:5432`, 'postgres', password), `postgres still answers on ${ip}`);
    }
    // Held for a while: the operator must not bring an instance back or drop a volume on a later lap.
    await sleep(5_000);
    assert.equal((await instancePods(env.client, CLUSTER)).length, 0, 'an instance came back while shut down');
    const kept = await dataClaims(env.client, CLUSTER);
    assert.deepEqual(
      new Map(kept.map((c) => [c.metadata?.name, c.metadata?.uid])),
      claimUids,
      'the data volumes are the same claims',
    );
    assert.ok(kept.every((c) => !c.metadata?.deletionTimestamp && c.status?.phase === 'Bound'));

    await patchSpec({ shutdown: null });
    const back = await waitReady(env.client, CLUSTER, 3, 240_000);
    assert.equal(back.status?.systemIdentifier, systemIdentifier);
    const pods: Pod[] = await instancePods(env.client, CLUSTER);
    assert.deepEqual(
      pods.map((p) => claimOf(p)).sort(),
      [...claimUids.keys()].sort(),
      'each instance mounts its old claim',
    );
    assert.deepEqual(
      new Map((await dataClaims(env.client, CLUSTER)).map((c) => [c.metadata?.name, c.metadata?.uid])),
      claimUids,
    );
    for (const pod of pods) {
      assert.equal(reportOf(pod)?.systemIdentifier, systemIdentifier, `${pod.metadata?.name} runs the same database`);
    }
    assert.deepEqual(await primarySql('SELECT v FROM kept'), [{ v: 'before shutdown' }]);
  });
});
