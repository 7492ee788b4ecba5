/**
 * Which physical replication slots the primary should keep: one per other Pod of the cluster
 * (names.slot(pod)). Only slots with the agent's prefix are ever dropped, and never while a
 * replica is streaming through them. A wanted slot that `max_slot_wal_keep_size` invalidated
 * (wal_status `lost`: the WAL its replica needs is gone) is recreated once unused: the replica
 * re-clones through it (roles/reclone.ts), and a new slot reserves WAL from that clone's start.
 */
import { names } from '../../contract/index.js';

export const SLOT_PREFIX = 'kanri_';

export interface ExistingSlot {
  readonly name: string;
  readonly active: boolean;
  /** pg_replication_slots.wal_status is `lost`: invalidated, it keeps no WAL any more. */
  readonly lost?: boolean;
}

/**
 * @example
 * ```ts
 * planSlots('db-1', ['db-1', 'db-2'], [{ name: 'kanri_db_3', active: false }]);
 * // { create: ['kanri_db_2'], drop: ['kanri_db_3'], recreate: [] }
 * ```
 */
export function planSlots(
  self: string,
  pods: readonly string[],
  existing: readonly ExistingSlot[],
): { create: string[]; drop: string[]; recreate: string[] } {
  const wanted = new Set(pods.filter((pod) => pod !== self).map((pod) => names.slot(pod)));
  const have = new Set(existing.map((slot) => slot.name));
  return {
    create: [...wanted].filter((slot) => !have.has(slot)).sort(),
    drop: existing
      .filter((slot) => slot.name.startsWith(SLOT_PREFIX) && !wanted.has(slot.name) && !slot.active)
      .map((slot) => slot.name)
      .sort(),
    recreate: existing
      .filter((slot) => slot.lost && !slot.active && wanted.has(slot.name))
      .map((slot) => slot.name)
      .sort(),
  };
}
