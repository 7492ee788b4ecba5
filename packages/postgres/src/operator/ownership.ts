/**
 * Whether an object that carries a name this cluster needs is the cluster's to use. Generated
 * names can meet another object's (another cluster's, an application's, one a user planted), and
 * using such an object hands over what it holds: a CA that another cluster's servers trust, a
 * password, a data volume. Pure.
 */
import type { OwnerReference } from 'kubernetes-types/meta/v1.js';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { LABEL } from '../contract/index.js';

/** Any object's metadata, as the cache or the API server has it. */
export interface OwnedObject {
  readonly metadata?: {
    readonly ownerReferences?: readonly OwnerReference[] | undefined;
    readonly labels?: Readonly<Record<string, string>> | undefined;
  };
}

/**
 * Who holds `object` instead of `cluster`, in words, or undefined when it is the cluster's own:
 * - controlled by the cluster (its controller ownerReference has the cluster's uid): every object
 *   the operator has ever created carries one, since it creates and applies only through the
 *   reconcile context, which sets it;
 * - or controlled by nothing and labelled `postgres.kanri.dev/cluster=<cluster>`: one left behind
 *   by an earlier cluster of this name deleted with `--cascade=orphan`.
 *
 * @example
 * ```ts
 * foreignOwner({ metadata: { ownerReferences: [{ kind: 'PostgresCluster', name: 'x', uid: 'u1', controller: true, apiVersion: 'v1' }] } }, cluster);
 * // 'PostgresCluster x (uid u1)'
 * ```
 */
export function foreignOwner(object: OwnedObject, cluster: PostgresCluster): string | undefined {
  const controller = object.metadata?.ownerReferences?.find((r) => r.controller);
  if (controller) {
    if (controller.uid === cluster.metadata?.uid) return undefined;
    return `${controller.kind} ${controller.name} (uid ${controller.uid})`;
  }
  const name = cluster.metadata?.name ?? '';
  if (object.metadata?.labels?.[LABEL.cluster] === name) return undefined;
  return `no controller, and no label ${LABEL.cluster}=${name}: someone else's`;
}
