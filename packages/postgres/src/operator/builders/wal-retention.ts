/**
 * The default of `max_slot_wal_keep_size`, derived from the data volumes. Pure.
 *
 * Why: each replica has a physical slot on the primary, and a slot keeps every WAL segment its
 * replica has not received yet. A replica that is down (a lost node, a stopped Pod) would otherwise
 * keep WAL until the primary's volume is full, and a full volume stops the primary (postgres
 * PANICs when it cannot write WAL). With a limit the slot is invalidated instead, and the replica
 * re-clones itself when it comes back (the agent's roles/reclone.ts).
 *
 * The rule: a quarter of the smallest data volume of the cluster, in whole megabytes, at least one
 * WAL segment (16MB). The smallest, because any instance can become the primary. A quarter,
 * because pg_wal also holds the WAL between checkpoints (up to `max_wal_size`, 1GB by default)
 * and `wal_keep_size`, and the data itself must still fit: the rest of the volume is theirs.
 * `spec.config.parameters.max_slot_wal_keep_size` overrides it (`-1` turns the limit off).
 */
import { quantityValue } from '@kanri/timing';
import type { PostgresCluster } from '../../api/postgres-cluster.js';

/** One WAL segment (PostgreSQL's default segment size): a limit below it keeps nothing useful. */
const MIN_MB = 16;
const MB = 2 ** 20;

/**
 * The default `max_slot_wal_keep_size` for a cluster (e.g. `'256MB'` for 1Gi volumes), or
 * undefined when no data volume has a size it can read (postgres's own default, no limit, stays).
 *
 * @example
 * ```ts
 * defaultMaxSlotWalKeepSize(cluster); // '5120MB' when the smallest data volume is 20Gi
 * ```
 */
export function defaultMaxSlotWalKeepSize(cluster: Pick<PostgresCluster, 'spec'>): string | undefined {
  const sizes = cluster.spec.instances
    .map((set) => quantityValue(set.dataVolumeClaimSpec.resources.requests.storage))
    .filter((bytes): bytes is number => bytes !== undefined && bytes > 0);
  if (sizes.length === 0) return undefined;
  const smallest = Math.min(...sizes);
  return `${Math.max(MIN_MB, Math.floor(smallest / 4 / MB))}MB`;
}
