/**
 * Carries out one step of a major upgrade (major-upgrade-plan.ts): stop the instances, remove the
 * Lease, create the Pod that upgrades, remove the replicas' old volumes, ask for the first full
 * backup of the new cluster. Every action is idempotent.
 */
import type { KubeObject, ReconcileContext } from '@kanri/runtime';
import type { PersistentVolumeClaim, Pod } from 'kubernetes-types/core/v1.js';
import type { PostgresBackup } from '../../api/postgres-backup.js';
import type { PostgresCluster } from '../../api/postgres-cluster.js';
import { ANNOTATION, API_VERSION, BACKUP_KIND, ENV, LABEL, names, readPodReport } from '../../contract/index.js';
import type { KeptInstance } from '../backups/restore-actions.js';
import { instancePod } from '../builders/instance-pod.js';
import { containerFailure } from '../container-failure.js';
import { withTemplateHash } from '../rollout/pod-template-hash.js';
import type { StepOutcome } from '../step-outcome.js';
import { type BackupGate, backupGate } from './backup-gate.js';
import { type MajorUpgradePlan, planMajorUpgrade, RECENT_BACKUP_MS } from './major-upgrade-plan.js';

function upgradeFrom(pod: Pod): number | undefined {
  const value = pod.spec?.containers?.[0]?.env?.find((e) => e.name === ENV.majorUpgradeFrom)?.value;
  return value ? Number.parseInt(value, 10) : undefined;
}

/**
 * Whether a full backup of this cluster succeeded within RECENT_BACKUP_MS, as its PostgresBackup
 * says and the primary's report of pgBackRest's info confirms (backup-gate.ts).
 */
function recentFullBackup(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  primary: Pod | undefined,
  now: Date,
): BackupGate {
  const records = ctx
    .list<PostgresBackup>(API_VERSION, BACKUP_KIND, { namespace: cluster.metadata?.namespace })
    .filter((r) => r.spec?.cluster === cluster.metadata?.name);
  return backupGate({
    records,
    reported: readPodReport(primary)?.backups?.fullBackups,
    now,
    withinMs: RECENT_BACKUP_MS,
  });
}

/** How soon an upgrade in progress looks again, besides the Pod changes that wake the controller. */
const UPGRADE_RECHECK_MS = 2_000;

/**
 * Plans and performs this reconcile's step of a major upgrade; resolves the plan, with the
 * upgrade's status (and the upgraded cluster's system identifier) and, while it runs, a look
 * again soon.
 *
 * @example
 * ```ts
 * const upgrade = await reconcileMajorUpgrade(cluster, ctx, instancePods, claims, plan.keep);
 * const ownsInstances = upgrade.plan.active; // until the upgrade's downtime is over
 * ```
 */
export async function reconcileMajorUpgrade(
  cluster: PostgresCluster,
  ctx: ReconcileContext<PostgresCluster>,
  pods: readonly Pod[],
  claims: readonly PersistentVolumeClaim[],
  instances: readonly KeptInstance[],
): Promise<StepOutcome & { readonly plan: MajorUpgradePlan }> {
  const namespace = cluster.metadata?.namespace;
  const clusterName = cluster.metadata?.name ?? '';
  const now = new Date();
  const annotations = cluster.metadata?.annotations ?? {};
  const repos = cluster.spec.backups?.pgbackrest?.repos ?? [];
  const running = cluster.status?.postgresVersion;
  const primaryPod = pods.find((p) => p.metadata?.name === cluster.status?.primary);
  const gate = repos.length > 0 ? recentFullBackup(cluster, ctx, primaryPod, now) : undefined;
  const plan = planMajorUpgrade({
    wanted: cluster.spec.postgresVersion,
    allowed: annotations[ANNOTATION.allowMajorUpgrade],
    force: annotations[ANNOTATION.forceMajorUpgrade] === 'true',
    running: running ? Number.parseInt(running, 10) : undefined,
    previous: cluster.status?.majorUpgrade,
    primary: cluster.status?.primary ?? cluster.status?.lastPrimary,
    instances: instances.map((i) => i.name),
    pods: pods.map((p) => ({
      name: p.metadata?.name ?? '',
      deleting: Boolean(p.metadata?.deletionTimestamp),
      upgradeFrom: upgradeFrom(p),
      report: readPodReport(p),
      failure: containerFailure(p),
    })),
    claims: claims.flatMap((c) => {
      const instance = c.metadata?.labels?.[LABEL.instance];
      return instance
        ? [{ instance, createdAt: c.metadata?.creationTimestamp, deleting: Boolean(c.metadata?.deletionTimestamp) }]
        : [];
    }),
    backup: {
      required: repos.length > 0,
      recentFull: gate?.open === true,
      ...(gate && !gate.open ? { why: gate.why } : {}),
    },
    now,
  });
  if (plan.event) await ctx.event(plan.event.type, plan.event.reason, plan.event.note);
  for (const name of plan.deletePods) {
    ctx.log.info({ instance: name, phase: plan.status?.phase }, 'major upgrade: stopping the instance');
    await ctx.delete({ apiVersion: 'v1', kind: 'Pod', name, namespace });
  }
  if (plan.deleteLease)
    await ctx.delete({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      name: names.leaderLease(clusterName),
      namespace,
    });
  for (const instance of plan.deleteClaims) {
    ctx.log.info({ instance }, 'major upgrade: removing the old data of a replica, which re-clones');
    await ctx.delete({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: names.pvc(instance), namespace });
  }
  const kept = instances.find((i) => i.name === plan.createUpgradePod?.instance);
  if (plan.createUpgradePod && kept && !pods.some((p) => p.metadata?.name === kept.name)) {
    ctx.log.info(
      { instance: kept.name, from: plan.createUpgradePod.from },
      'major upgrade: starting the instance that upgrades',
    );
    await ctx.create(
      withTemplateHash(
        instancePod({ cluster, ...kept, bootstrap: 'basebackup', majorUpgradeFrom: plan.createUpgradePod.from }),
        cluster,
        kept,
      ) as Pod & KubeObject,
    );
  }
  if (plan.requestBackup && repos[0]) {
    const to = plan.status?.to ?? cluster.spec.postgresVersion;
    const record = {
      apiVersion: API_VERSION,
      kind: BACKUP_KIND,
      metadata: { name: `${clusterName}-upgrade-${to}`, namespace, labels: { [LABEL.cluster]: clusterName } },
      spec: { cluster: clusterName, repoName: repos[0].name, type: 'full', trigger: 'upgrade' },
    } satisfies PostgresBackup;
    if (await ctx.create(record))
      await ctx.event(
        'Normal',
        'BackupRequested',
        `full backup ${record.metadata.name} of PostgreSQL ${to} to ${repos[0].name} (upgrade)`,
      );
  }
  // Without news from the plan, the status shows what it showed.
  const majorUpgrade = plan.status ?? cluster.status?.majorUpgrade;
  return {
    plan,
    ...(plan.active ? { requeueAfterMs: UPGRADE_RECHECK_MS } : {}),
    status: {
      ...(majorUpgrade ? { majorUpgrade } : {}),
      ...(plan.systemIdentifier ? { systemIdentifier: plan.systemIdentifier } : {}),
    },
  };
}
