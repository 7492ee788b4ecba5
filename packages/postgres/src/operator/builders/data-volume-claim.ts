import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { names } from '../../contract/index.js';
import { instanceLabels } from './labels.js';

/** The data volume of one instance. Owned by the cluster, so deleting the cluster deletes it. Pure. */
export function dataVolumeClaim(cluster: PostgresCluster, instance: string, set: string, setIndex: number) {
  // Auto-grow's bounds are the operator's to act on, not the claim's: a storage limit on a claim
  // means nothing to most provisioners, and a grown claim asks more than the spec anyway.
  const { autoGrow: _, resources, ...claim } = cluster.spec.instances[setIndex]?.dataVolumeClaimSpec ?? {};
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: names.pvc(instance),
      namespace: cluster.metadata?.namespace,
      labels: instanceLabels(cluster.metadata?.name ?? '', set, instance),
    },
    spec: { ...claim, ...(resources ? { resources: { requests: resources.requests } } : {}) },
  } as PersistentVolumeClaim;
}
