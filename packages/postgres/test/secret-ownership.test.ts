/**
 * Issue 37, finding 10, end to end with the real operator: generated names of two clusters no
 * longer meet, a cluster refuses to use or write an object another owner holds (and says so),
 * and a cluster whose PostgreSQL CA is under its old name keeps that CA under the new one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { createCertificateAuthority } from '@kanri/runtime';
import { waitFor } from '@kanri/testenv';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import { LABEL, names, POSTGRES_TLS_KEY, type PostgresCluster } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, volume, waitReady } from './harness.js';
import { clusterEvents } from './support/cluster-observers.js';

describe('names and owners across clusters', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  const secrets = () => env.client.resource<Secret & KubeObject>('v1', 'Secret');
  const secret = (name: string) => secrets().get(name, { namespace: 'default' });
  const decoded = async (name: string, key: string) =>
    Buffer.from((await secret(name)).data?.[key] ?? '', 'base64').toString('utf8');
  const condition = async (cluster: string, type: string) =>
    (await clusters(env.client).get(cluster, { namespace: 'default' })).status?.conditions?.find(
      (c) => c.type === type,
    );
  const ownerRef = (cluster: PostgresCluster) => ({
    apiVersion: cluster.apiVersion ?? '',
    kind: 'PostgresCluster',
    name: cluster.metadata?.name ?? '',
    uid: cluster.metadata?.uid ?? '',
    controller: true,
  });

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1 });
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it("x's pgBackRest CA and x-pgbackrest's PostgreSQL CA are two Secrets, two CAs", async () => {
    // Shut down, both get their CAs (and x-pgbackrest its TLS Secret) without running an instance.
    await clusters(env.client).create(
      clusterManifest('x', 1, {
        shutdown: true,
        backups: { pgbackrest: { repos: [{ name: 'repo1', volume: { volumeClaimSpec: volume } }] } },
      } as never),
    );
    const xCa = await waitFor('the pgBackRest CA of x', () => decoded(names.pgbackrestCa('x'), 'ca.crt'), 60_000);
    await clusters(env.client).create(clusterManifest('x-pgbackrest', 1, { shutdown: true }));
    const served = await waitFor(
      'the PostgreSQL TLS Secret of x-pgbackrest',
      () => decoded(names.postgresTls('x-pgbackrest'), POSTGRES_TLS_KEY.serverCa),
      60_000,
    );
    assert.notEqual(names.postgresCa('x-pgbackrest'), names.pgbackrestCa('x'));
    assert.notEqual(served, xCa, "x-pgbackrest's certificates are not issued by x's pgBackRest CA");
    assert.equal(served, await decoded(names.postgresCa('x-pgbackrest'), 'ca.crt'));
    assert.equal(await decoded(names.pgbackrestCa('x'), 'ca.crt'), xCa, "x's CA is untouched");
    assert.equal(await condition('x-pgbackrest', 'ForeignObjects'), undefined);
  });

  it("refuses to use or change another cluster's Secret of the name it needs, says whose, and goes on once it is gone", async () => {
    const owner = await clusters(env.client).create({
      ...clusterManifest('owner', 1),
      spec: { ...clusterManifest('owner', 1).spec, paused: true },
    });
    await secrets().create({
      metadata: {
        name: names.superuserSecret('db'),
        namespace: 'default',
        labels: { [LABEL.cluster]: 'owner' },
        ownerReferences: [ownerRef(owner)],
      },
      stringData: { password: 'owners-password' },
    } as Secret & KubeObject);
    await clusters(env.client).create(clusterManifest('db', 1));
    const refused = await waitFor('the ForeignObjects condition', () => condition('db', 'ForeignObjects'), 60_000);
    assert.equal(refused.status, 'True');
    assert.match(
      refused.message,
      new RegExp(
        `^Secret db-superuser is held by PostgresCluster owner \\(uid ${owner.metadata?.uid}\\)\\. The cluster neither uses nor changes them`,
      ),
    );
    const events = await clusterEvents(env.client, 'db');
    assert.ok(
      events.some(
        (e) => e.type === 'Warning' && e.reason === 'ForeignObject' && e.note.includes('Secret db-superuser'),
      ),
      JSON.stringify(events),
    );
    assert.equal(await decoded(names.superuserSecret('db'), 'password'), 'owners-password', 'not overwritten');
    const held = await secret(names.superuserSecret('db'));
    assert.deepEqual(
      held.metadata?.ownerReferences?.map((r) => r.uid),
      [owner.metadata?.uid],
      'not adopted',
    );
    const pods = await env.client
      .resource<Pod>('v1', 'Pod')
      .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=db` });
    assert.deepEqual(
      pods.items.map((p) => p.metadata?.name),
      [],
      'no Pod mounts it',
    );

    await secrets().delete(names.superuserSecret('db'), { namespace: 'default' });
    await waitReady(env.client, 'db', 1, 240_000);
    assert.equal(await condition('db', 'ForeignObjects'), undefined);
    assert.notEqual(await decoded(names.superuserSecret('db'), 'password'), 'owners-password');
  });

  it('moves a CA kept under the old name <cluster>-ca to the new one, keeping it, and serves from it', async () => {
    const legacy = await clusters(env.client).create({
      ...clusterManifest('legacy', 1),
      spec: { ...clusterManifest('legacy', 1).spec, paused: true },
    });
    const ca = await createCertificateAuthority({ commonName: 'legacy-ca' });
    await secrets().create({
      metadata: {
        name: names.legacyPostgresCa('legacy'),
        namespace: 'default',
        labels: { [LABEL.cluster]: 'legacy' },
        ownerReferences: [ownerRef(legacy)],
      },
      stringData: { 'ca.crt': ca.caCertPem, 'ca.key': ca.caKeyPem },
    } as Secret & KubeObject);
    await clusters(env.client).patch('legacy', { spec: { paused: false } }, { namespace: 'default', type: 'merge' });
    await waitReady(env.client, 'legacy', 1, 240_000);
    assert.equal(await decoded(names.postgresCa('legacy'), 'ca.crt'), ca.caCertPem, 'the same CA');
    assert.equal(await decoded(names.postgresCa('legacy'), 'ca.key'), ca.caKeyPem);
    assert.equal(await decoded(names.postgresTls('legacy'), POSTGRES_TLS_KEY.serverCa), ca.caCertPem, 'served from it');
    await waitFor(
      'the old Secret to go',
      async () =>
        (await secrets().list({ namespace: 'default' })).items.every((s) => s.metadata?.name !== 'legacy-ca') ||
        undefined,
      30_000,
    );
    assert.ok((await clusterEvents(env.client, 'legacy')).some((e) => e.reason === 'CASecretMoved'));
  });
});
