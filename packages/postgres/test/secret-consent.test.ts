/**
 * Issue 37, finding 11, end to end with the real operator: a PostgresCluster uses a Secret its
 * spec names only when the Secret lets it (annotation postgres.kanri.dev/allowed-clusters). One
 * that does not is refused with the SecretsRefused condition (naming the field, the Secret and
 * how to opt in), never mounted into a Pod and never served; annotated, it is used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { KubeObject } from '@kanri/client';
import { createCertificateAuthority, createServingCertificate } from '@kanri/runtime';
import { type S3Server, waitFor } from '@kanri/testenv';
import type { Pod, Secret } from 'kubernetes-types/core/v1.js';
import { ANNOTATION, LABEL, names, POSTGRES_TLS_KEY, postgresServerDnsNames } from '../src/index.js';
import { clusterManifest, clusters, type PostgresEnv, startPostgresEnv, waitReady } from './harness.js';
import { backupsSpec, CREDS_SECRET, prepareS3, s3DataSource } from './support/backup-fixtures.js';

const NAME = 'hippo';

describe('Secrets a cluster may use', { timeout: 15 * 60_000 }, () => {
  let env: PostgresEnv;
  let s3: S3Server;
  const secrets = () => env.client.resource<Secret & KubeObject>('v1', 'Secret');
  const refusedCondition = async () =>
    (await clusters(env.client).get(NAME, { namespace: 'default' })).status?.conditions?.find(
      (c) => c.type === 'SecretsRefused',
    );
  /** Every Secret any Pod of the cluster mounts, by name. */
  const mounted = async () => {
    const pods = await env.client
      .resource<Pod>('v1', 'Pod')
      .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${NAME}` });
    return pods.items.flatMap((p) =>
      (p.spec?.volumes ?? []).flatMap((v) => [
        ...(v.secret?.secretName ? [v.secret.secretName] : []),
        ...(v.projected?.sources ?? []).flatMap((s) => (s.secret?.name ? [s.secret.name] : [])),
      ]),
    );
  };
  const servedCa = async () =>
    Buffer.from(
      (await secrets().get(names.postgresTls(NAME), { namespace: 'default' })).data?.[POSTGRES_TLS_KEY.serverCa] ?? '',
      'base64',
    ).toString('utf8');

  before(async () => {
    env = await startPostgresEnv({ processNodes: 1, s3: true });
    // Once: the bucket and the shared credentials Secret serve both tests.
    s3 = await prepareS3(env);
    await env.startOperator();
  });
  after(async () => {
    if (process.exitCode) console.error((await env?.allLogs()) ?? '');
    await env?.stop();
  });

  it('refuses, says how to opt in, mounts and serves nothing of a Secret that does not allow the cluster; uses it once annotated', async () => {
    // Another team's Secrets: the creator of the cluster may not read them.
    await secrets().create({
      metadata: { name: 'payments-keys', namespace: 'default' },
      stringData: { 'keys.conf': '[global]\n# the payments team’s\n' },
    } as Secret & KubeObject);
    const corpCa = await createCertificateAuthority({ commonName: 'corp-ca' });
    const corp = await createServingCertificate({ dnsNames: postgresServerDnsNames(NAME, 'default'), ca: corpCa });
    await secrets().create({
      metadata: { name: 'corp-tls', namespace: 'default' },
      type: 'kubernetes.io/tls',
      stringData: { 'ca.crt': corpCa.caCertPem, 'tls.crt': corp.certPem, 'tls.key': corp.keyPem },
    } as Secret & KubeObject);
    const backups = backupsSpec(s3);
    backups.pgbackrest.configuration.push({ secret: { name: 'payments-keys' } });
    await clusters(env.client).create(
      clusterManifest(NAME, 1, { backups, tls: { serverSecret: 'corp-tls' } } as never),
    );
    await waitReady(env.client, NAME, 1, 240_000);
    const refused = await waitFor('the SecretsRefused condition', refusedCondition, 60_000);
    assert.equal(refused.status, 'True');
    assert.match(
      refused.message,
      /spec\.tls\.serverSecret: Secret corp-tls does not allow PostgresCluster hippo to use it: annotate it postgres\.kanri\.dev\/allowed-clusters=hippo \(a comma-separated list of the PostgresClusters that may use it, or \*\)/,
    );
    assert.match(
      refused.message,
      /spec\.backups\.pgbackrest\.configuration\[1\]\.secret: Secret payments-keys does not allow PostgresCluster hippo/,
    );
    assert.doesNotMatch(refused.message, new RegExp(CREDS_SECRET), 'the annotated Secret is allowed');
    const inPods = await mounted();
    assert.ok(inPods.includes(CREDS_SECRET), `the allowed Secret is mounted: ${inPods}`);
    assert.ok(
      !inPods.includes('payments-keys') && !inPods.includes('corp-tls'),
      `nothing refused is mounted: ${inPods}`,
    );
    assert.notEqual(await servedCa(), corpCa.caCertPem, 'the refused certificate is not served');

    for (const name of ['payments-keys', 'corp-tls'])
      await secrets().patch(
        name,
        { metadata: { annotations: { [ANNOTATION.allowedClusters]: `other, ${NAME}` } } },
        { namespace: 'default', type: 'merge' },
      );
    await waitFor('the condition to clear', async () => ((await refusedCondition()) ? undefined : true), 60_000);
    await waitFor(
      'the certificate to be served',
      async () => ((await servedCa()) === corpCa.caCertPem ? true : undefined),
      60_000,
    );
    await waitFor(
      'the instance to mount the allowed Secret (a rolling update)',
      async () => ((await mounted()).includes('payments-keys') ? true : undefined),
      240_000,
      1_000,
    );
    await waitReady(env.client, NAME, 1, 240_000);
  });

  it("holds a clone's first Pod, saying why, until the Secret its data source names allows it", async () => {
    const creds = await secrets().get(CREDS_SECRET, { namespace: 'default' });
    await secrets().create({
      metadata: { name: 'borrowed-creds', namespace: 'default' },
      data: creds.data,
    } as Secret & KubeObject);
    const COPY = 'copy';
    await clusters(env.client).create(
      clusterManifest(COPY, 1, {
        dataSource: s3DataSource(s3, 'borrowed-creds'),
      } as never),
    );
    const why = await waitFor(
      'the DataSourceNotReady Event',
      async () =>
        (
          await env.client
            .resource<KubeObject & { reason?: string; message?: string }>('v1', 'Event')
            .list({ namespace: 'default' })
        ).items.find((e) => e.reason === 'DataSourceNotReady' && e.message?.includes('borrowed-creds')),
      60_000,
      500,
    );
    assert.match(
      why.message ?? '',
      /^spec\.dataSource\.pgbackrest\.configuration\[0\]\.secret: Secret borrowed-creds does not allow PostgresCluster copy/,
    );
    const copyPods = async () =>
      (
        await env.client
          .resource<Pod>('v1', 'Pod')
          .list({ namespace: 'default', labelSelector: `${LABEL.cluster}=${COPY}` })
      ).items;
    assert.equal((await copyPods()).length, 0, 'no Pod restores without the credentials');
    await secrets().patch(
      'borrowed-creds',
      { metadata: { annotations: { [ANNOTATION.allowedClusters]: COPY } } },
      { namespace: 'default', type: 'merge' },
    );
    await waitFor("the clone's first Pod", async () => ((await copyPods()).length > 0 ? true : undefined), 60_000, 500);
  });
});
