/**
 * The PGUpgrade controller (pg-upgrade-plan.ts): asks the named cluster for the upgrade once it
 * allows it, and mirrors the cluster's `status.majorUpgrade` into PGO's conditions. The cluster's
 * controller does the upgrade itself.
 */
import { controller, type KubeObject, setCondition } from '@kanri/runtime';
import type { PGUpgrade } from '../../api/pg-upgrade.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ANNOTATION, API_VERSION, KIND, PGO_ALLOW_UPGRADE, PGUPGRADE_KIND } from '../../contract/index.js';
import { planPgUpgrade } from './pg-upgrade-plan.js';

/** A cluster's change wakes the PGUpgrade its annotation names. */
function upgradeOf(cluster: KubeObject) {
  const annotations = cluster.metadata?.annotations ?? {};
  const name = annotations[ANNOTATION.allowUpgrade] ?? annotations[PGO_ALLOW_UPGRADE];
  return name ? [{ namespace: cluster.metadata?.namespace, name }] : [];
}

export const pgUpgradeController = controller<PGUpgrade>(API_VERSION, PGUPGRADE_KIND)
  .watches(API_VERSION, KIND, upgradeOf)
  .reconcile(async (upgrade, ctx) => {
    const namespace = upgrade.metadata?.namespace;
    const clusterName = upgrade.spec.postgresClusterName;
    const cluster = ctx.get<PostgresCluster & KubeObject>(API_VERSION, KIND, clusterName, namespace);
    const annotations = cluster?.metadata?.annotations ?? {};
    const running = cluster?.status?.postgresVersion;
    const plan = planPgUpgrade({
      name: upgrade.metadata?.name ?? '',
      spec: upgrade.spec,
      cluster: cluster && {
        allowedUpgrade: annotations[ANNOTATION.allowUpgrade] ?? annotations[PGO_ALLOW_UPGRADE],
        shutdown: cluster.spec.shutdown === true,
        running: running ? Number.parseInt(running, 10) : undefined,
        majorUpgrade: cluster.status?.majorUpgrade,
      },
    });
    if (plan.request) {
      ctx.log.info(
        { cluster: clusterName, to: plan.request.postgresVersion },
        'PGUpgrade: asking the cluster for the upgrade',
      );
      await ctx.client.resource(API_VERSION, KIND).patch(
        clusterName,
        {
          metadata: { annotations: { [ANNOTATION.allowMajorUpgrade]: String(plan.request.postgresVersion) } },
          spec: {
            postgresVersion: plan.request.postgresVersion,
            ...(plan.request.image ? { image: plan.request.image } : {}),
          },
        },
        { namespace, type: 'merge', signal: ctx.signal },
      );
      await ctx.event(
        'Normal',
        'PGUpgradeProgressing',
        `asked PostgresCluster ${clusterName} to upgrade to ${plan.request.postgresVersion}`,
      );
    }
    let conditions = upgrade.status?.conditions ?? [];
    for (const c of plan.conditions)
      conditions = setCondition(conditions, { ...c, observedGeneration: upgrade.metadata?.generation });
    await ctx.setStatus({ observedGeneration: upgrade.metadata?.generation, conditions });
    // Cluster changes wake it; the requeue covers a cluster that does not exist yet.
    return plan.finished ? undefined : { requeueAfter: 30_000 };
  });
