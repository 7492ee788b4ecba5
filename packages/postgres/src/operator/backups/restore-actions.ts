/**
 * Carries out one step of an in-place restore (backups/restore-plan.ts): fence, clear the Lease
 * and the volumes that will re-clone, create the restoring instance. Every action is idempotent.
 */
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ENV, names, readPodReport } from '../../contract/index.js';
import { dataVolumeClaim } from '../builders/data-volume-claim.js';
import { instancePod } from '../builders/instance-pod.js';
import { withTemplateHash } from '../rollout/pod-template-hash.js';
import type { StepOutcome } from '../step-outcome.js';
import { planRestore, type RestorePlan, type RestorePod } from './restore-plan.js';

export interface KeptInstance {
  readonly name: string;
  readonly set: string;
  readonly setIndex: number;
}

/** What the restore planner needs of a Pod. */
export function restorePod(pod: Pod): RestorePod {
  const env = pod.spec?.containers?.[0]?.env ?? [];
  return {
    name: pod.metadata?.name ?? '',
    deleting: Boolean(pod.metadata?.deletionTimestamp),
    restoreId: env.find((e) => e.name === ENV.restoreId)?.value,
    report: readPodReport(pod)?.restore,
  };
}

/** How soon a restore in progress looks again: it moves on as Pods go and reports arrive, but not only then. */
const RESTORE_RECHECK_MS = 2_000;

/**
 * Plans and performs this reconcile's step of an in-place restore; resolves the plan, with the
 * restore's status and, while it runs, a look again soon.
 *
 * @example
 * ```ts
 * const restore = await reconcileRestore(cluster, ctx, instancePods, plan.keep);
 * const ownsInstances = restore.plan.active; // until the restore is done
 * ```
 */
export async function reconcileRestore(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  pods: readonly Pod[],
  instances: readonly KeptInstance[],
): Promise<StepOutcome & { readonly plan: RestorePlan }> {
  const namespace = cluster.metadata?.namespace;
  const plan = planRestore({
    cluster,
    pods: pods.map(restorePod),
    instances: instances.map((i) => i.name),
    now: new Date(),
  });
  if (plan.event) await ctx.event(plan.event.type, plan.event.reason, plan.event.note);
  for (const name of plan.deletePods) {
    ctx.log.info({ instance: name }, 'restore: stopping the instance');
    await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name, namespace });
  }
  const kept = plan.createPod ? instances.find((i) => i.name === plan.createPod?.instance) : undefined;
  if (plan.clearOthers) {
    // Nothing runs now: no holder can be left on the Lease, and the others clone the result.
    await ctx.delete({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      name: names.leaderLease(cluster.metadata?.name ?? ''),
      namespace,
    });
    for (const other of instances) {
      if (other.name === plan.createPod?.instance) continue;
      await ctx.delete({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: names.pvc(other.name), namespace });
    }
  }
  if (plan.createPod && kept) {
    const claim = dataVolumeClaim(cluster, kept.name, kept.set, kept.setIndex);
    if (!ctx.get('v1', 'PersistentVolumeClaim', claim.metadata?.name ?? '', namespace)) await ctx.create(claim);
    ctx.log.info(
      { instance: kept.name, restore: plan.createPod.source.id },
      'restore: starting the restoring instance',
    );
    await ctx.create(
      withTemplateHash(
        instancePod({ cluster, ...kept, bootstrap: 'restore', restoreId: plan.createPod.source.id }),
        cluster,
        kept,
      ) as Pod & KubeObject,
    );
  }
  return {
    plan,
    ...(plan.active && !plan.status?.finished ? { requeueAfterMs: RESTORE_RECHECK_MS } : {}),
    ...(plan.status ? { status: { pgbackrest: { restore: plan.status } } } : {}),
  };
}
