/**
 * The operator's side of backups at each reconcile: the PostgresBackups that are due are created,
 * those whose instance stopped heartbeating fail, and the primary's report of its repos and
 * archive is folded into the cluster's status. What to do is decided by backup-plan.ts.
 */
import type { ReconcileContext } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresBackup } from '../../api/postgres-backup.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { API_VERSION, BACKUP_KIND, LABEL, readPodReport } from '../../contract/index.js';
import { removeCondition, type StepOutcome } from '../step-outcome.js';
import { planBackups } from './backup-plan.js';

/**
 * Creates the PostgresBackups that are due, fails those whose instance stopped heartbeating, and
 * resolves the primary's report of its repos and archive as status (see backups/backup-plan.ts),
 * the `WALArchiving` condition, and when the next schedule is due.
 *
 * @example
 * ```ts
 * outcomes.push(await reconcileBackups(cluster, ctx, observed.primary, pods));
 * ```
 */
export async function reconcileBackups(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  primary: string | undefined,
  pods: readonly Pod[],
): Promise<StepOutcome> {
  // Users may create PostgresBackups themselves (naming the cluster in spec.cluster): the label
  // lets the primary's agent, which selects by it, see them too.
  const records = ctx
    .list<PostgresBackup>(API_VERSION, BACKUP_KIND, { namespace: cluster.metadata?.namespace })
    .filter((r) => r.spec?.cluster === cluster.metadata?.name);
  for (const r of records) {
    if (r.metadata?.labels?.[LABEL.cluster] !== cluster.metadata?.name)
      await ctx.applyMetadata(r, { labels: { [LABEL.cluster]: cluster.metadata?.name ?? '' } });
  }
  const primaryPod = pods.find((p) => p.metadata?.name === primary);
  const plan = planBackups({
    cluster,
    records,
    primaryBackups: primaryPod ? readPodReport(primaryPod)?.backups : undefined,
    now: new Date(),
  });
  for (const record of plan.create) {
    ctx.log.info({ backup: record.metadata?.name, trigger: record.spec.trigger }, 'creating PostgresBackup');
    if (await ctx.create(record))
      await ctx.event(
        'Normal',
        'BackupRequested',
        `${record.spec.type} backup ${record.metadata?.name} to ${record.spec.repoName} (${record.spec.trigger})`,
      );
  }
  if (plan.refused) await ctx.event('Warning', 'BackupRefused', plan.refused);
  for (const { name, message } of plan.fail) {
    await ctx.client
      .resource(API_VERSION, BACKUP_KIND)
      .patchStatus(
        name,
        { status: { phase: 'Failed', reason: 'InstanceLost', message, completedAt: new Date().toISOString() } },
        { namespace: cluster.metadata?.namespace, type: 'merge', signal: ctx.signal },
      );
    await ctx.event('Warning', 'BackupFailed', `backup ${name} failed: ${message}`);
  }
  return {
    status: plan.status,
    conditions: [
      plan.condition
        ? { ...plan.condition, observedGeneration: cluster.metadata?.generation }
        : removeCondition('WALArchiving'),
    ],
    ...(plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : {}),
  };
}
