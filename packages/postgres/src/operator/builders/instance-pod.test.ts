import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { CREDENTIAL_FILE, ENV, PATH } from '../../contract/index.js';
import { instancePod } from './instance-pod.js';
import { repoHostPod } from './repo-host.js';

const cluster = {
  metadata: { name: 'db', namespace: 'apps', uid: 'u1' },
  spec: {
    postgresVersion: 16,
    instances: [{ name: 'i', replicas: 1, dataVolumeClaimSpec: {} }],
    backups: { pgbackrest: { repos: [{ name: 'repo1', volume: { volumeClaimSpec: {} } }] } },
  },
} as unknown as PostgresCluster;

it('runs both Kanri Pods with a pause container as PID 1, which reaps the orphans Node would leave as zombies', () => {
  const pod = instancePod({ cluster, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
  assert.equal(pod.spec?.shareProcessNamespace, true);
  assert.equal(repoHostPod(cluster).spec?.shareProcessNamespace, true);
});

it('gives the instance its passwords as files of a read-only volume, never in its environment', () => {
  const pod = instancePod({ cluster, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
  const container = pod.spec?.containers?.[0];
  const env = (container?.env ?? []).map((e) => e.name);
  assert.equal(env.includes(ENV.superuserPassword), false);
  assert.equal(env.includes(ENV.replicationPassword), false);
  assert.ok((container?.env ?? []).every((e) => e.valueFrom?.secretKeyRef === undefined));
  assert.deepEqual(
    container?.volumeMounts?.find((m) => m.name === 'credentials'),
    { name: 'credentials', mountPath: PATH.credentials, readOnly: true },
  );
  const volume = pod.spec?.volumes?.find((v) => v.name === 'credentials');
  assert.equal(volume?.projected?.defaultMode, 0o440);
  assert.deepEqual(
    volume?.projected?.sources?.map((s) => [s.secret?.name, s.secret?.items?.[0]?.path]),
    [
      ['db-superuser', CREDENTIAL_FILE.superuser],
      ['db-replication', CREDENTIAL_FILE.replication],
    ],
  );
});
