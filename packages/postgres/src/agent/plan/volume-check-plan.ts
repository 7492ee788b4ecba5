/**
 * Whether an existing PGDATA may be used as it is, checked at every start before postgres runs.
 * The case it is for: a volume retained by `whenScaled: Retain` and reattached by a later
 * scale-up, perhaps of another cluster of the same name. Its system identifier must be the
 * cluster's: another cluster's data must never stream, report or lead here. Its timeline is
 * stated, and a timeline behind the leader's takes the usual way (follow; pg_rewind when its
 * history diverged; never leading, see contract/leader-history.ts). Pure.
 */
import type { Bootstrap } from '../../contract/index.js';

export interface VolumeCheckInput {
  /** From pg_controldata of this PGDATA. */
  readonly own: { readonly systemIdentifier: string; readonly timeline: number };
  /** The cluster's as recorded in its status (the operator keeps the first one it saw). */
  readonly recorded: string | undefined;
  /** The Lease holder (another instance), and its system identifier as it reports it. */
  readonly holder?: {
    readonly name: string;
    readonly systemIdentifier: string | undefined;
    /** Its hold has run out: it may be gone for good, Pod and report too. */
    readonly expired?: boolean;
  };
  /** The timeline the leader history on the Lease names, when there is one. */
  readonly leaderTimeline: number | undefined;
  readonly leaseExists: boolean;
  readonly mode: Bootstrap;
}

export type VolumeCheck =
  /** Use PGDATA as it is. */
  | { readonly action: 'use'; readonly message: string }
  /** Another cluster's data: set it aside and clone the primary instead. */
  | { readonly action: 'reclone'; readonly message: string }
  /** The cluster's identity is not known yet: look again shortly, postgres stays down. */
  | { readonly action: 'wait'; readonly message: string };

/**
 * @example
 * ```ts
 * planVolumeCheck({ own: { systemIdentifier: '7', timeline: 1 }, recorded: '9', leaderTimeline: 1, leaseExists: true, mode: 'basebackup' });
 * // { action: 'reclone', message: 'system identifier 7 is not the cluster's (9, from its status): …' }
 * ```
 */
export function planVolumeCheck(input: VolumeCheckInput): VolumeCheck {
  const { own } = input;
  // Waiting for an expired holder's report could outlast the failover this instance may have to
  // take part in.
  const holder = input.holder?.expired ? undefined : input.holder;
  // A restore replaces PGDATA with the backup's, whatever it holds now.
  if (input.mode === 'restore') return { action: 'use', message: 'a restore replaces this data directory' };
  const known = input.recorded
    ? { id: input.recorded, from: 'its status' }
    : holder?.systemIdentifier
      ? { id: holder.systemIdentifier, from: `the primary ${holder.name}` }
      : undefined;
  if (!known) {
    // A new cluster's first instance creates the Lease after initdb: until then only it has data of its own.
    if (!input.leaseExists && input.mode === 'initdb')
      return { action: 'use', message: 'the cluster has no identity yet and this is its first instance' };
    // The Lease exists but nobody leads and nothing was recorded (a cluster stopped as a whole
    // before its status was written): waiting could wait forever, and there is nothing to compare.
    if (input.leaseExists && !holder)
      return {
        action: 'use',
        message: `the cluster's system identifier is not recorded and no primary runs: nothing to compare system identifier ${own.systemIdentifier} with`,
      };
    return {
      action: 'wait',
      message: `waiting for the cluster's system identifier (its status or its primary's report) to check this data directory (system identifier ${own.systemIdentifier})`,
    };
  }
  if (own.systemIdentifier !== known.id)
    return {
      action: 'reclone',
      message: `system identifier ${own.systemIdentifier} is not the cluster's (${known.id}, from ${known.from}): this data directory belongs to another cluster; it is set aside and the primary cloned instead`,
    };
  const leader = input.leaderTimeline;
  const timeline =
    leader === undefined
      ? `timeline ${own.timeline}`
      : own.timeline < leader
        ? `timeline ${own.timeline}, behind the leader's ${leader}: it follows (pg_rewind if its history diverged) and may not lead`
        : `timeline ${own.timeline} (the leader's: ${leader})`;
  return {
    action: 'use',
    message: `system identifier ${own.systemIdentifier} is the cluster's (from ${known.from}); ${timeline}`,
  };
}
