/**
 * The PostgresCluster controller: turns the spec into Secrets, configuration, RBAC for the
 * instances, Services, a PodDisruptionBudget, and one Pod and PVC per instance (and, with a
 * volume repo, the repo host: repo-host-actions.ts), then aggregates the agents' reports into
 * status. Every step is idempotent; a restart mid-way converges.
 *
 * The reconcile is a list of steps run in order; each hands back a StepOutcome
 * (step-outcome.ts), and the pass writes the status they fold into over what the agents report
 * (cluster-status.ts), and asks to look again at the earliest time one asked for.
 */
import { controller, generationChanged, type ReconcileContext, type ReconcileResult } from '@kanri/runtime';
import type { PostgresCluster } from '../api/postgres-cluster.js';
import { API_VERSION, BACKUP_KIND, KIND } from '../contract/index.js';
import { admissionGate } from './admission/policy-gate.js';
import { reconcileBackups } from './backups/backup-actions.js';
import { reconcileCloneSourcePolicy, reportDataSourceProblem, resolveClone } from './backups/clone-actions.js';
import { recordRepoPaths, resolveRepoPaths } from './backups/repo-grants.js';
import { reconcileRepoHost } from './backups/repo-host-actions.js';
import { reconcileRestore } from './backups/restore-actions.js';
import { cloneSourceWakeups } from './clone-wakeups.js';
import {
  applyClusterObjects,
  applyClusterSecrets,
  deleteRemovedUserSecrets,
  reportRecreated,
} from './cluster-objects-actions.js';
import { clusterStatus } from './cluster-status.js';
import { reportUnavailableImages } from './instances/image-availability-actions.js';
import { observeCluster, reconcileInstances, recreateStuckPods, scaleDown } from './instances/instance-actions.js';
import { instancePodPredicate } from './instances/pod-predicate.js';
import { reconcileVolumeResize } from './instances/volume-resize-actions.js';
import { guardOwnership, reportForeignObjects } from './ownership-guard.js';
import { announcePrimary } from './primary-change.js';
import { reconcileRollout } from './rollout/rollout-actions.js';
import { dataSourceRefusal } from './secret-consent.js';
import { reconcileSecretConsent, reportSecretConsent } from './secret-consent-actions.js';
import { combineOutcomes, reconcileResult, type StepOutcome, withOutcome } from './step-outcome.js';
import { reconcilePgoTrigger } from './switchover/pgo-trigger-actions.js';
import { reconcileSwitchover } from './switchover/switchover-actions.js';
import { reconcilePostgresTls } from './tls/postgres-tls.js';
import { reconcileMajorUpgrade } from './upgrade/major-upgrade-actions.js';
import { upgradeHoldsRollout } from './upgrade/major-upgrade-plan.js';

/**
 * Reports that change what the status shows arrive as Pod updates, which wake this controller;
 * this requeue only ages reports that stopped coming.
 */
const REPORTS_AGE_MS = 30_000;

/** A clone, and its Pods, wake its source too: the source grants them read access (clone-actions.ts). */
const cloneWakeups = cloneSourceWakeups();

type Context = ReconcileContext<PostgresCluster>;

/** A paused cluster is left as it is: nothing is written, not even its status. */
function paused(ctx: Context): StepOutcome {
  ctx.log.info('paused: no changes made');
  return { halt: 'paused' };
}

/** Ends a pass that a step halted: its status, if the halting step has any to show, and its requeue. */
async function halted(cluster: PostgresCluster, ctx: Context, outcome: StepOutcome): Promise<ReconcileResult> {
  if (outcome.conditions || outcome.status) await ctx.setStatus(withOutcome(cluster.status ?? {}, outcome));
  return reconcileResult(outcome);
}

