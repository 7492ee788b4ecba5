/**
 * Backup schedules: which `repos[].schedules` are due, and when to look next. Pure (croner parses
 * the cron expressions; the clock is an argument).
 *
 * Like a CronJob with `concurrencyPolicy: Forbid` and no catch-up: a schedule missed while the
 * operator was away runs once, not once per missed time.
 */
import { Cron } from 'croner';

/** pgBackRest's type for each schedule key. */
export const SCHEDULE_TYPES = { full: 'full', differential: 'diff', incremental: 'incr' } as const;
export type ScheduleKey = keyof typeof SCHEDULE_TYPES;

export interface ScheduleSpec {
  readonly repo: string;
  readonly key: ScheduleKey;
  readonly cron: string;
}

export interface DueSchedule extends ScheduleSpec {
  /** The scheduled time that is due (the latest one not after now). */
  readonly at: Date;
}

/** Every schedule the repos declare. */
export function declaredSchedules(
  repos: readonly { name: string; schedules?: Partial<Record<ScheduleKey, string>> }[],
): ScheduleSpec[] {
  return repos.flatMap((repo) =>
    (Object.keys(SCHEDULE_TYPES) as ScheduleKey[]).flatMap((key) => {
      const cron = repo.schedules?.[key];
      return cron ? [{ repo: repo.name, key, cron }] : [];
    }),
  );
}

/** The first run of `cron` strictly after `after`; undefined for a schedule that never runs again. */
export function nextRun(cron: string, after: Date): Date | undefined {
  return new Cron(cron, { timezone: 'UTC', paused: true }).nextRun(after) ?? undefined;
}

/**
 * The latest run of `schedule` in `(since, now]`, if any.
 *
 * @example
 * ```ts
 * latestDue('* * * * *', new Date('2026-12-01T10:00:30Z'), new Date('2026-12-01T10:02:10Z'));
 * // 2026-12-01T10:02:00Z
 * ```
 */
export function latestDue(cron: string, since: Date, now: Date): Date | undefined {
  let due: Date | undefined;
  let cursor = nextRun(cron, since);
  // Bounded: a schedule every minute missed for a week is 10 080 steps, still cheap.
  for (let steps = 0; cursor && cursor.getTime() <= now.getTime() && steps < 20_000; steps++) {
    due = cursor;
    cursor = nextRun(cron, cursor);
  }
  return due;
}
