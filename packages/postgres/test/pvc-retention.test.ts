/**
 * README claim about `persistentVolumeClaimRetentionPolicy.whenScaled`, end to end: with `Retain`
 * a replica removed by scaling down leaves its data volume behind, released from the cluster (no
 * owner reference), so it survives even deleting the cluster; with the default (`Delete`) the
 * removed replica's volume is deleted. A retained volume that a later scale-up reattaches is
 * checked before postgres runs on it (system identifier, timeline) and the result stated in an
 * Event: the cluster's own data is used as it is; another cluster's (the same name, created
 * again) is set aside and the instance re-cloned.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isNotFound } from '@kanri/client';
import { waitFor } from '@kanri/testenv';
import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { EVENT_REASON, LABEL, names, readPodReport } from '../src/contract/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { clusterEvents, dataClaims, instancePods, waitForClusterEvent } from './support/cluster-observers.js';

const CLUSTER = 'keep';

describe('persistentVolumeClaimRetentionPolicy.whenScaled', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  let retained: string | undefined;
  let firstSystemIdentifier: string | undefined;
  const claims = () => env.client.resource<PersistentVolumeClaim>('v1', 'PersistentVolumeClaim');
  const claim = (name: string) =>
    claims()
      .get(name, { namespace: 'default' })
      .catch((error: unknown) => {
        if (isNotFound(error)) return undefined;
        throw error;
      });
  const scale = (replicas: number) =>
    clusters(env.client).patch(CLUSTER, [{ op: 'replace', path: '/spec/instances/0/replicas', value: replicas }], {
      namespace: 'default',
      type: 'json',
    });
  /** Scales down by one and resolves the instance the operator removed. */
  const scaleDownByOne = async (from: number) => {
    const before = (await instancePods(env.client, CLUSTER)).map((p) => p.metadata?.name ?? '');
    assert.equal(before.length, from);
    await scale(from - 1);
    await waitReady(env.client, CLUSTER, from - 1, 120_000);
    const after = await waitFor(
      `${from - 1} instance Pods`,
      async () => {
        const pods = await instancePods(env.client, CLUSTER);
        return pods.length === from - 1 ? pods : undefined;
      },
      60_000,
      250,
    );
    const removed = before.filter((name) => !after.some((p) => p.metadata?.name === name));
    assert.equal(removed.length, 1);
    return removed[0] as string;
  };

  before(async () => {
    env = await startPostgresEnv({ processNodes: 2 });
    await env.startOperator();
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 3, { persistentVolumeClaimRetentionPolicy: { whenScaled: 'Retain' } }),
    );
    await waitReady(env.client, CLUSTER, 3);
  });
  after(async () => {
    // The retained claim belongs to no one: the test removes it, so its volume directory goes too.
    if (retained)
      await claims()
        .delete(retained, { namespace: 'default' })
        .catch(() => undefined);
    await env?.stop();
  });

  it('Retain: the removed replica’s claim stays, released from the cluster', async () => {
    const owned = await dataClaims(env.client, CLUSTER);
    assert.equal(owned.length, 3);
    assert.ok(owned.every((c) => c.metadata?.ownerReferences?.some((o) => o.kind === 'PostgresCluster')));
    const removed = await scaleDownByOne(3);
    retained = names.pvc(removed);
    const uid = owned.find((c) => c.metadata?.name === retained)?.metadata?.uid;
    const released = await waitFor(
      `${retained} to be released (no owner reference)`,
      async () => {
        const c = await claim(retained as string);
        return c && (c.metadata?.ownerReferences ?? []).length === 0 ? c : undefined;
      },
      60_000,
      250,
    );
    assert.equal(released.metadata?.uid, uid, 'the same claim, not a new one');
    assert.equal(released.metadata?.deletionTimestamp, undefined);
    assert.equal(released.status?.phase, 'Bound');
    firstSystemIdentifier = (await clusters(env.client).get(CLUSTER, { namespace: 'default' })).status
      ?.systemIdentifier;
    assert.ok(firstSystemIdentifier);
  });

  it('a scale-up reattaches the retained claim, checks it (same cluster) and uses it', async () => {
    await scale(3);
    const ready = await waitReady(env.client, CLUSTER, 3, 180_000);
    const instance = retained?.replace(/-pgdata$/, '') as string;
    assert.ok(ready.status?.instances?.some((i) => i.name === instance && i.ready));
    const event = await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: EVENT_REASON.dataVolumeChecked,
      note: new RegExp(
        `^${instance}: data volume checked before use: system identifier ${firstSystemIdentifier} is the cluster's`,
      ),
    });
    assert.match(event.note, /; timeline \d+/);
    // Used as it was: not re-cloned.
    assert.equal(
      (await clusterEvents(env.client, CLUSTER)).some((e) => e.reason === EVENT_REASON.recloned),
      false,
    );
    assert.equal(await scaleDownByOne(3), instance, 'the same instance goes again, and its claim is retained again');
  });

  it('Delete (the default): the removed replica’s claim is deleted', async () => {
    await clusters(env.client).patch(
      CLUSTER,
      { spec: { persistentVolumeClaimRetentionPolicy: null } },
      { namespace: 'default', type: 'merge' },
    );
    const removed = await scaleDownByOne(2);
    await waitFor(
      `${names.pvc(removed)} to be deleted`,
      async () => (await claim(names.pvc(removed))) === undefined,
      60_000,
      250,
    );
    const left = (await dataClaims(env.client, CLUSTER)).filter((c) => c.metadata?.name !== retained);
    assert.deepEqual(
      left.map((c) => c.metadata?.labels?.[LABEL.instance]),
      (await instancePods(env.client, CLUSTER)).map((p) => p.metadata?.name),
    );
  });

  it('deleting the cluster deletes the claims it owns and keeps the retained one', async () => {
    const owned = (await dataClaims(env.client, CLUSTER))
      .map((c) => c.metadata?.name ?? '')
      .filter((n) => n !== retained);
    assert.equal(owned.length, 1);
    await clusters(env.client).delete(CLUSTER, { namespace: 'default' });
    await waitFor(
      'the owned claims to be deleted',
      async () => (await Promise.all(owned.map(claim))).every((c) => c === undefined),
      120_000,
      500,
    );
    const survivor = await claim(retained as string);
    assert.ok(survivor, `${retained} survived the cluster`);
    assert.equal(survivor.metadata?.deletionTimestamp, undefined);
  });

  it('a new cluster of the same name does not use the old one’s retained data: it re-clones', async () => {
    await waitFor(
      'the old leader Lease to go with its cluster',
      async () =>
        env.client
          .resource('coordination.k8s.io/v1', 'Lease')
          .get(names.leaderLease(CLUSTER), { namespace: 'default' })
          .then(
            () => undefined,
            (error: unknown) => (isNotFound(error) ? true : undefined),
          ),
      60_000,
      250,
    );
    await clusters(env.client).create(
      clusterManifest(CLUSTER, 3, { persistentVolumeClaimRetentionPolicy: { whenScaled: 'Retain' } }),
    );
    const ready = await waitReady(env.client, CLUSTER, 3, 240_000);
    const systemIdentifier = ready.status?.systemIdentifier;
    assert.ok(systemIdentifier && systemIdentifier !== firstSystemIdentifier, 'a new cluster, a new identifier');
    const instance = retained?.replace(/-pgdata$/, '') as string;
    const refused = await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Warning',
      reason: EVENT_REASON.dataVolumeChecked,
      note: new RegExp(
        `^${instance}: .*system identifier ${firstSystemIdentifier} is not the cluster's \\(${systemIdentifier}`,
      ),
    });
    assert.match(refused.note, /belongs to another cluster; it is set aside and the primary cloned instead/);
    await waitForClusterEvent(env.client, CLUSTER, {
      type: 'Normal',
      reason: EVENT_REASON.recloned,
      note: new RegExp(`^${instance}: re-cloned: its data volume held another cluster's data`),
    });
    const pod = (await instancePods(env.client, CLUSTER)).find((p) => p.metadata?.name === instance);
    const report = readPodReport(pod);
    assert.equal(report?.systemIdentifier, systemIdentifier, 'it runs the new cluster’s data now');
    assert.match(report?.rejoin ?? '', /re-cloned: its data volume held another cluster's data/);
  });
});
