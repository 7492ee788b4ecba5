import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InvalidError, KubeClient, type KubeObject } from '@kanri/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kanri/testenv';
import { parse } from 'yaml';
import { type PostgresCluster, PostgresClusterResource } from '../src/index.js';

const seed = fileURLToPath(new URL('../../test/fixtures/seed-pgo-example.yaml', import.meta.url));

const volume = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };

describe('PostgresCluster admission against a real API server', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  before(async () => {
    cp = await startControlPlane();
    client = await KubeClient.load({ kubeconfig: cp.kubeconfigPath });
    await client
      .resource<KubeObject>('apiextensions.k8s.io/v1', 'CustomResourceDefinition')
      .create(PostgresClusterResource.crd);
    await waitFor('the PostgresCluster CRD to be served', () =>
      client.resource(PostgresClusterResource.apiVersion, 'PostgresCluster').list({ namespace: 'default' }),
    );
  });
  after(async () => {
    await client?.close();
    await cp?.stop();
  });

  const clusters = () => client.resource<PostgresCluster>(PostgresClusterResource.apiVersion, 'PostgresCluster');
  const rejection = async (spec: unknown) => {
    const error = await clusters()
      .create({ metadata: { name: 'bad', namespace: 'default' }, spec } as PostgresCluster, { dryRun: true })
      .catch((e: unknown) => e);
    assert.ok(error instanceof InvalidError, `rejected as invalid: ${error}`);
    return error instanceof Error ? error.message : String(error);
  };

  it("applies the seed's example with only apiVersion changed (with its S3 credentials Secret), with defaults", async () => {
    const text = await readFile(seed, 'utf8');
    const example = parse(text.slice(text.indexOf('apiVersion: postgres-operator'))) as PostgresCluster;
    example.apiVersion = PostgresClusterResource.apiVersion;
    await client.resource<KubeObject>('v1', 'Secret').create({
      metadata: { name: 'pgo-s3-creds', namespace: 'default' },
      stringData: { 's3.conf': '[global]\nrepo1-s3-key=AKIAEXAMPLE\nrepo1-s3-key-secret=example\n' },
    } as KubeObject);
    const created = await clusters().create({ ...example, metadata: { ...example.metadata, namespace: 'default' } });
    assert.equal(created.spec.postgresVersion, 16);
    assert.equal(created.spec.instances[0]?.replicas, 3);
    assert.deepEqual(created.spec.instances[0]?.dataVolumeClaimSpec.resources.requests, { storage: '20Gi' });
    assert.deepEqual(created.spec.backups?.pgbackrest.configuration, [{ secret: { name: 'pgo-s3-creds' } }]);
    assert.deepEqual(created.spec.backups?.pgbackrest.repos, [
      {
        name: 'repo1',
        s3: { bucket: 'my-backups', endpoint: 's3.ap-northeast-1.amazonaws.com', region: 'ap-northeast-1' },
      },
    ]);
  });

  it('rejects replicas: 0 naming the field', async () => {
    const message = await rejection({ postgresVersion: 15, instances: [{ replicas: 0, dataVolumeClaimSpec: volume }] });
    assert.match(message, /spec\.instances\[0\]\.replicas/);
  });

  it('rejects an unsupported postgresVersion naming the field', async () => {
    const message = await rejection({ postgresVersion: 12, instances: [{ dataVolumeClaimSpec: volume }] });
    assert.match(message, /spec\.postgresVersion/);
  });

  it('rejects a missing dataVolumeClaimSpec naming the field', async () => {
    const message = await rejection({ postgresVersion: 15, instances: [{ replicas: 1 }] });
    assert.match(message, /spec\.instances\[0\]\.dataVolumeClaimSpec/);
  });

  it('rejects HA timings that cannot work, and parameters the agent owns (CEL)', async () => {
    const ha = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      ha: { leaseDurationSeconds: 5, renewDeadlineSeconds: 5 },
    });
    assert.match(ha, /spec\.ha\.renewDeadlineSeconds/);
    assert.match(ha, /renewDeadlineSeconds must be less than leaseDurationSeconds/);
    const reserved = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      config: { parameters: { listen_addresses: '*' } },
    });
    assert.match(reserved, /spec\.config\.parameters/);
    assert.match(reserved, /managed by the operator/);
    const duplicate = await rejection({
      postgresVersion: 15,
      instances: [
        { name: 'a', dataVolumeClaimSpec: volume },
        { name: 'a', dataVolumeClaimSpec: volume },
      ],
    });
    assert.match(duplicate, /spec\.instances: .*instance set names must be unique/);
  });

  it('rejects a synchronous number the replicas cannot meet, naming the field', async () => {
    const message = await rejection({
      postgresVersion: 15,
      instances: [{ replicas: 2, dataVolumeClaimSpec: volume }],
      ha: { synchronous: { number: 2 } },
    });
    assert.match(message, /spec\.ha\.synchronous\.number/);
    assert.match(message, /must be less than the number of instances/);
    const ok = await clusters().create(
      {
        metadata: { name: 'sync-ok', namespace: 'default' },
        spec: {
          postgresVersion: 15,
          instances: [{ replicas: 3, dataVolumeClaimSpec: volume }],
          ha: { synchronous: {} },
        },
      } as PostgresCluster,
      { dryRun: true },
    );
    assert.equal(ok.spec.ha?.synchronous?.number, 1);
  });

  it('rejects role options outside the allow-list (no SQL through options)', async () => {
    const message = await rejection({
      postgresVersion: 15,
      instances: [{ dataVolumeClaimSpec: volume }],
      users: [{ name: 'app', options: 'SUPERUSER; DROP TABLE x; --' }],
    });
    assert.match(message, /spec\.users\[0\]\.options/);
  });
});
