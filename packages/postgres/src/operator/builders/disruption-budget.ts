import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, names } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

/**
 * Voluntary disruptions (node drains) take one instance at a time. Pure.
 *
 * As `minAvailable: instances − 1`, not `maxUnavailable: 1`: the disruption controller turns a
 * `maxUnavailable` into a count through the Pods' owner's scale subresource, and the instance
 * Pods' owner (the PostgresCluster) has none, so such a budget fails to sync and refuses every
 * eviction. An integer `minAvailable` needs no scale.
 */
export function disruptionBudget(cluster: PostgresCluster): PodDisruptionBudget {
  const c = cluster.metadata?.name ?? '';
  const instances = cluster.spec.instances.reduce((sum, set) => sum + set.replicas, 0);
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: names.pdb(c), namespace: cluster.metadata?.namespace, labels: clusterLabels(c) },
    spec: {
      minAvailable: Math.max(0, instances - 1),
      // Instances only: the repo host carries the cluster label too, and counting it would let
      // one more instance go.
      selector: {
        matchLabels: { [LABEL.cluster]: c },
        matchExpressions: [{ key: LABEL.instance, operator: 'Exists' }],
      },
    },
  };
}
