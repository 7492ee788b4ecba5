/**
 * Which PostgresCluster a change wakes beside its own: a clone's source. The source grants the
 * clone's Pods read access on its repo host (clone-actions.ts), so it must look again when a clone
 * that names it comes, changes or goes, and when one of the clone's Pods publishes its key,
 * reports its restore, or goes. A Pod names only its own cluster, so the sources of the clones are
 * remembered from the clusters seen: every cluster is seen when the operator starts, and again on
 * each change. Pure but for that memory.
 */
import type { KubeObject } from '@kanri/client';
import type { MapFunction } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { LABEL } from '../contract/index.js';

/**
 * The map functions for `.watches(API_VERSION, KIND, …)` and `.watches('v1', 'Pod', …)`, sharing
 * what the first has seen.
 *
 * @example
 * ```ts
 * const wake = cloneSourceWakeups();
 * controller(API_VERSION, KIND).watches(API_VERSION, KIND, wake.clusters, generationChanged()).watches('v1', 'Pod', wake.pods);
 * ```
 */
export function cloneSourceWakeups(): { readonly clusters: MapFunction; readonly pods: MapFunction } {
  /** `<namespace>/<clone>` → the source it names. */
  const sources = new Map<string, string>();
  const key = (namespace: string | undefined, name: string | undefined) => `${namespace ?? ''}/${name ?? ''}`;
  return {
    clusters: (object: KubeObject) => {
      const { namespace, name } = object.metadata ?? {};
      const source = (object as PostgresCluster).spec?.dataSource?.postgresCluster?.clusterName;
      if (source) sources.set(key(namespace, name), source);
      else sources.delete(key(namespace, name));
      return source ? [{ namespace, name: source }] : [];
    },
    pods: (object: KubeObject) => {
      const { namespace, labels } = object.metadata ?? {};
      const source = sources.get(key(namespace, labels?.[LABEL.cluster]));
      return source ? [{ namespace, name: source }] : [];
    },
  };
}
