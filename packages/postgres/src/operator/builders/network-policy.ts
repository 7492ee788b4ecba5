/**
 * The cluster's NetworkPolicy: PostgreSQL (5432) stays open to clients anywhere, while the agents'
 * ports (8000: probes and metrics; 8001: the peer API that failover ranking and the failsafe vote
 * trust) and pgBackRest's TLS server (8432) take connections only from the cluster's own Pods.
 * A Pod outside the cluster can then no longer reach a peer's `/status` to forge a position.
 * Policies add up, so a user who scrapes metrics allows the scraper to 8000 with a policy of their
 * own. Kubelet probes come from the node, which network plugins let through. Pure.
 */
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { LABEL, names, PGBACKREST_SERVER_PORT, PORT } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

/**
 * @example
 * ```ts
 * await ctx.apply(networkPolicy(cluster)); // hippo: 5432 from anywhere, 8000 and 8432 from hippo's Pods
 * ```
 */
export function networkPolicy(cluster: PostgresCluster): NetworkPolicy {
  const c = cluster.metadata?.name ?? '';
  const members = { podSelector: { matchLabels: { [LABEL.cluster]: c } } };
  const tcp = (port: number) => ({ protocol: 'TCP', port });
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: names.networkPolicy(c), namespace: cluster.metadata?.namespace, labels: clusterLabels(c) },
    spec: {
      // Every Pod of the cluster: the instances and the repo host.
      podSelector: members.podSelector,
      policyTypes: ['Ingress'],
      ingress: [
        { ports: [tcp(PORT.postgres)] },
        { from: [members], ports: [tcp(PORT.agent), tcp(PORT.peer), tcp(PGBACKREST_SERVER_PORT)] },
      ],
    },
  };
}
