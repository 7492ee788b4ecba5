/**
 * The leader's history on the Lease (Patroni keeps the leader's optime in its DCS for the same
 * reason): the timeline the primary writes on, and its last known WAL position. A failover writes
 * the timeline its promotion starts in the same write that takes the Lease, and the primary keeps
 * it current. An instance whose own timeline is behind it lacks writes a newer primary
 * acknowledged: it must never lead from that data, only follow (rewinding first).
 */
import { GROUP } from './names.js';

/** Lease annotation: JSON {@link LeaderHistory}. */
export const LEADER_HISTORY_ANNOTATION = `${GROUP}/leader-history`;

export interface LeaderHistory {
  /** The timeline the primary writes on (or, written by a failover, will write on once promoted). */
  readonly timeline: number;
  /** The primary's last known WAL position (`pg_current_wal_lsn()`), when known. */
  readonly lsn?: string;
  /** Who recorded it. */
  readonly holder: string;
}

/** The history on a Lease's annotations; undefined when absent or malformed. */
export function readLeaderHistory(
  annotations: Readonly<Record<string, string>> | undefined,
): LeaderHistory | undefined {
  const raw = annotations?.[LEADER_HISTORY_ANNOTATION];
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(raw) as Partial<LeaderHistory>;
    if (!Number.isInteger(parsed.timeline) || (parsed.timeline ?? 0) < 1 || typeof parsed.holder !== 'string')
      return undefined;
    return {
      timeline: parsed.timeline as number,
      holder: parsed.holder,
      ...(typeof parsed.lsn === 'string' ? { lsn: parsed.lsn } : {}),
    };
  } catch {
    return undefined;
  }
}

/** The annotation value for `history`. */
export function encodeLeaderHistory(history: LeaderHistory): string {
  return JSON.stringify(history);
}

/**
 * Why an instance on `ownTimeline` must not take the Lease, or undefined when it may. A Lease
 * without history (a cluster from before it was recorded) lets anyone lead, as before.
 *
 * @example
 * ```ts
 * leadRefusal({ timeline: 3, holder: 'db-1' }, 2);
 * // 'this instance is on timeline 2, behind the leader's timeline 3 (recorded by db-1): …'
 * leadRefusal({ timeline: 3, holder: 'db-1' }, 3); // undefined
 * ```
 */
export function leadRefusal(recorded: LeaderHistory | undefined, ownTimeline: number): string | undefined {
  if (!recorded || ownTimeline >= recorded.timeline) return undefined;
  return `this instance is on timeline ${ownTimeline}, behind the leader's timeline ${recorded.timeline} (recorded by ${recorded.holder}${recorded.lsn ? ` at ${recorded.lsn}` : ''}): its data lacks what a newer primary wrote, so it must follow, not lead`;
}