export const postgresController = controller<PostgresCluster>(API_VERSION, KIND)
  // Agents rewrite their Pod's report every ~10 s; only changes to what the reconcile reads wake it.
  .owns('v1', 'Pod', instancePodPredicate())
  .watches('v1', 'Pod', cloneWakeups.pods, instancePodPredicate())
  .watches(API_VERSION, KIND, cloneWakeups.clusters, generationChanged())
  .owns('v1', 'PersistentVolumeClaim')
  .owns('v1', 'Service')
  .owns('v1', 'Secret')
  .owns('v1', 'ConfigMap')
  .owns('v1', 'ServiceAccount')
  .owns('rbac.authorization.k8s.io/v1', 'Role')
  .owns('rbac.authorization.k8s.io/v1', 'RoleBinding')
  .owns('policy/v1', 'PodDisruptionBudget')
  .owns('networking.k8s.io/v1', 'NetworkPolicy')
  // A backup's phase changes status.pgbackrest (and a finished one lets the next run).
  .owns(API_VERSION, BACKUP_KIND)
  .reconcile(async (declared, given) => {
    // Paused, or without its admission policies in force, nothing of a cluster is made (admission/policy-gate.ts).
    const gate = declared.spec.paused ? paused(given) : await admissionGate(declared, given);
    if (gate.halt) return halted(declared, given, gate);
    // In the order they ran; folded at the end, where the order of conditions is the order here.
    const outcomes: StepOutcome[] = [];
    const step = <T extends StepOutcome>(outcome: T): T => {
      outcomes.push(outcome);
      return outcome;
    };
    // Nothing another owner holds is used or written (ownership-guard.ts), and the Pods are built
    // from the spec with only the Secrets that let this cluster use them (secret-consent.ts).
    const { ctx, foreign } = guardOwnership(given, declared);
    const consent = await reconcileSecretConsent(declared, ctx);
    const cluster = consent.cluster;
    step(await applyClusterSecrets(cluster, ctx));
    const seen = observeCluster(cluster, ctx);
    const { pods, claims, instancePods, initialised, plan } = seen;
    const restore = step(await reconcileRestore(cluster, ctx, instancePods, plan.keep));
    const upgrade = step(await reconcileMajorUpgrade(cluster, ctx, instancePods, claims, plan.keep));
    const clone = step(cluster.spec.dataSource ? await resolveClone(cluster, ctx) : {});
    // A clone restores with the Secrets its data source names: not before each lets it (finding 11).
    const dataSourceProblem = clone.problem ?? dataSourceRefusal(consent.refused);
    // Where each repo keeps its stanza, recorded in status for the agents (issue 37, finding 12).
    const repoPaths = resolveRepoPaths(cluster, ctx);
    const source = restore.plan.source ?? clone.source;
    const objects = step(await applyClusterObjects(cluster, ctx, { initialised, source }));
    step(await reconcileCloneSourcePolicy(cluster, ctx, clone.source, initialised, instancePods));
    // Before the instances: an agent that finds the Secret at its start boots with TLS.
    const tls = step(await reconcilePostgresTls(cluster, ctx, instancePods));
    // On a new cluster nothing was there yet: only what an initialised one lost is news.
    const recreated = initialised ? [...objects.missing, ...(tls.missing ?? [])] : [];
    step(await reportRecreated(ctx, recreated));
    // After the RBAC: a Pod naming a ServiceAccount that does not exist yet is refused.
    step(await reconcileRepoHost(cluster, ctx, pods, claims));
    step(await reportDataSourceProblem(ctx, initialised, dataSourceProblem));
    step(await scaleDown(cluster, ctx, plan.remove));
    step(await recreateStuckPods(cluster, ctx, instancePods, claims));
    // An in-place restore or a major upgrade owns the instances until it is done.
    if (!restore.plan.active && !upgrade.plan.active) {
      const allowedSecrets = consent.allowed;
      const sources = { imageMajor: upgrade.plan.imageMajor, clone, dataSourceProblem, allowedSecrets };
      step(await reconcileInstances(cluster, ctx, seen, sources));
      // Online: no Pod restarts, so beside a rollout too.
      const kept = new Set(plan.keep.map((k) => k.name));
      step(await reconcileVolumeResize(cluster, ctx, claims, instancePods, kept));
    }

    const desired = cluster.spec.shutdown ? 0 : plan.keep.length;
    const observed = clusterStatus({
      cluster,
      pods: pods.filter((p) => plan.keep.some((k) => k.name === p.metadata?.name)),
      desired,
      converging: plan.remove.length > 0 || plan.keep.some((k) => !pods.some((p) => p.metadata?.name === k.name)),
      recreated,
    });
    step({ requeueAfterMs: REPORTS_AGE_MS });
    // Over the Ready and Progressing just computed: an image no node can get is the news.
    step(await reportUnavailableImages(cluster, ctx, pods, observed));
    const { primary } = observed;
    step(await deleteRemovedUserSecrets(cluster, ctx, instancePods, primary));
    // PGO's trigger annotation becomes a request the next pass serves (the patch wakes it).
    step(await reconcilePgoTrigger(cluster, ctx));
    const switchover = await reconcileSwitchover(cluster, observed, instancePods, ctx);
    step(switchover ? { status: { switchover } } : {});
    // Until the upgrade's downtime is over, the instances' Pods are the upgrade's, not the rollout's.
    // A refused Secret holds the rollout: replacing running Pods would take away what they mount.
    const upgradePhase = upgrade.status?.majorUpgrade?.phase;
    if (!restore.plan.active && !upgradeHoldsRollout(upgradePhase) && consent.refused.length === 0)
      step(await reconcileRollout(cluster, ctx, instancePods, plan.keep, primary));
    step(await announcePrimary(cluster, ctx, primary));
    // The gate's condition, here where it always stood among the conditions.
    step(gate);
    step(await reconcileBackups(cluster, ctx, primary, pods));
    step(recordRepoPaths(cluster, repoPaths, !initialised && clone.grantMissing ? clone.problem : undefined));
    step(await reportForeignObjects(cluster, ctx, foreign));
    step(await reportSecretConsent(cluster, ctx, consent.refused));

    const outcome = combineOutcomes(...outcomes);
    const status = withOutcome(observed, outcome);
    const wasReady = cluster.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    const isReady = status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    await ctx.setStatus(status);
    if (isReady && !wasReady)
      await ctx.event('Normal', 'Ready', `${desired} instances ready, primary ${status.primary}`);
    return reconcileResult(outcome);
  });
