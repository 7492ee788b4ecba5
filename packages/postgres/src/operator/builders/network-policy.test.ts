import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, REPO_HOST_LABEL, type RestoreSource } from '../../contract/index.js';
import { cloneSourcePolicy, networkPolicy } from './network-policy.js';

it("opens PostgreSQL to clients, and the agents' and pgBackRest's ports to the cluster's Pods only", () => {
  const cluster = { metadata: { name: 'hippo', namespace: 'db' }, spec: {} } as unknown as PostgresCluster;
  const policy = networkPolicy(cluster);
  assert.equal(policy.metadata?.name, 'hippo-members');
  assert.deepEqual(policy.spec?.podSelector, { matchLabels: { [LABEL.cluster]: 'hippo' } });
  assert.deepEqual(policy.spec?.policyTypes, ['Ingress']);
  const [clients, members] = policy.spec?.ingress ?? [];
  assert.equal(clients?.from, undefined, 'any client may reach postgres');
  assert.deepEqual(clients?.ports, [{ protocol: 'TCP', port: 5432 }]);
  assert.deepEqual(members?.from, [{ podSelector: { matchLabels: { [LABEL.cluster]: 'hippo' } } }]);
  assert.deepEqual(
    members?.ports?.map((p) => p.port),
    [8000, 8001, 8432],
  );
  assert.equal(policy.spec?.ingress?.length, 2, 'no other port is open');
});

it("lets a clone's Pods reach its source's repo host on pgBackRest's port, and nothing more", () => {
  const copy = { metadata: { name: 'copy', namespace: 'db' }, spec: {} } as unknown as PostgresCluster;
  const source: RestoreSource = {
    id: 'clone',
    namespace: 'db',
    cluster: 'hippo',
    stanza: 'db',
    repo: { name: 'repo1', volume: {} },
    configDir: '/etc/pgbackrest/source',
    gateway: { address: '10.0.0.9', certificate: 'PEM' },
  };
  const policy = cloneSourcePolicy(copy, source);
  assert.equal(policy?.metadata?.name, 'copy-clone-source');
  assert.equal(policy?.metadata?.namespace, 'db');
  assert.equal(policy?.metadata?.labels?.[LABEL.cluster], 'copy', "the clone's, deleted with it");
  assert.deepEqual(policy?.spec?.podSelector, { matchLabels: { [LABEL.cluster]: 'hippo', [REPO_HOST_LABEL]: 'true' } });
  assert.deepEqual(policy?.spec?.policyTypes, ['Ingress']);
  assert.deepEqual(policy?.spec?.ingress, [
    { from: [{ podSelector: { matchLabels: { [LABEL.cluster]: 'copy' } } }], ports: [{ protocol: 'TCP', port: 8433 }] },
  ]);
  // The source's own policy is the source's alone: a clone changes nothing of it.
  const hippo = { metadata: { name: 'hippo', namespace: 'db' }, spec: {} } as unknown as PostgresCluster;
  assert.deepEqual(networkPolicy(hippo).spec?.ingress?.[1]?.from, [
    { podSelector: { matchLabels: { [LABEL.cluster]: 'hippo' } } },
  ]);
  const { gateway: _, ...s3 } = source;
  assert.equal(
    cloneSourcePolicy(copy, { ...s3, repo: { name: 'repo1', s3: { bucket: 'b', endpoint: 'e', region: 'r' } } }),
    undefined,
    'an S3 repo needs no way through',
  );
  assert.equal(cloneSourcePolicy(copy, undefined), undefined);
});
