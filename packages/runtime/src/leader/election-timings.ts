import { sleepUnlessAborted } from '@kanri/timing';

/**
 * The timing rules of leader election, in one place: client-go's defaults and checks. Pure. A
 * leader must step down (renew deadline) before anyone else may take over (lease duration), and
 * must get more than one try at renewing within its deadline.
 */

/** client-go's JitterFactor: candidates poll every retryPeriod × [1, 2.2). */
export const JITTER_FACTOR = 1.2;

export interface ElectionTimings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

export const DEFAULT_ELECTION_TIMINGS: ElectionTimings = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/**
 * What is wrong with these timings; empty when the elector accepts them.
 *
 * @example
 * ```ts
 * electionTimingProblems({ leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 }); // []
 * ```
 */
export function electionTimingProblems(timings: ElectionTimings): string[] {
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = timings;
  const problems: string[] = [];
  if (!(leaseDurationMs >= 1_000)) problems.push(`leaseDurationMs must be at least 1000, not ${leaseDurationMs}`);
  if (!(renewDeadlineMs < leaseDurationMs))
    problems.push(`renewDeadlineMs (${renewDeadlineMs}) must be less than leaseDurationMs (${leaseDurationMs})`);
  if (!(retryPeriodMs > 0 && JITTER_FACTOR * retryPeriodMs < renewDeadlineMs))
    problems.push(
      `renewDeadlineMs (${renewDeadlineMs}) must exceed ${JITTER_FACTOR} × retryPeriodMs (${retryPeriodMs})`,
    );
  return problems;
}

/** A delay of `ms` stretched by up to JITTER_FACTOR, so candidates do not poll in step. */
export function jittered(ms: number, random: () => number = Math.random): number {
  return ms + random() * JITTER_FACTOR * ms;
}

/** Waits for `promise` (which must not reject) for at most `ms`, leaving no timer behind. */
export async function settledWithin(promise: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return;
  const timer = new AbortController();
  try {
    await Promise.race([promise, sleepUnlessAborted(ms, timer.signal)]);
  } finally {
    timer.abort();
  }
}
