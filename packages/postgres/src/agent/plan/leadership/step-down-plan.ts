/**
 * What a primary does when its data volume is full. Pure.
 *
 * - postgres has stopped answering: it PANICs when it cannot create a WAL segment, and its crash
 *   recovery fails the same way, so it cannot start again until the volume has room. The keeper
 *   restarts it each time and the agent itself is healthy, so the Lease stayed: only the
 *   kubelet's liveness probe (6 × 10 s, reset when a probe meets a restart attempt) moved it, 56
 *   and 127 s after DiskFull in test/disk-full. It releases the Lease (there is nothing left to
 *   shut down cleanly), and the replicas rank as after any failure.
 * - postgres still answers but refuses every write that needs new space ("could not extend
 *   file"): no write was acknowledged for the whole 60 s fault window of bench:failures row 7. It
 *   switches over, cleanly, to the best replica with room: the shutdown checkpoint reaches it
 *   before the Lease does, so no acknowledged commit is left behind.
 *
 * Either needs another instance that can take over: one that answers the peer API as a candidate
 * (a standby in recovery, not rejoining or cloning; not "ready", which needs a stream from this
 * primary) and whose own volume is not full. With none, giving the Lease up helps nobody, and a
 * full volume on every instance would only pass the Lease around.
 */

/** postgres has not answered, or the volume has counted as full, for this long. */
export const STEP_DOWN_AFTER_MS = 10_000;

export interface StepDownInput {
  /** How long postgres has not answered, in ms (0 while it answers). */
  readonly downForMs: number;
  /** How long the volume has counted as full without a break, in ms (0 while it does not). */
  readonly fullForMs: number;
  /** Why the data volume is full (plan/disk-full-plan.ts), or undefined. */
  readonly diskFull: string | undefined;
  /**
   * The other instances: whether each answered the peer API as a failover candidate just now, and
   * why its own volume is full (its report), if it is.
   */
  readonly others: readonly { readonly name: string; readonly candidate: boolean; readonly diskFull?: string }[];
}

export type StepDown =
  /** postgres cannot run: give the Lease up. */
  | { readonly action: 'release'; readonly why: string }
  /** postgres runs but cannot write: switch over to the best of `to`. */
  | { readonly action: 'switch-over'; readonly to: readonly string[]; readonly why: string }
  | { readonly action: 'stay'; readonly waiting?: string };

/** Whether the rest holds long enough to ask the peers (an I/O step the pure rule needs). */
export function stepDownDue(input: Pick<StepDownInput, 'downForMs' | 'fullForMs' | 'diskFull'>): boolean {
  return (
    input.diskFull !== undefined &&
    (input.downForMs >= STEP_DOWN_AFTER_MS || (input.downForMs === 0 && input.fullForMs >= STEP_DOWN_AFTER_MS))
  );
}

/**
 * @example
 * ```ts
 * planStepDown({ downForMs: 12_000, fullForMs: 12_000, diskFull: 'the data volume is full: 0.1 MiB free of 128.0 MiB',
 *   others: [{ name: 'db-b-0', candidate: true }] });
 * // { action: 'release', why: 'postgres has not run for 12 s (the data volume is full: …); db-b-0 can take over' }
 * ```
 */
export function planStepDown(input: StepDownInput): StepDown {
  if (!stepDownDue(input) || input.diskFull === undefined) return { action: 'stay' };
  const down = input.downForMs > 0;
  const what = down
    ? `postgres has not run for ${Math.round(input.downForMs / 1000)} s (${input.diskFull})`
    : `postgres runs on a volume full for ${Math.round(input.fullForMs / 1000)} s (${input.diskFull})`;
  const able = input.others.filter((o) => o.candidate && !o.diskFull).map((o) => o.name);
  if (able.length === 0) return { action: 'stay', waiting: `${what}; no replica with room can take over` };
  const why = `${what}; ${able.join(', ')} can take over`;
  return down ? { action: 'release', why } : { action: 'switch-over', to: able, why };
}
