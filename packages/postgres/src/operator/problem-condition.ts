/**
 * A condition that is present only while something is wrong (`ForeignObjects`,
 * `SecretsRefused`): True with what is wrong, a Warning Event whenever that changes, and gone once
 * it is fixed.
 */
import { type ReconcileContext, setCondition } from '@kanri/runtime';
import type { PostgresCluster, PostgresClusterStatus } from '../api/postgres-cluster.js';

export interface Problem {
  readonly reason: string;
  readonly message: string;
  /** The Warning Event's reason. */
  readonly eventReason: string;
}

/**
 * Sets condition `type` in `status` for `problem`, or removes it when there is none.
 *
 * @example
 * ```ts
 * await reportProblem(cluster, ctx, status, 'SecretsRefused', refused.length ? { reason: 'SecretNotAllowed', message, eventReason: 'SecretRefused' } : undefined);
 * ```
 */
export async function reportProblem(
  cluster: PostgresCluster,
  ctx: Pick<ReconcileContext<PostgresCluster>, 'event'>,
  status: PostgresClusterStatus,
  type: string,
  problem: Problem | undefined,
): Promise<void> {
  const conditions = status.conditions ?? [];
  if (!problem) {
    status.conditions = conditions.filter((c) => c.type !== type);
    return;
  }
  const previous = cluster.status?.conditions?.find((c) => c.type === type);
  if (previous?.message !== problem.message) await ctx.event('Warning', problem.eventReason, problem.message);
  status.conditions = setCondition(conditions, {
    type,
    status: 'True',
    reason: problem.reason,
    message: problem.message,
    observedGeneration: cluster.metadata?.generation,
  });
}
