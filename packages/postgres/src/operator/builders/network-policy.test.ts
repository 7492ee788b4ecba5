import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL } from '../../contract/index.js';
import { networkPolicy } from './network-policy.js';

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
