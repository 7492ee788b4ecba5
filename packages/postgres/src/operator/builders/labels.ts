import { LABEL } from '../../contract/index.js';

/** Labels on every object of a cluster; Services and the PDB select on the cluster label. */
export function clusterLabels(cluster: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'postgres',
    'app.kubernetes.io/instance': cluster,
    'app.kubernetes.io/managed-by': 'kanri',
    [LABEL.cluster]: cluster,
  };
}

export function instanceLabels(cluster: string, set: string, instance: string): Record<string, string> {
  return { ...clusterLabels(cluster), [LABEL.instanceSet]: set, [LABEL.instance]: instance };
}
