/**
 * The cluster's NetworkPolicy: PostgreSQL (5432) stays open to clients anywhere, while the agents'
 * ports (8000: probes and metrics; 8001: the peer API that failover ranking and the failsafe vote
 * trust) and pgBackRest's TLS server (8432) take connections only from the cluster's own Pods.
 * A Pod outside the cluster can then no longer reach a peer's `/status` to forge a position.
 * Policies add up, so a user who scrapes metrics allows the scraper to 8000 with a policy of their
 * own. Kubelet probes come from the node, which network plugins let through.
 *
 * A clone from a volume repo reads it through the source's repo host's clone port (8433, read-only,
 * for granted Pods alone), which no policy of the source opens: the clone's policy
 * (`cloneSourcePolicy`) lets the clone's Pods in there, while the clone restores. Pure.
 */
import type { NetworkPolicy } from 'kubernetes-types/networking/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import {
  LABEL,
  names,
  PGBACKREST_CLONE_PORT,
  PGBACKREST_SERVER_PORT,
  PORT,
  REPO_HOST_LABEL,
  type RestoreSource,
} from '../../contract/index.js';
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

/**
 * The way through for a clone restoring from another cluster's volume repo: from the clone's Pods
 * to the source's repo host, on its clone port alone. Policies add up, so this one beside the
 * source's own opens exactly that. The clone owns it, so the source's policy and spec never change
 * for a clone, and it goes with the clone; the operator removes it once the clone has restored.
 * Undefined when the clone reads no repo host (an S3 repo, or no clone at all).
 *
 * @example
 * ```ts
 * const policy = cloneSourcePolicy(copy, resolved.source); // copy's Pods → vault-repo-host:8433
 * ```
 */
export function cloneSourcePolicy(
  clone: PostgresCluster,
  source: RestoreSource | undefined,
): NetworkPolicy | undefined {
  if (!source?.gateway) return undefined;
  const c = clone.metadata?.name ?? '';
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: names.cloneSourcePolicy(c), namespace: clone.metadata?.namespace, labels: clusterLabels(c) },
    spec: {
      podSelector: { matchLabels: { [LABEL.cluster]: source.cluster, [REPO_HOST_LABEL]: 'true' } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { [LABEL.cluster]: c } } }],
          ports: [{ protocol: 'TCP', port: PGBACKREST_CLONE_PORT }],
        },
      ],
    },
  };
}
