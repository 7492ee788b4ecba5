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
import type { PostgresCluster } from '../../api/postgres-cluster.js';

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/;

/** One WAL segment (PostgreSQL's default segment size): a limit below it keeps nothing useful. */
const MIN_MB = 16;
const MB = 2 ** 20;

/**
 * The bytes of a Kubernetes storage quantity (the forms the API admits, see volume-claim-spec.ts);
 * undefined when it is not one.
 *
 * @example
 * ```ts
 * quantityBytes('1Gi'); // 1073741824
 * quantityBytes('500M'); // 500000000
 * ```
 */
export function quantityBytes(quantity: string): number | undefined {
  const match = QUANTITY.exec(quantity.trim());
  if (!match) return undefined;
  return Math.floor(Number(match[1]) * (UNITS[match[2] ?? ''] ?? 1));
}

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
    .map((set) => quantityBytes(set.dataVolumeClaimSpec.resources.requests.storage))
    .filter((bytes): bytes is number => bytes !== undefined && bytes > 0);
  if (sizes.length === 0) return undefined;
  const smallest = Math.min(...sizes);
  return `${Math.max(MIN_MB, Math.floor(smallest / 4 / MB))}MB`;
}
