/**
 * What one step of the PostgresCluster reconcile hands back, in one shape for every step, and how
 * the outcomes of a pass fold into the status it writes and the requeue it asks for. Pure.
 */
import {
  type Condition,
  type ConditionInput,
  type ReconcileResult,
  type SetCondition,
  setCondition,
} from '@kanri/runtime';
import type { PostgresClusterStatus } from '../api/postgres-cluster.js';

/** A condition to set, or (`remove`) one to drop: it stands only while what it reports holds. */
export type ConditionChange = ConditionInput | { readonly type: string; readonly remove: true };

/** Status fields a step sets; conditions go through {@link StepOutcome.conditions}. */
export type StatusPatch = Omit<PostgresClusterStatus, 'conditions'>;

/** One step's part of the reconcile. Every field is optional: a step with nothing to say returns `{}`. */
export interface StepOutcome {
  /** Look again no later than this; the earliest of a pass wins. */
  readonly requeueAfterMs?: number;
  /** Applied in order onto the status's conditions; for one type, the last change wins. */
  readonly conditions?: readonly ConditionChange[];
  /**
   * Fields of the status; a later step's field replaces an earlier one's (leave a field out to
   * keep it), except `pgbackrest`, which several steps fill part of and which merges one level.
   */
  readonly status?: StatusPatch;
  /**
   * Why the reconcile stops after this step: nothing after it runs. The pass writes the status
   * only when the halting outcome carries conditions or status fields.
   */
  readonly halt?: string;
}

/** A condition change that removes `type`. */
export const removeCondition = (type: string): ConditionChange => ({ type, remove: true });

function mergeStatus(into: StatusPatch | undefined, patch: StatusPatch | undefined): StatusPatch | undefined {
  if (!patch) return into;
  if (!into) return patch;
  const pgbackrest = into.pgbackrest && patch.pgbackrest ? { ...into.pgbackrest, ...patch.pgbackrest } : undefined;
  return { ...into, ...patch, ...(pgbackrest ? { pgbackrest } : {}) };
}

/**
 * The outcomes of a pass, in the order the steps ran, as one: the earliest requeue, the
 * condition changes in order (the last per type, where it came), the status fields merged, and
 * the first halt.
 *
 * @example
 * ```ts
 * combineOutcomes({ requeueAfterMs: 30_000 }, { requeueAfterMs: 2_000, status: { lastPrimary: 'a' } });
 * // { requeueAfterMs: 2_000, status: { lastPrimary: 'a' } }
 * ```
 */
export function combineOutcomes(...outcomes: readonly StepOutcome[]): StepOutcome {
  const requeues = outcomes.flatMap((o) => (o.requeueAfterMs === undefined ? [] : [o.requeueAfterMs]));
  const changes = outcomes.flatMap((o) => o.conditions ?? []);
  const conditions = changes.filter((c, i) => !changes.slice(i + 1).some((later) => later.type === c.type));
  const status = outcomes.reduce<StatusPatch | undefined>((into, o) => mergeStatus(into, o.status), undefined);
  const halt = outcomes.find((o) => o.halt !== undefined)?.halt;
  return {
    ...(requeues.length > 0 ? { requeueAfterMs: Math.min(...requeues) } : {}),
    ...(conditions.length > 0 ? { conditions } : {}),
    ...(status ? { status } : {}),
    ...(halt !== undefined ? { halt } : {}),
  };
}

/** `conditions` with each change applied in order (setCondition keeps a transition time that did not flip). */
export function applyConditions<C extends Condition>(
  conditions: readonly C[] | undefined,
  changes: readonly ConditionChange[] | undefined,
  now: Date = new Date(),
): (C | SetCondition)[] {
  let result: (C | SetCondition)[] = [...(conditions ?? [])];
  for (const change of changes ?? [])
    result = 'remove' in change ? result.filter((c) => c.type !== change.type) : setCondition(result, change, now);
  return result;
}

/**
 * `base` with the outcome's status fields and condition changes.
 *
 * @example
 * ```ts
 * await ctx.setStatus(withOutcome(observed, combineOutcomes(...outcomes)));
 * ```
 */
export function withOutcome(base: PostgresClusterStatus, outcome: StepOutcome): PostgresClusterStatus {
  return {
    ...mergeStatus(base, outcome.status),
    conditions: applyConditions(base.conditions, outcome.conditions),
  };
}

/** What the reconcile returns for `outcome`: its requeue, or nothing. */
export function reconcileResult(outcome: StepOutcome): ReconcileResult {
  return outcome.requeueAfterMs === undefined ? undefined : { requeueAfter: outcome.requeueAfterMs };
}
