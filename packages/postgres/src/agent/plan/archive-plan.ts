/**
 * Who may write into the repo, and when the archive counts as failing. Pure.
 *
 * Only the instance that leads the cluster now may push WAL: a fenced or former primary (one that
 * booted from stale data, or lost the Lease mid-push) is refused, and postgres keeps the segment.
 */
import type { ArchivePermit } from '../pgbackrest-archive-push.js';

export interface ArchivePermitInput {
  /** The agent has decoded the cluster spec at least once. */
  readonly specKnown: boolean;
  /** At least one repo is declared (usable or not: an unusable one keeps WAL waiting). */
  readonly archiving: boolean;
  readonly leading: boolean;
  /** The stanza exists for the repo options now written (stanza-create succeeded). */
  readonly stanzaReady: boolean;
  readonly bin: string;
  readonly args: readonly string[] | undefined;
}

/**
 * @example
 * ```ts
 * decideArchivePermit({ specKnown: true, archiving: true, leading: false, stanzaReady: true, bin: 'pgbackrest', args: [] });
 * // { action: 'refuse', reason: 'this instance does not lead the cluster (no leader Lease)' }
 * ```
 */
export function decideArchivePermit(input: ArchivePermitInput): ArchivePermit {
  if (!input.specKnown) return { action: 'refuse', reason: 'the agent has not read the cluster spec yet' };
  // No repo: archiving is off, as with archive_mode=off (the mode itself needs a restart to change).
  if (!input.archiving) return { action: 'skip', reason: 'no pgBackRest repo is declared' };
  if (!input.leading) return { action: 'refuse', reason: 'this instance does not lead the cluster (no leader Lease)' };
  if (!input.args) return { action: 'refuse', reason: 'no usable repo (see the WALArchiving condition)' };
  if (!input.stanzaReady)
    return { action: 'refuse', reason: 'the stanza is not created (see the WALArchiving condition)' };
  return { action: 'push', bin: input.bin, args: input.args };
}
