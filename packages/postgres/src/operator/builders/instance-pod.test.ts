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

it("carries PGO's image pull and placement fields into the instance and repo host Pods, and nothing when they are unset", () => {
  const spread = {
    maxSkew: 1,
    topologyKey: 'topology.kubernetes.io/zone',
    whenUnsatisfiable: 'DoNotSchedule',
    labelSelector: { matchLabels: { 'postgres.kanri.dev/cluster': 'db' } },
  };
  const placed = {
    ...cluster,
    spec: {
      ...cluster.spec,
      imagePullPolicy: 'Always',
      imagePullSecrets: [{ name: 'registry' }],
      instances: [
        { ...cluster.spec.instances[0], priorityClassName: 'databases', topologySpreadConstraints: [spread] },
      ],
    },
  } as unknown as PostgresCluster;
  const pod = instancePod({ cluster: placed, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
  assert.equal(pod.spec?.containers?.[0]?.imagePullPolicy, 'Always');
  assert.deepEqual(pod.spec?.imagePullSecrets, [{ name: 'registry' }]);
  assert.equal(pod.spec?.priorityClassName, 'databases');
  assert.deepEqual(pod.spec?.topologySpreadConstraints, [spread]);
  const repoHost = repoHostPod(placed);
  assert.equal(repoHost.spec?.containers?.[0]?.imagePullPolicy, 'Always');
  assert.deepEqual(repoHost.spec?.imagePullSecrets, [{ name: 'registry' }]);
  // Unset, the Pods are as before: a running cluster's template (and so its Pods) does not change.
  const plain = instancePod({ cluster, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
  for (const key of ['imagePullSecrets', 'priorityClassName', 'topologySpreadConstraints'] as const)
    assert.equal(plain.spec?.[key], undefined, key);
  assert.equal(plain.spec?.containers?.[0]?.imagePullPolicy, undefined);
});

it('adds supplementalGroups to both Pods, and leaves out the default anti-affinity with disableDefaultPodScheduling', () => {
  const grouped = {
    ...cluster,
    spec: { ...cluster.spec, supplementalGroups: [65534], disableDefaultPodScheduling: true },
  } as unknown as PostgresCluster;
  const pod = instancePod({ cluster: grouped, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
  assert.deepEqual(pod.spec?.securityContext?.supplementalGroups, [65534]);
  assert.equal(pod.spec?.securityContext?.runAsNonRoot, true, 'the rest of the security context stands');
  assert.deepEqual(repoHostPod(grouped).spec?.securityContext?.supplementalGroups, [65534]);
  assert.equal(pod.spec?.affinity, undefined);
  const plain = instancePod({ cluster, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' });
  assert.ok(plain.spec?.affinity?.podAntiAffinity, 'the default spreads instances over nodes');
  assert.equal(plain.spec?.securityContext?.supplementalGroups, undefined);
  // An instance set's own affinity wins either way.
  const own = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } };
  const set = { ...grouped, spec: { ...grouped.spec, instances: [{ ...grouped.spec.instances[0], affinity: own }] } };
  assert.deepEqual(
    instancePod({ cluster: set as PostgresCluster, name: 'db-i-0', set: 'i', setIndex: 0, bootstrap: 'initdb' }).spec
      ?.affinity,
    own,
  );
});
