/** How a new leadership starts postgres as primary. Pure. */

export interface LeadershipStartInput {
  /** postgres runs already (a standby taking over), rather than being started from stopped. */
  readonly postgresRunning: boolean;
  /** synchronous_standby_names as the files on disk say (undefined before the first write). */
  readonly writtenSynchronousStandbyNames: string | undefined;
  /** The value this leadership starts with. */
  readonly synchronousStandbyNames: string;
}

export interface LeadershipStart {
  /**
   * Promote before rewriting the files: a running standby whose synchronous_standby_names is
   * already right (asynchronous mode: none; synchronous mode: a following replica carries the
   * value a failover starts with) promotes first; the only other change,
   * primary_conninfo, is ignored by a primary, so the writes' fsyncs and the reload are off the
   * path to writable. Otherwise the setting must be live before the first commit, or that commit
   * would be acknowledged without its synchronous standby.
   */
  readonly promoteFirst: boolean;
}

/**
 * @example
 * ```ts
 * planLeadershipStart({ postgresRunning: true, writtenSynchronousStandbyNames: '', synchronousStandbyNames: '' });
 * // { promoteFirst: true }
 * ```
 */
export function planLeadershipStart(input: LeadershipStartInput): LeadershipStart {
  return {
    promoteFirst: input.postgresRunning && input.writtenSynchronousStandbyNames === input.synchronousStandbyNames,
  };
}
