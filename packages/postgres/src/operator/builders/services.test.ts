import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL } from '../../contract/index.js';
import { services } from './services.js';

const cluster = (spec: Record<string, unknown>) =>
  ({ metadata: { name: 'db', namespace: 'apps' }, spec: { instances: [], ...spec } }) as unknown as PostgresCluster;

describe('services', () => {
  it("exposes the primary as spec.service says and the replicas as spec.replicaService says, as PGO's split", () => {
    const [primary, replicas] = services(
      cluster({
        service: {
          type: 'LoadBalancer',
          nodePort: 32001,
          externalTrafficPolicy: 'Local',
          metadata: { labels: { team: 'a', [LABEL.cluster]: 'other' }, annotations: { 'lb.example/internal': 'true' } },
        },
        replicaService: {
          type: 'NodePort',
          internalTrafficPolicy: 'Local',
          ipFamilies: ['IPv4'],
          ipFamilyPolicy: 'SingleStack',
        },
      }),
    );
    assert.equal(primary?.spec?.type, 'LoadBalancer');
    assert.equal(primary?.spec?.ports?.[0]?.nodePort, 32001);
    assert.equal(primary?.spec?.externalTrafficPolicy, 'Local');
    assert.equal(primary?.metadata?.labels?.team, 'a');
    assert.equal(primary?.metadata?.labels?.[LABEL.cluster], 'db', "the cluster's own label wins");
    assert.deepEqual(primary?.metadata?.annotations, { 'lb.example/internal': 'true' });
    assert.equal(replicas?.spec?.type, 'NodePort');
    assert.equal(replicas?.spec?.ports?.[0]?.nodePort, undefined, 'allocated by the API server');
    assert.equal(replicas?.spec?.internalTrafficPolicy, 'Local');
    assert.deepEqual(replicas?.spec?.ipFamilies, ['IPv4']);
    assert.equal(replicas?.spec?.ipFamilyPolicy, 'SingleStack');
    assert.equal(replicas?.metadata?.annotations, undefined);
  });

  it('keeps the replicas private when only the primary is exposed, and both ClusterIP by default', () => {
    const [primary, replicas, pods] = services(cluster({ service: { type: 'LoadBalancer' } }));
    assert.equal(primary?.spec?.type, 'LoadBalancer');
    assert.equal(replicas?.spec?.type, 'ClusterIP');
    assert.equal(pods?.spec?.clusterIP, 'None');
    const [plainPrimary, plainReplicas] = services(cluster({}));
    assert.deepEqual([plainPrimary?.spec?.type, plainReplicas?.spec?.type], ['ClusterIP', 'ClusterIP']);
    assert.deepEqual(Object.keys(plainPrimary?.spec ?? {}).sort(), ['ports', 'selector', 'type']);
  });
});
