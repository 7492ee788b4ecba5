/**
 * When a primary whose postgres cannot run on a full data volume gives up the leader Lease. Pure.
 *
 * Why: postgres PANICs when it cannot write WAL, and its crash recovery fails the same way, so it
 * cannot start again until the volume has room. The keeper restarts it each time and the agent
 * itself is healthy, so the Lease stayed: only the kubelet's liveness probe (6 × 10 s, reset when
 * a probe meets a restart attempt) moved it, 56 and 127 s after DiskFull in test/disk-full.
 * Stepping down needs a replica that can take over: one that answers the peer API as a candidate
 * (a standby in recovery, not rejoining or cloning; not "ready", which needs a stream from this
 * primary) and whose own volume is not full. With none, giving the Lease up helps nobody, and a
 * full volume on every instance would only pass the Lease around.
 */

/** postgres has not answered for this long (several of the keeper's restart attempts). */
export const STEP_DOWN_AFTER_MS = 10_000;

export interface StepDownInput {
  /** How long postgres has not answered, in ms (0 while it answers). */
  readonly downForMs: number;
  /** Why the data volume is full (plan/disk-full-plan.ts), or undefined. */
  readonly diskFull: string | undefined;
  /**
   * The other instances: whether each answered the peer API as a failover candidate just now, and
   * why its own volume is full (its report), if it is.
   */
  readonly others: readonly { readonly name: string; readonly candidate: boolean; readonly diskFull?: string }[];
}

export type StepDown =
  | { readonly stepDown: true; readonly why: string }
  | { readonly stepDown: false; readonly waiting?: string };

/**
 * @example
 * ```ts
 * planStepDown({ downForMs: 12_000, diskFull: 'the data volume is full: 0.1 MiB free of 128.0 MiB',
 *   others: [{ name: 'db-b-0', candidate: true }] });
 * // { stepDown: true, why: 'postgres has not run for 12 s (the data volume is full: …); db-b-0 can take over' }
 * ```
 */
export function planStepDown(input: StepDownInput): StepDown {
  if (input.diskFull === undefined || input.downForMs < STEP_DOWN_AFTER_MS) return { stepDown: false };
  const down = `postgres has not run for ${Math.round(input.downForMs / 1000)} s (${input.diskFull})`;
  const able = input.others.filter((o) => o.candidate && !o.diskFull);
  if (able.length === 0) return { stepDown: false, waiting: `${down}; no replica with room can take over` };
  return { stepDown: true, why: `${down}; ${able.map((o) => o.name).join(', ')} can take over` };
}
