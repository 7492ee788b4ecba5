/**
 * A condition that is present only while something is wrong (`ForeignObjects`,
 * `SecretsRefused`): True with what is wrong, a Warning Event whenever that changes, and gone once
 * it is fixed.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { type ConditionChange, removeCondition } from './step-outcome.js';

export interface Problem {
  readonly reason: string;
  readonly message: string;
  /** The Warning Event's reason. */
  readonly eventReason: string;
}

/**
 * Condition `type` for `problem`, or its removal when there is none; a Warning Event when what
 * it says changed since the status the cluster has.
 *
 * @example
 * ```ts
 * const change = await reportProblem(cluster, ctx, 'SecretsRefused', refused.length ? { reason: 'SecretNotAllowed', message, eventReason: 'SecretRefused' } : undefined);
 * ```
 */
export async function reportProblem(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'event'>,
  type: string,
  problem: Problem | undefined,
): Promise<ConditionChange> {
  if (!problem) return removeCondition(type);
  const previous = cluster.status?.conditions?.find((c) => c.type === type);
  if (previous?.message !== problem.message) await ctx.event('Warning', problem.eventReason, problem.message);
  return {
    type,
    status: 'True',
    reason: problem.reason,
    message: problem.message,
    observedGeneration: cluster.metadata?.generation,
  };
}
