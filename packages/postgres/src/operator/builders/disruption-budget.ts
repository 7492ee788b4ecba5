import type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, names } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

/** Voluntary disruptions (node drains) take one instance at a time. Pure. */
export function disruptionBudget(cluster: PostgresCluster): PodDisruptionBudget {
  const c = cluster.metadata?.name ?? '';
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: names.pdb(c), namespace: cluster.metadata?.namespace, labels: clusterLabels(c) },
    spec: { maxUnavailable: 1, selector: { matchLabels: { [LABEL.cluster]: c } } },
  };
}
