/**
 * Which instances a cluster should have, and which to add or remove. Pure.
 *
 * An instance is identified by its data volume (PVC), not its Pod: a deleted Pod comes back under
 * the same name and reuses its data, as CloudNativePG does. Instances are numbered per set and
 * never renumbered, so removing one in the middle (because the primary sits at the end) leaves a
 * gap instead of renaming others. Scaling down removes replicas only, least useful first.
 */

import type { PostgresClusterSpec } from '../api/postgres-cluster.js';
import { names } from '../contract/index.js';

export interface ObservedInstance {
  readonly name: string;
  readonly set: string;
  readonly hasPod: boolean;
  readonly hasVolume: boolean;
  readonly isPrimary: boolean;
  readonly ready: boolean;
  /** Being removed: its PVC is being deleted (or, without a PVC, its Pod). A Pod deleted on a kept volume is being replaced, not removed. */
  readonly deleting: boolean;
}

export interface PlannedInstance {
  readonly name: string;
  readonly set: string;
  readonly setIndex: number;
}

export interface InstancePlan {
  /** Instances that should exist (Pod and PVC), existing ones first. */
  readonly keep: PlannedInstance[];
  /** Of `keep`, those with no volume yet. */
  readonly create: PlannedInstance[];
  /** Instances to remove (never the primary). */
  readonly remove: ObservedInstance[];
  /** Instance that runs initdb: set only while the cluster has never been initialised. */
  readonly initdb: string | undefined;
}

/** Name of an instance set: its own, or `instance<N>` by 1-based position. */
export function setName(spec: PostgresClusterSpec, index: number): string {
  return spec.instances[index]?.name ?? `instance${index + 1}`;
}

/** Ordinal of an instance named `<cluster>-<set>-<n>`, or -1. */
export function ordinalOf(cluster: string, set: string, name: string): number {
  const prefix = `${cluster}-${set}-`;
  if (!name.startsWith(prefix)) return -1;
  const n = Number(name.slice(prefix.length));
  return Number.isInteger(n) && n >= 0 ? n : -1;
}

/**
 * Plans the instances of `cluster`.
 *
 * @param initialised whether the cluster ever had a primary (status.systemIdentifier or a report):
 *   once true, no instance is ever initialised from scratch again, so losing the first volume
 *   can never start a second, diverging database.
 */
export function planInstances(
  cluster: string,
  spec: PostgresClusterSpec,
  observed: readonly ObservedInstance[],
  initialised: boolean,
): InstancePlan {
  const keep: PlannedInstance[] = [];
  const create: PlannedInstance[] = [];
  const remove: ObservedInstance[] = [];
  const setNames = spec.instances.map((_, i) => setName(spec, i));
  spec.instances.forEach((set, setIndex) => {
    const name = setNames[setIndex] as string;
    const members = observed
      .filter((o) => o.set === name && !o.deleting)
      .sort((a, b) => ordinalOf(cluster, name, a.name) - ordinalOf(cluster, name, b.name));
    const want = set.replicas;
    let kept = members;
    if (members.length > want) {
      // Least useful first: not ready, then highest ordinal. The primary is never a candidate.
      const candidates = members
        .filter((m) => !m.isPrimary)
        .sort(
          (a, b) =>
            Number(a.ready) - Number(b.ready) || ordinalOf(cluster, name, b.name) - ordinalOf(cluster, name, a.name),
        );
      const victims = new Set(candidates.slice(0, members.length - want).map((m) => m.name));
      remove.push(...members.filter((m) => victims.has(m.name)));
      kept = members.filter((m) => !victims.has(m.name));
    }
    for (const m of kept) {
      keep.push({ name: m.name, set: name, setIndex });
      if (!m.hasVolume) create.push({ name: m.name, set: name, setIndex });
    }
    const used = new Set(observed.filter((o) => o.set === name).map((o) => ordinalOf(cluster, name, o.name)));
    let next = 0;
    for (let i = kept.length; i < want; i++) {
      while (used.has(next)) next++;
      used.add(next);
      const planned = { name: names.pod(cluster, name, next), set: name, setIndex };
      keep.push(planned);
      create.push(planned);
    }
  });
  // Members of sets no longer declared are removed too, replicas only.
  for (const o of observed) {
    if (!setNames.includes(o.set) && !o.isPrimary && !o.deleting) remove.push(o);
  }
  // Until a primary has reported, no instance holds data (replicas copy from the primary), so
  // re-choosing the first instance after an operator restart is safe. The agent refuses initdb
  // as well when the leader Lease exists.
  const initdb = initialised ? undefined : keep[0]?.name;
  return { keep, create, remove, initdb };
}
