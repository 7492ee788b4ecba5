/**
 * `<name>-primary` (read-write) and `<name>-replicas` (read-only) select on the role label the
 * agent keeps on its own Pod, so a failover moves traffic without the operator in the path.
 * `<name>-pods` is headless and lists every instance, ready or not, for stable DNS names. Pure.
 */
import type { Service } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, names, PORT, ROLE } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

export function services(cluster: PostgresCluster): Service[] {
  const name = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const labels = clusterLabels(name);
  const type = cluster.spec.service?.type ?? 'ClusterIP';
  const ports = [{ name: 'postgres', port: PORT.postgres, targetPort: PORT.postgres, protocol: 'TCP' }];
  const forRole = (serviceName: string, role: string): Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: serviceName, namespace, labels },
    spec: { type, ports, selector: { [LABEL.cluster]: name, [LABEL.role]: role } },
  });
  return [
    forRole(names.primaryService(name), ROLE.primary),
    forRole(names.replicasService(name), ROLE.replica),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: names.podsService(name), namespace, labels },
      spec: { clusterIP: 'None', publishNotReadyAddresses: true, ports, selector: { [LABEL.cluster]: name } },
    },
  ];
}
