/**
 * `<name>-primary` (read-write) and `<name>-replicas` (read-only) select on the role label the
 * agent keeps on its own Pod, so a failover moves traffic without the operator in the path.
 * `<name>-pods` is headless and lists every instance, ready or not, for stable DNS names. Pure.
 */
import type { Service } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, names, PORT, ROLE } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

type ServiceSpec = PostgresCluster['spec']['service'];

export function services(cluster: PostgresCluster): Service[] {
  const name = cluster.metadata?.name ?? '';
  const namespace = cluster.metadata?.namespace;
  const labels = clusterLabels(name);
  const ports = [{ name: 'postgres', port: PORT.postgres, targetPort: PORT.postgres, protocol: 'TCP' }];
  // PGO's split: spec.service exposes the primary, spec.replicaService the replicas (ClusterIP
  // unless it says otherwise), so exposing the primary never exposes the replicas too.
  const forRole = (serviceName: string, role: string, exposed: ServiceSpec | undefined): Service => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: serviceName,
      namespace,
      // The user's labels first: the cluster's own must stay what selects and guards the Service.
      labels: { ...exposed?.metadata?.labels, ...labels },
      ...(exposed?.metadata?.annotations ? { annotations: exposed.metadata.annotations } : {}),
    },
    spec: {
      type: exposed?.type ?? 'ClusterIP',
      ports: exposed?.nodePort ? ports.map((p) => ({ ...p, nodePort: exposed.nodePort })) : ports,
      selector: { [LABEL.cluster]: name, [LABEL.role]: role },
      ...(exposed?.externalTrafficPolicy ? { externalTrafficPolicy: exposed.externalTrafficPolicy } : {}),
      ...(exposed?.internalTrafficPolicy ? { internalTrafficPolicy: exposed.internalTrafficPolicy } : {}),
      ...(exposed?.ipFamilies ? { ipFamilies: exposed.ipFamilies } : {}),
      ...(exposed?.ipFamilyPolicy ? { ipFamilyPolicy: exposed.ipFamilyPolicy } : {}),
    },
  });
  return [
    forRole(names.primaryService(name), ROLE.primary, cluster.spec.service),
    forRole(names.replicasService(name), ROLE.replica, cluster.spec.replicaService),
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: names.podsService(name), namespace, labels },
      spec: { clusterIP: 'None', publishNotReadyAddresses: true, ports, selector: { [LABEL.cluster]: name } },
    },
  ];
}
