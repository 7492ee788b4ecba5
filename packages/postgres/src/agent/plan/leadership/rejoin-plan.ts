/** What a former primary (or diverged replica) does next while rejoining, from the leader it sees. Pure. */

export interface RejoinInput {
  readonly self: string;
  readonly holder: string | undefined;
  readonly podIP: string | undefined;
  /** The holder reports itself ready: it can be rewound from. */
  readonly ready: boolean;
}

export type RejoinStep =
  | { readonly kind: 'lead' }
  | { readonly kind: 'rewind'; readonly holder: string; readonly podIP: string }
  | { readonly kind: 'wait' };

/**
 * @example
 * ```ts
 * planRejoin({ self: 'pg-0', holder: 'pg-1', podIP: '10.0.0.2', ready: true });
 * // { kind: 'rewind', holder: 'pg-1', podIP: '10.0.0.2' }
 * ```
 */
export function planRejoin(input: RejoinInput): RejoinStep {
  if (input.holder === input.self) return { kind: 'lead' };
  if (input.holder && input.podIP && input.ready) return { kind: 'rewind', holder: input.holder, podIP: input.podIP };
  return { kind: 'wait' };
}

/**
 * What pg_control and the WAL say of a primary's timeline: pg_rewind reads the source's timeline
 * from pg_control, which a promotion updates only at its next checkpoint, and would find no
 * divergence until then. The current WAL file's name starts with the timeline (8 hex digits);
 * pg_walfile_name refuses to run in recovery.
 */
export const CHECKPOINTED_TIMELINE_SQL = `
SELECT (SELECT timeline_id FROM pg_control_checkpoint()) AS checkpointed,
       CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_walfile_name(pg_current_wal_lsn()) END AS walfile`;

/** A row of {@link CHECKPOINTED_TIMELINE_SQL}. */
export interface CheckpointedTimelineRow {
  readonly checkpointed: number | string | null;
  readonly walfile: string | null;
}

/**
 * The timeline a primary writes on, and whether pg_control has it yet; undefined in recovery.
 *
 * @example
 * ```ts
 * checkpointedTimeline({ checkpointed: 1, walfile: '000000020000000000000003' }); // { timeline: 2, checkpointed: false }
 * ```
 */
export function checkpointedTimeline(
  row: CheckpointedTimelineRow | undefined,
): { readonly timeline: number; readonly checkpointed: boolean } | undefined {
  if (!row?.walfile) return undefined;
  const timeline = Number.parseInt(row.walfile.slice(0, 8), 16);
  return { timeline, checkpointed: Number(row.checkpointed) >= timeline };
}
