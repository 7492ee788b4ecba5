/**
 * The ConfigMap clients read the server's CA from (names.clientCa): `ca.crt` as the TLS Secret
 * hands it to the instances, and nothing else. Pure.
 */
import type { ConfigMap } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { names } from '../../contract/index.js';
import { clusterLabels } from './labels.js';

/**
 * @example
 * ```ts
 * await ctx.apply(clientCaConfigMap(cluster, serverCaPem)); // hippo-postgres-ca: { 'ca.crt': … }
 * ```
 */
export function clientCaConfigMap(cluster: PostgresCluster, serverCaPem: string): ConfigMap {
  const name = cluster.metadata?.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: names.clientCa(name), namespace: cluster.metadata?.namespace, labels: clusterLabels(name) },
    data: { 'ca.crt': serverCaPem },
  };
}
