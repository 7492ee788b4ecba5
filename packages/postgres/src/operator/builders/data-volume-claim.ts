import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { names } from '../../contract/index.js';
import { instanceLabels } from './labels.js';

/** The data volume of one instance. Owned by the cluster, so deleting the cluster deletes it. Pure. */
export function dataVolumeClaim(cluster: PostgresCluster, instance: string, set: string, setIndex: number) {
  const claim = cluster.spec.instances[setIndex]?.dataVolumeClaimSpec;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: names.pvc(instance),
      namespace: cluster.metadata?.namespace,
      labels: instanceLabels(cluster.metadata?.name ?? '', set, instance),
    },
    spec: { ...claim },
  } as PersistentVolumeClaim;
}
